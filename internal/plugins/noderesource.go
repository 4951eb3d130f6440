package plugins

import "github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"

// NodeResourceName is the config key of the free-resources score.
const NodeResourceName = "NodeResource"

// nodeResource prefers nodes with more free live CPU and memory: 50 points for an idle CPU,
// 50 for empty memory. It is the reference's intent (its formula collapsed to a sentinel).
type nodeResource struct{}

var _ scheduler.ScorePlugin = nodeResource{}

func newNodeResource(map[string]string) (scheduler.Plugin, error) { return nodeResource{}, nil }

func (nodeResource) Name() string { return NodeResourceName }

func (nodeResource) Score(_ *scheduler.CycleState, _ *scheduler.Request, n *scheduler.NodeInfo) float64 {
	cpu := n.CPU
	if cpu > 1 {
		cpu = 1
	}
	score := 50 * (1 - cpu)
	if n.Node.MaxMem > 0 && n.Mem < n.Node.MaxMem {
		score += 50 * (1 - float64(n.Mem)/float64(n.Node.MaxMem))
	}
	return score
}

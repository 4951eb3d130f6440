package plugins

import (
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/nodelabels"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// NodeAffinityName is the config key of the preferred node affinity score.
const NodeAffinityName = "NodeAffinity"

// nodeAffinity sums the weights of the preferred node_affinity blocks (weight 1..100) a node's
// labels match (all the expressions of one of a block's terms), normalised as kube-scheduler
// does: 100*sum/max over the feasible nodes, truncated to an integer (all 0 when no node
// matches any).
type nodeAffinity struct{}

var (
	_ scheduler.ScorePlugin     = nodeAffinity{}
	_ scheduler.ScoreNormalizer = nodeAffinity{}
)

func newNodeAffinity(map[string]string) (scheduler.Plugin, error) { return nodeAffinity{}, nil }

func (nodeAffinity) Name() string { return NodeAffinityName }

func (nodeAffinity) Score(_ *scheduler.CycleState, req *scheduler.Request, n *scheduler.NodeInfo) float64 {
	sum := 0
	for _, t := range req.NodeAffinity {
		if t.Weight > 0 && nodelabels.MatchAffinity(n.Node.Labels, t) {
			sum += t.Weight
		}
	}
	return float64(sum)
}

func (nodeAffinity) NormalizeScores(_ *scheduler.CycleState, _ *scheduler.Request, scores []scheduler.NodeScore) {
	normalizeToMax(scores, false)
}

package plugins

import "github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"

// LeastAllocatedName is the config key of the spreading score.
const LeastAllocatedName = "LeastAllocated"

// leastAllocated prefers the node with the most configured capacity left after the request,
// kube's NodeResourcesFit LeastAllocated: per resource (capacity - allocated) * 100 /
// capacity, 0 when over capacity, averaged by weight, each step truncated to an integer as
// kube's. Equal nodes fill evenly by size.
type leastAllocated struct{ w resourceWeights }

var _ scheduler.ScorePlugin = leastAllocated{}

func newLeastAllocated(args map[string]string) (scheduler.Plugin, error) {
	w, err := parseResourceWeights(args)
	return leastAllocated{w}, err
}

func (leastAllocated) Name() string { return LeastAllocatedName }

func (p leastAllocated) Score(_ *scheduler.CycleState, r *scheduler.Request, n *scheduler.NodeInfo) float64 {
	a := allocated(r, n)
	return p.w.average(leastRequested(a.cpu, a.cpuCap), leastRequested(a.mem, a.memCap))
}

func leastRequested(requested, capacity int64) int64 {
	if capacity <= 0 || requested > capacity {
		return 0
	}
	return (capacity - requested) * 100 / capacity
}

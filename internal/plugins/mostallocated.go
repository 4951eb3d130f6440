package plugins

import "github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"

// MostAllocatedName is the config key of the bin-packing score.
const MostAllocatedName = "MostAllocated"

// mostAllocated prefers the fullest node that still passes the filters, kube's
// NodeResourcesFit MostAllocated: per resource allocated * 100 / capacity (capped at 100),
// averaged by weight, each step truncated to an integer as kube's. It fills one node before
// the next, leaving whole nodes free.
type mostAllocated struct{ w resourceWeights }

var _ scheduler.ScorePlugin = mostAllocated{}

func newMostAllocated(args map[string]string) (scheduler.Plugin, error) {
	w, err := parseResourceWeights(args)
	return mostAllocated{w}, err
}

func (mostAllocated) Name() string { return MostAllocatedName }

func (p mostAllocated) Score(_ *scheduler.CycleState, r *scheduler.Request, n *scheduler.NodeInfo) float64 {
	a := allocated(r, n)
	return p.w.average(mostRequested(a.cpu, a.cpuCap), mostRequested(a.mem, a.memCap))
}

func mostRequested(requested, capacity int64) int64 {
	if capacity <= 0 {
		return 0
	}
	return min(requested, capacity) * 100 / capacity
}

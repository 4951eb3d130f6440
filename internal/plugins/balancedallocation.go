package plugins

import (
	"math"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// BalancedAllocationName is the config key of the cpu/memory balance score.
const BalancedAllocationName = "BalancedAllocation"

// balancedAllocation prefers the node whose configured cpu and memory would be allocated in
// the most equal fractions after the request, kube's NodeResourcesBalancedAllocation:
// (1 - std) * 100 truncated to an integer, where std of two fractions (each capped at 1) is
// |cpu - memory| / 2. It keeps nodes from running out of one resource while the other sits
// idle.
type balancedAllocation struct{}

var _ scheduler.ScorePlugin = balancedAllocation{}

func newBalancedAllocation(map[string]string) (scheduler.Plugin, error) {
	return balancedAllocation{}, nil
}

func (balancedAllocation) Name() string { return BalancedAllocationName }

func (balancedAllocation) Score(_ *scheduler.CycleState, r *scheduler.Request, n *scheduler.NodeInfo) float64 {
	a := allocated(r, n)
	if a.cpuCap <= 0 || a.memCap <= 0 {
		return 100 // one fraction or none: kube's std is 0
	}
	cpu, mem := min(float64(a.cpu)/float64(a.cpuCap), 1), min(float64(a.mem)/float64(a.memCap), 1)
	return math.Trunc((1 - math.Abs(cpu-mem)/2) * 100)
}

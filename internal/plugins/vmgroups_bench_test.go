package plugins

import (
	"fmt"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// groupSnapshot is benchSnapshot with eight zones and every fifth guest tagged web: a group
// of 2,000 guests on 64 x 10,000.
func groupSnapshot() scheduler.Snapshot {
	snap := benchSnapshot(64, 10000)
	for i := range snap.Nodes {
		snap.Nodes[i].Labels = map[string]string{"zone": fmt.Sprintf("z%d", i%8)}
	}
	for i := range snap.Guests {
		if i%5 == 0 {
			snap.Guests[i].Tags = []string{"web", "prod"}
		} else {
			snap.Guests[i].Tags = []string{"prod"}
		}
	}
	return snap
}

// groupRequest carries the group's tags, a DoNotSchedule spread by node and a preferred
// anti-affinity by zone on the same 2,000-guest group.
func groupRequest(name string) scheduler.Request {
	r := benchRequest(name)
	r.Tags = []string{"web", "prod"}
	r.TopologySpread = spreadOf(TopologyNode, 1, DoNotSchedule, "web")
	r.VMAntiAffinity = antiTerm("zone", 100, "web")
	return r
}

func BenchmarkScheduleVMGroup(b *testing.B) {
	benchDecisions(b, groupSnapshot(), []scheduler.Request{groupRequest("web")})
}

func BenchmarkScheduleVMGroup100VMs(b *testing.B) {
	reqs := make([]scheduler.Request, 100)
	for i := range reqs {
		reqs[i] = groupRequest(fmt.Sprintf("web-%d", i))
	}
	benchDecisions(b, groupSnapshot(), reqs)
}

package plugins

import (
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// A set whose VMs come from blocks with their own plugin configs: each VM is filtered under
// its own profile, in the greedy pass and in the joint search alike.
func TestSetProfileDecidesEachRequestUnderItsOwnProfile(t *testing.T) {
	// Two 4-CPU nodes, each running 4 vCPUs: full at ratio 1, room at the default ratio 4.
	snap := scheduler.Snapshot{
		Nodes:  []scheduler.Node{node("n1", 4, 64), node("n2", 4, 64)},
		Guests: []scheduler.Guest{running(100, "n1", 4, 1), running(101, "n2", 4, 1)},
	}
	strict, loose := mustProfile(ratioOne()), mustProfile(scheduler.PluginConfig{})
	a, b, c := sized("strict-a", 1, 1), sized("loose-b", 4, 1), sized("loose-c", 4, 1)
	byName := map[string]*scheduler.Profile{a.Name: strict, b.Name: loose, c.Name: loose}
	set := scheduler.SetProfile(loose, byName)

	d, err := set.ScheduleSet(snap, []scheduler.Request{b, c}, scheduler.Options{})
	if err != nil {
		t.Fatalf("two VMs under the loose profile: %v", err)
	}
	if len(d.Placements) != 2 {
		t.Fatalf("placements %v", d.Placements)
	}
	_, err = set.ScheduleSet(snap, []scheduler.Request{b, a, c}, scheduler.Options{})
	se := setError(t, err)
	if se.Request != a.Name || se.Placed != 2 || se.Total != 3 {
		t.Errorf("refused %q with %d of %d placed, want %q refused with 2 of 3: %v", se.Request, se.Placed, se.Total, a.Name, err)
	}
	for _, c := range se.Candidates {
		if len(c.Reasons) == 0 || !strings.HasPrefix(c.Reasons[0], "CPUOvercommit") {
			t.Errorf("%s: reasons %q, want the strict profile's CPUOvercommit", c.Node, c.Reasons)
		}
	}
}

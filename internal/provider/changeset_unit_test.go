package provider

import (
	"fmt"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/plugins"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

func registryProfile(t *testing.T) *scheduler.Profile {
	t.Helper()
	p, err := scheduler.NewProfile(plugins.Registry, scheduler.PluginConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Four 16 GiB VMs, two per 64 GiB node, all growing to 40 GiB: each alone fits its node
// ((16+40)/64), but the plan's growth does not, and the check of the second VM on a node
// gives the node's figure after the plan.
func TestChangeSetGrowthCountsThePlansOtherChanges(t *testing.T) {
	snap := scheduler.Snapshot{}
	for i := 1; i <= 2; i++ {
		snap.Nodes = append(snap.Nodes, scheduler.Node{Name: fmt.Sprintf("n%d", i), Online: true, MaxCPU: 16, MaxMem: 64 << 30})
	}
	for i := 0; i < 4; i++ {
		snap.Guests = append(snap.Guests, scheduler.Guest{VMID: 100 + i, Node: fmt.Sprintf("n%d", i%2+1), Name: fmt.Sprintf("w%d", i),
			Type: scheduler.GuestQEMU, Status: "running", CPUs: 2, MaxMem: 16 << 30})
	}
	p, c := registryProfile(t), newChangeSet()
	grown := scheduler.Request{Cores: 2, Sockets: 1, MemoryMiB: 40960}
	var got []string
	for i := 0; i < 4; i++ {
		s := c.grow(snap, 100+i, sizeOf(grown))
		got = append(got, strings.Join(p.CheckNode(s, grown, fmt.Sprintf("n%d", i%2+1), 100+i), "; "))
	}
	want := []string{"", "", "MemoryOvercommit: (40960+40960)/65536 MiB = 1.25 > 1", "MemoryOvercommit: (40960+40960)/65536 MiB = 1.25 > 1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("checks\n got %q\nwant %q", got, want)
	}
	if g := snap.Guests[0]; g.MaxMem != 16<<30 {
		t.Errorf("the caller's snapshot changed: guest 100 has %d bytes", g.MaxMem)
	}
}

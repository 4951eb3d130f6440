package scheduling

import (
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// A rule reads as bpg's harule does: a node rule's nodes with their priorities (0 where PVE
// has none) and no affinity; a resource rule's affinity, no nodes and strict false; the
// resources as PVE writes them, by VMID; the rules by id.
func TestHARulesValue(t *testing.T) {
	rules := HARulesValue([]scheduler.HARule{
		{Name: "qemuscheduler-vm-101", Type: scheduler.HANodeAffinity, VMIDs: []int{101}, Nodes: []string{"pve2", "pve1"},
			Priorities: map[string]int{"pve2": 2}, Strict: true},
		{Name: "qemuscheduler-apart-web", Type: scheduler.HAResourceAffinity, Affinity: scheduler.HANegative, VMIDs: []int{102, 101, 9},
			CTs: []int{102}, Strict: true},
	})
	want := `[{"affinity":"negative","id":"qemuscheduler-apart-web","nodes":<null>,"resources":["vm:9","vm:101","ct:102"],"strict":false,"type":"resource-affinity"},` +
		`{"affinity":<null>,"id":"qemuscheduler-vm-101","nodes":{"pve1":0,"pve2":2},"resources":["vm:101"],"strict":true,"type":"node-affinity"}]`
	if got := rules.String(); got != want {
		t.Errorf("rules\n%s\nwant\n%s", got, want)
	}
}

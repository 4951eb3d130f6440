package harules

import (
	"slices"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// A move of VM 100 is constrained by every rule but its own node rule: a user's rule on it,
// another VM's node rule and its group's resource rule stay.
func TestMoveConstraints(t *testing.T) {
	rules := []scheduler.HARule{
		{Name: "qemuscheduler-vm-100", Type: scheduler.HANodeAffinity, VMIDs: []int{100}, Nodes: []string{"pve1"}, Strict: true},
		{Name: "qemuscheduler-vm-1000", Type: scheduler.HANodeAffinity, VMIDs: []int{1000}, Nodes: []string{"pve1"}, Strict: true},
		{Name: "qemuscheduler-apart-web", Type: scheduler.HAResourceAffinity, Affinity: scheduler.HANegative, VMIDs: []int{100, 101}},
		{Name: "stay", Type: scheduler.HANodeAffinity, VMIDs: []int{100}, Nodes: []string{"pve1"}, Strict: true},
	}
	var got []string
	for _, r := range MoveConstraints(100, rules) {
		got = append(got, r.Name)
	}
	if want := []string{"qemuscheduler-vm-1000", "qemuscheduler-apart-web", "stay"}; !slices.Equal(got, want) {
		t.Fatalf("constraints %v, want %v", got, want)
	}
	if rules[0].Name != "qemuscheduler-vm-100" || len(rules) != 4 {
		t.Fatalf("the caller's rules changed: %+v", rules)
	}
}

package harules

import (
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// A peer's apply may rewrite only the priorities of the VM's own node rule: other nodes,
// strictness, comment or members, another rule, a create or a delete are the VM's own.
func TestReranks(t *testing.T) {
	cur := []scheduler.HARule{
		{Name: "qemuscheduler-vm-100", Type: scheduler.HANodeAffinity, VMIDs: []int{100}, Nodes: []string{"pve1", "pve2"},
			Priorities: map[string]int{"pve1": 2}, Comment: "c"},
		{Name: "qemuscheduler-vm-101", Type: scheduler.HANodeAffinity, VMIDs: []int{101, 102}, Nodes: []string{"pve1"}},
	}
	update := func(edit func(r *scheduler.HARule)) []Change {
		r := cur[0]
		r.Nodes, r.Priorities = []string{"pve2", "pve1"}, map[string]int{"pve1": 2, "pve2": 1}
		edit(&r)
		return []Change{{Op: Update, Rule: r}}
	}
	for _, c := range []struct {
		name    string
		vmid    int
		changes []Change
		want    bool
	}{
		{"other priorities", 100, update(func(*scheduler.HARule) {}), true},
		{"one class", 100, update(func(r *scheduler.HARule) { r.Priorities = nil }), true},
		{"other nodes", 100, update(func(r *scheduler.HARule) { r.Nodes = []string{"pve1"} }), false},
		{"strict", 100, update(func(r *scheduler.HARule) { r.Strict = true }), false},
		{"comment", 100, update(func(r *scheduler.HARule) { r.Comment = "placed on pve2" }), false},
		{"members", 100, update(func(r *scheduler.HARule) { r.VMIDs = []int{100, 103} }), false},
		{"another VM's rule", 101, update(func(*scheduler.HARule) {}), false},
		{"a shared rule", 101, []Change{{Op: Update, Rule: scheduler.HARule{Name: "qemuscheduler-vm-101", Type: scheduler.HANodeAffinity,
			VMIDs: []int{101, 102}, Nodes: []string{"pve1"}, Priorities: map[string]int{"pve1": 1}}}}, false},
		{"two changes", 100, append(update(func(*scheduler.HARule) {}), Change{Op: Delete, Rule: cur[1]}), false},
		{"delete", 100, []Change{{Op: Delete, Rule: cur[0]}}, false},
		{"create", 103, []Change{{Op: Create, Rule: scheduler.HARule{Name: "qemuscheduler-vm-103", Type: scheduler.HANodeAffinity, VMIDs: []int{103}}}}, false},
	} {
		if got := Reranks(c.vmid, c.changes, cur); got != c.want {
			t.Errorf("%s: Reranks %v, want %v", c.name, got, c.want)
		}
	}
}

// The classes of a VM count the members of a group by their homes for its required
// anti-affinity (any key) and its spreads that must hold; never for an affinity, a preferred
// term, a spread that may be broken, or a group that does not select the tags.
func TestCounts(t *testing.T) {
	web := []string{"web"}
	for _, c := range []struct {
		name string
		req  scheduler.Request
		want bool
	}{
		{"anti-affinity on nodes", scheduler.Request{VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: web, TopologyKey: "node"}}}, true},
		{"anti-affinity on zones", scheduler.Request{VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: web, TopologyKey: "zone"}}}, true},
		{"spread", scheduler.Request{TopologySpread: []scheduler.SpreadConstraint{{Tags: web, TopologyKey: "zone", WhenUnsatisfiable: "DoNotSchedule"}}}, true},
		{"spread anyway", scheduler.Request{TopologySpread: []scheduler.SpreadConstraint{{Tags: web, TopologyKey: "zone", WhenUnsatisfiable: "ScheduleAnyway"}}}, false},
		{"preferred", scheduler.Request{VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: web, TopologyKey: "node", Weight: 10}}}, false},
		{"affinity", scheduler.Request{VMAffinity: []scheduler.VMGroupTerm{{Tags: web, TopologyKey: "zone"}}}, false},
		{"other group", scheduler.Request{VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: []string{"db"}, TopologyKey: "node"}}}, false},
	} {
		if got := Counts(c.req, web); got != c.want {
			t.Errorf("%s: Counts %v, want %v", c.name, got, c.want)
		}
	}
}

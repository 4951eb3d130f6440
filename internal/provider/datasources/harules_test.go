package datasources

import (
	"reflect"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/harules"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/plugins"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// The rules of a placement's names: every name is in its group's rule by the VMID it is
// answered with, HA-managed or not yet (its HA resource is written with the rules); another
// guest of the group only when the HA manager acts on it; each name's node rule lists the
// nodes its node-level rules allow and names it. The group's rule comes once, sorted by id.
func TestWantHARulesOfTheNames(t *testing.T) {
	profile, err := plugins.NewProfile(scheduler.PluginConfig{})
	if err != nil {
		t.Fatal(err)
	}
	node := func(name, zone string) scheduler.Node {
		return scheduler.Node{Name: name, Online: true, MaxCPU: 8, MaxMem: 16 << 30, Labels: map[string]string{"zone": zone}}
	}
	snap := scheduler.Snapshot{
		Nodes: []scheduler.Node{node("pve1", "a"), node("pve2", "a"), node("pve3", "a"), node("pve4", "b")},
		Guests: []scheduler.Guest{
			// app-1 exists, untagged yet and not HA-managed: the rules take it as answered.
			{VMID: 100, Name: "app-1", Node: "pve4"},
			{VMID: 200, Name: "old", Node: "pve3", Tags: []string{"app"}},     // HA-managed: in the group
			{VMID: 201, Name: "spare", Node: "pve3", Tags: []string{"app"}},   // not HA-managed: out
			{VMID: 202, Name: "ignored", Node: "pve3", Tags: []string{"app"}}, // ignored by the HA manager: out
		},
	}
	req := scheduler.Request{Tags: []string{"app"}, NodeSelector: map[string]string{"zone": "a"},
		VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: []string{"app"}, TopologyKey: "node"}}}
	reqs := []scheduler.Request{req, req, req}
	for i, n := range []string{"app-1", "app-2", "app-3"} {
		reqs[i].Name = n
	}
	d := scheduler.Decision{Placements: []scheduler.Placement{
		{Name: "app-1", Node: "pve1", VMID: 100}, {Name: "app-2", Node: "pve2", VMID: 105}, {Name: "app-3", Node: "pve3", VMID: 106}}}
	managed := map[int]bool{200: true, 202: false}
	got := wantHARules(profile, snap, reqs, d, managed, nil, harules.FailoverStrict)
	type rule struct {
		name, typ, affinity string
		vmids               []int
		nodes               []string
	}
	var short []rule
	for _, r := range got {
		short = append(short, rule{r.Name, r.Type, r.Affinity, r.VMIDs, r.Nodes})
	}
	zoneA := []string{"pve1", "pve2", "pve3"}
	want := []rule{
		{"qemuscheduler-apart-app", scheduler.HAResourceAffinity, scheduler.HANegative, []int{100, 105, 106, 200}, nil},
		{"qemuscheduler-vm-100", scheduler.HANodeAffinity, "", []int{100}, zoneA},
		{"qemuscheduler-vm-105", scheduler.HANodeAffinity, "", []int{105}, zoneA},
		{"qemuscheduler-vm-106", scheduler.HANodeAffinity, "", []int{106}, zoneA},
	}
	if !reflect.DeepEqual(short, want) {
		t.Errorf("rules\n%+v\nwant\n%+v", short, want)
	}
	// Preferred: no resource rule; each name's node rule is non-strict and ranks the nodes
	// without another member of the group above those with one.
	preferred := wantHARules(profile, snap, reqs, d, managed, nil, harules.FailoverPreferred)
	if len(preferred) != 3 {
		t.Errorf("preferred: rules %+v, want the three node rules", preferred)
	}
	for _, r := range preferred {
		if r.Type != scheduler.HANodeAffinity || r.Strict {
			t.Errorf("preferred: rule %+v, want non-strict node rules only", r)
			continue
		}
		own := map[string]string{"qemuscheduler-vm-100": "pve1", "qemuscheduler-vm-105": "pve2", "qemuscheduler-vm-106": "pve3"}[r.Name]
		for _, n := range r.Nodes {
			if other := n != own; other && r.Priorities[n] >= r.Priorities[own] {
				t.Errorf("preferred: rule %s ranks %s (another app VM) %d, not below its own node %s %d", r.Name, n, r.Priorities[n], own, r.Priorities[own])
			}
		}
	}
	// The provider's cached view is not changed: the names are added to a copy.
	if len(snap.Guests) != 4 || snap.Guests[0].Node != "pve4" || snap.Guests[0].Tags != nil || len(managed) != 2 {
		t.Errorf("the input changed: guests %+v, managed %v", snap.Guests, managed)
	}
}

// A rule of ha_rules that PVE's checks would refuse beside the cluster's rules is named with
// the rule it conflicts with: a user's node rule already holding one of the VMs. The cluster's
// own version of a rule of ha_rules is replaced, not checked against it.
func TestRefusedRules(t *testing.T) {
	want := []scheduler.HARule{
		{Name: "qemuscheduler-apart-app", Type: scheduler.HAResourceAffinity, Affinity: scheduler.HANegative, VMIDs: []int{100, 105}},
		{Name: "qemuscheduler-vm-105", Type: scheduler.HANodeAffinity, Strict: true, VMIDs: []int{105}, Nodes: []string{"pve1", "pve2"}},
	}
	cur := []scheduler.HARule{
		{Name: "qemuscheduler-vm-105", Type: scheduler.HANodeAffinity, VMIDs: []int{105}, Nodes: []string{"pve1"}},
	}
	if got := refusedRules(want, cur, 4); len(got) != 0 {
		t.Errorf("refusals %q, want none: the cluster's version of a rule is replaced", got)
	}
	cur = append(cur, scheduler.HARule{Name: "pin-105", Type: scheduler.HANodeAffinity, VMIDs: []int{105}, Nodes: []string{"pve3"}})
	got := refusedRules(want, cur, 4)
	if len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), "qemuscheduler-vm-105") || !strings.Contains(strings.Join(got, "\n"), "pin-105") {
		t.Errorf("refusals %q, want qemuscheduler-vm-105 refused beside pin-105 (one node rule per resource)", got)
	}
}

package harules

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/plugins"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

func cluster() scheduler.Snapshot {
	zone := func(name, z string) scheduler.Node {
		return scheduler.Node{Name: name, Online: true, MaxCPU: 8, MaxMem: 16 << 30, Labels: map[string]string{"zone": z}}
	}
	snap := scheduler.Snapshot{Nodes: []scheduler.Node{zone("pve1", "a"), zone("pve2", "a"), zone("pve3", "b"), zone("pve4", "b")}}
	snap.Nodes[3].Taints = []scheduler.Taint{{Key: "gpu", Effect: "NoSchedule"}}
	snap.Nodes[1].Taints = []scheduler.Taint{{Key: "node.qemu-scheduler/maintenance", Effect: "NoSchedule"}}
	snap.Guests = []scheduler.Guest{
		{VMID: 100, Node: "pve1", Tags: []string{"Web"}}, {VMID: 101, Node: "pve2", Tags: []string{"web"}},
		{VMID: 102, Node: "pve3", Tags: []string{"web"}, Type: scheduler.GuestLXC}, {VMID: 103, Node: "pve3", Tags: []string{"db"}},
	}
	return snap
}

func profile(t *testing.T) *scheduler.Profile {
	p, err := plugins.NewProfile(scheduler.PluginConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The node rule lists the nodes that pass the node-level rules whatever their state: an
// untolerated taint removes a node, a maintenance taint does not.
func TestNodeRuleNodes(t *testing.T) {
	snap := cluster()
	if got := NodeRuleNodes(profile(t), snap, scheduler.Request{}); !reflect.DeepEqual(got, []string{"pve1", "pve2", "pve3"}) {
		t.Errorf("nodes %v, want all but the tainted pve4", got)
	}
	req := scheduler.Request{NodeSelector: map[string]string{"zone": "b"}, Tolerations: []scheduler.Toleration{{Key: "gpu", Operator: "Exists"}},
		NodeAffinity: []scheduler.NodeAffinityTerm{scheduler.Expression(10, "zone", "In", "a")}}
	if got := NodeRuleNodes(profile(t), snap, req); !reflect.DeepEqual(got, []string{"pve3", "pve4"}) {
		t.Errorf("nodes %v, want zone b with the tolerated taint (the preferred term adds nothing)", got)
	}
	// NoExecute keeps a VM off as NoSchedule does; PreferNoSchedule is a preference, no rule.
	tainted := cluster()
	tainted.Nodes[0].Taints = []scheduler.Taint{{Key: "evict", Effect: "NoExecute"}}
	tainted.Nodes[2].Taints = []scheduler.Taint{{Key: "slow", Effect: "PreferNoSchedule"}}
	if got := NodeRuleNodes(profile(t), tainted, scheduler.Request{}); !reflect.DeepEqual(got, []string{"pve2", "pve3"}) {
		t.Errorf("nodes %v, want pve2 and pve3 (NoExecute on pve1 and NoSchedule on pve4 untolerated)", got)
	}
	// PVE starts no VM with more vCPUs than its node has CPUs: a recovery there would fail.
	snap.Nodes[0].MaxCPU = 32
	if got := NodeRuleNodes(profile(t), snap, scheduler.Request{Cores: 8, Sockets: 2}); !reflect.DeepEqual(got, []string{"pve1"}) {
		t.Errorf("nodes %v, want only pve1, the one node with 16 CPUs or more", got)
	}
}

// A VM whose node no longer passes its node-level rules (its node_selector changed, a taint
// came) keeps that node in its rule, besides the nodes that pass: placement is sticky, and a
// strict rule without it would make the HA manager move the VM on its own.
func TestWantKeepsTheNodeTheVMRunsOn(t *testing.T) {
	snap := cluster()
	req := scheduler.Request{NodeSelector: map[string]string{"zone": "a"}}
	got := Want(Input{VMID: 104, Name: "db", Node: "pve3", Snap: snap, PolicyNodes: NodeRuleNodes(profile(t), snap, req), Request: req})
	if len(got) != 1 || !reflect.DeepEqual(got[0].Nodes, []string{"pve1", "pve2", "pve3"}) || !strings.Contains(got[0].Policy, "pve3 (placement is sticky)") {
		t.Fatalf("node rule %+v, want zone a and pve3, where the VM runs", got)
	}
	// Before the VM exists, or on a node that passes, only the passing nodes.
	for _, node := range []string{"", "pve1"} {
		got := Want(Input{VMID: 104, Name: "db", Node: node, Snap: snap, PolicyNodes: NodeRuleNodes(profile(t), snap, req), Request: req})
		if len(got) != 1 || !reflect.DeepEqual(got[0].Nodes, []string{"pve1", "pve2"}) || strings.Contains(got[0].Policy, "sticky") {
			t.Errorf("node %q: node rule %+v, want zone a", node, got)
		}
	}
}

// A node rule's policy names what this VM sets, as its configuration writes it, so that a
// refusal says which attribute to change: its node_selector, required node_affinity, node
// regex, the taints it does not tolerate on nodes those pass, its required terms over other
// keys; never a list of every kind.
func TestWantNamesTheVMPolicy(t *testing.T) {
	snap := cluster()
	policy := func(req scheduler.Request) string {
		t.Helper()
		got := Want(Input{VMID: 104, Name: "db", Node: "pve3", Snap: snap, PolicyNodes: NodeRuleNodes(profile(t), snap, req), Request: req, Strict: true})
		if len(got) != 1 {
			t.Fatalf("rules %+v, want one node rule", got)
		}
		return got[0].Policy
	}
	regex := scheduler.Request{Annotations: map[string]string{scheduler.AnnotationNodeRegex: "pve[34]"}}
	for _, c := range []struct {
		name string
		req  scheduler.Request
		want string
	}{
		{"node selector, not the taint of a node it excludes", scheduler.Request{NodeSelector: map[string]string{"zone": "b", "rack": "1"}},
			`node_selector = { rack = "1", zone = "b" }; the node it runs on, pve3 (placement is sticky)`},
		{"required node affinity and an untolerated taint", scheduler.Request{NodeAffinity: []scheduler.NodeAffinityTerm{
			scheduler.Expression(0, "zone", "In", "b"), scheduler.Expression(20, "zone", "In", "a")}},
			`required node_affinity zone In [b]; no toleration for taint gpu:NoSchedule of pve4`},
		{"node regex", regex, `annotation node.qemu-scheduler/regex = "pve[34]"; no toleration for taint gpu:NoSchedule of pve4`},
		{"term over zones", scheduler.Request{Tolerations: []scheduler.Toleration{{Operator: "Exists"}},
			VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: []string{"db"}, TopologyKey: "zone"}}},
			`required vm_anti_affinity on tags db with topology_key zone: stays in zone=b`},
	} {
		if got := policy(c.req); got != c.want {
			t.Errorf("%s: policy %q, want %q", c.name, got, c.want)
		}
	}
}

// A VM stays in a group rule that a peer's record keeps it in (kube's symmetry), without a
// term of its own; not in a rule no peer's record explains, nor one whose group it left.
func TestHeld(t *testing.T) {
	snap := cluster()
	managed := map[int]bool{100: true, 101: true, 103: true}
	anti := scheduler.Request{VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: []string{"web"}, TopologyKey: "node"}}}
	snap.Guests[0].Recorded = &scheduler.Recorded{Policy: anti}
	rule := scheduler.HARule{Name: "qemuscheduler-apart-web", Type: scheduler.HAResourceAffinity, Affinity: scheduler.HANegative, VMIDs: []int{100, 101}}
	cur := []scheduler.HARule{rule}
	if got := Held(101, []string{"web"}, true, cur, snap, managed); len(got) != 1 || got[0].Name != rule.Name {
		t.Errorf("held %+v, want the rule of 100's record", got)
	}
	if got := Held(101, []string{"db"}, true, cur, snap, managed); len(got) != 0 {
		t.Errorf("held %+v after leaving the group", got)
	}
	if got := Held(101, []string{"web"}, true, cur, snap, map[int]bool{101: true}); len(got) != 0 {
		t.Errorf("held %+v by a peer the HA manager does not manage", got)
	}
	snap.Guests[0].Recorded = nil
	if got := Held(101, []string{"web"}, true, cur, snap, managed); len(got) != 0 {
		t.Errorf("held %+v without a record", got)
	}
}

// Under strict, the rules of design-failover §2's strict column, as design-guarantees had them
// (the term-by-term table for both values is TestWantTable).
func TestWant(t *testing.T) {
	snap := cluster()
	managed := map[int]bool{100: true, 101: true, 102: true, 103: true}
	all := []string{"pve1", "pve2", "pve3", "pve4"}
	anti := []scheduler.VMGroupTerm{{Tags: []string{"web"}, TopologyKey: "node"}}
	// A VM of the web group with required anti-affinity: one negative rule over the group.
	got := Want(Input{VMID: 104, Name: "web4", Node: "pve4", Snap: snap, Managed: managed, PolicyNodes: all, Strict: true,
		Request: scheduler.Request{VMAntiAffinity: anti}})
	if len(got) != 1 || got[0].Name != "qemuscheduler-apart-web" || got[0].Affinity != "negative" ||
		!reflect.DeepEqual(got[0].VMIDs, []int{100, 101, 102, 104}) || !reflect.DeepEqual(got[0].CTs, []int{102}) {
		t.Fatalf("want %+v", got)
	}
	// Only HA-managed guests count; alone in its group the VM wants no rule.
	if got := Want(Input{VMID: 104, Snap: snap, Managed: map[int]bool{}, PolicyNodes: all, Strict: true, Request: scheduler.Request{VMAntiAffinity: anti}}); len(got) != 0 {
		t.Errorf("a group of one: %+v", got)
	}
	// Alone in its group still, a strict member's spread does not rank its nodes: a peer
	// joining later puts it in a negative rule, which PVE allows only a single-class node rule.
	if got := Want(Input{VMID: 104, Node: "pve3", Snap: snap, Managed: map[int]bool{}, PolicyNodes: all, Strict: true, Request: scheduler.Request{
		VMAntiAffinity: anti, TopologySpread: []scheduler.SpreadConstraint{{Tags: []string{"web"}, TopologyKey: "zone", MaxSkew: 1, WhenUnsatisfiable: "DoNotSchedule"}}}}); len(got) != 0 {
		t.Errorf("a group of one with a spread: %+v", got)
	}
	// Members whose failover is preferred are left out, as they leave the rule (Held).
	got = Want(Input{VMID: 104, Node: "pve4", Snap: snap, Managed: managed, Lenient: map[int]bool{100: true, 101: true}, PolicyNodes: all, Strict: true,
		Request: scheduler.Request{VMAntiAffinity: anti}})
	if len(got) != 1 || !reflect.DeepEqual(got[0].VMIDs, []int{102, 104}) {
		t.Errorf("with lenient members: %+v", got)
	}
	// Preferred terms and terms over other keys make no resource-affinity rule; a required
	// term over zone keeps the VM in its zone.
	req := scheduler.Request{VMAffinity: []scheduler.VMGroupTerm{{Tags: []string{"db"}, TopologyKey: "node", Weight: 50}},
		VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: []string{"web"}, TopologyKey: "zone"}}}
	got = Want(Input{VMID: 104, Name: "web4", Node: "pve3", Snap: snap, Managed: managed, PolicyNodes: all, Request: req, Strict: true})
	if len(got) != 1 || got[0].Name != "qemuscheduler-vm-104" || !got[0].Strict || !reflect.DeepEqual(got[0].Nodes, []string{"pve3", "pve4"}) ||
		!strings.Contains(got[0].Policy, "stays in zone=b") || !strings.Contains(got[0].Comment, "web4") {
		t.Fatalf("zone rule %+v", got)
	}
	// A spread that may be broken (ScheduleAnyway) adds nothing.
	if got := Want(Input{VMID: 104, Name: "web4", Node: "pve1", Snap: snap, Managed: managed, PolicyNodes: all, Request: scheduler.Request{
		TopologySpread: []scheduler.SpreadConstraint{{Tags: []string{"web"}, TopologyKey: "zone", MaxSkew: 1, WhenUnsatisfiable: "ScheduleAnyway"}}}}); len(got) != 0 {
		t.Errorf("a ScheduleAnyway spread: %+v", got)
	}
}

// rackCluster is the trial: six nodes in three racks, pve1-2 r1, pve3-4 r2, pve5-6 r3.
func rackCluster() scheduler.Snapshot {
	var racks scheduler.Snapshot
	for i, rack := range []string{"r1", "r1", "r2", "r2", "r3", "r3"} {
		racks.Nodes = append(racks.Nodes, scheduler.Node{Name: "pve" + strconv.Itoa(i+1), Online: true, MaxCPU: 8, MaxMem: 16 << 30,
			Labels: map[string]string{"rack": rack}})
	}
	return racks
}

// design-failover §2, term by term, under both values of failover. The cluster: six nodes in
// three racks (the trial), web VMs 201..206 two a rack, DB VMs 301 on pve1 and 302
// on pve3; the VM (400) runs on pve1 unless the case says otherwise.
func TestWantTable(t *testing.T) {
	racks := rackCluster()
	managed := map[int]bool{}
	for i, node := range []string{"pve1", "pve2", "pve3", "pve4", "pve5", "pve6"} {
		if i < 5 { // web tier 2-2-1: rack r3 has one web VM
			racks.Guests = append(racks.Guests, scheduler.Guest{VMID: 201 + i, Node: node, Tags: []string{"web"}})
			managed[201+i] = true
		}
	}
	racks.Guests = append(racks.Guests, scheduler.Guest{VMID: 301, Node: "pve1", Tags: []string{"db"}}, scheduler.Guest{VMID: 302, Node: "pve3", Tags: []string{"db"}})
	managed[301], managed[302] = true, true
	all := []string{"pve1", "pve2", "pve3", "pve4", "pve5", "pve6"}
	type rule struct {
		name     string
		nodes    []string
		prio     map[string]int
		strict   bool
		affinity string
		vmids    []int
	}
	cases := []struct {
		name      string
		node      string
		eligible  []string
		req       scheduler.Request
		preferred []rule
		strict    []rule
	}{
		{"node-level rules only", "pve1", []string{"pve1", "pve2", "pve3"}, scheduler.Request{},
			[]rule{{name: "vm-400", nodes: []string{"pve1", "pve2", "pve3"}}},
			[]rule{{name: "vm-400", nodes: []string{"pve1", "pve2", "pve3"}, strict: true}}},
		{"node-level rules allowing every node", "pve1", all, scheduler.Request{}, nil, nil},
		{"required vm_anti_affinity over nodes", "pve2",
			all, scheduler.Request{VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: []string{"db"}, TopologyKey: "node"}}},
			[]rule{{name: "vm-400", nodes: all, prio: map[string]int{"pve2": 2, "pve4": 2, "pve5": 2, "pve6": 2}}},
			[]rule{{name: "apart-db", affinity: "negative", vmids: []int{301, 302, 400}}}},
		{"required vm_anti_affinity over racks", "pve5",
			all, scheduler.Request{VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: []string{"db"}, TopologyKey: "rack"}}},
			// Its rack r3 first, then none (r1 and r2 hold a DB), then the rest.
			[]rule{{name: "vm-400", nodes: all, prio: map[string]int{"pve5": 2, "pve6": 2}}},
			[]rule{{name: "vm-400", nodes: []string{"pve5", "pve6"}, strict: true}}},
		{"required vm_anti_affinity over racks, a rack free", "pve1",
			all, scheduler.Request{VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: []string{"db"}, TopologyKey: "rack", TagsNoneOf: []string{"web"}}}},
			// 301 runs in r1 with it (placement broke it, say) and 302 in r2: r3 is the rack without a DB.
			[]rule{{name: "vm-400", nodes: all, prio: map[string]int{"pve1": 2, "pve2": 2, "pve5": 1, "pve6": 1}}},
			[]rule{{name: "vm-400", nodes: []string{"pve1", "pve2"}, strict: true}}},
		{"required vm_affinity over racks", "pve3",
			all, scheduler.Request{VMAffinity: []scheduler.VMGroupTerm{{Tags: []string{"db"}, TopologyKey: "rack"}}},
			[]rule{{name: "vm-400", nodes: all, prio: map[string]int{"pve3": 2, "pve4": 2}}},
			[]rule{{name: "vm-400", nodes: []string{"pve3", "pve4"}, strict: true}}},
		{"topology_spread over racks", "pve1",
			all, scheduler.Request{TopologySpread: []scheduler.SpreadConstraint{{Tags: []string{"web"}, TopologyKey: "rack", MaxSkew: 1, WhenUnsatisfiable: "DoNotSchedule"}}},
			// Its rack r1 (3 with it), then r2 and r3 (fewer), never a pin: strict keeps every node.
			[]rule{{name: "vm-400", nodes: all, prio: map[string]int{"pve1": 2, "pve2": 2, "pve3": 1, "pve4": 1, "pve5": 1, "pve6": 1}}},
			[]rule{{name: "vm-400", nodes: all, strict: true, prio: map[string]int{"pve1": 2, "pve2": 2, "pve3": 1, "pve4": 1, "pve5": 1, "pve6": 1}}}},
		{"topology_spread, the rest of N last", "pve5",
			[]string{"pve1", "pve2", "pve3", "pve5", "pve6"}, scheduler.Request{TopologySpread: []scheduler.SpreadConstraint{
				{Tags: []string{"web"}, TopologyKey: "rack", MaxSkew: 1, WhenUnsatisfiable: "DoNotSchedule"}}},
			// r3 has 2 with it, r1 and r2 two each: no domain has fewer; pve4 is outside N.
			[]rule{{name: "vm-400", nodes: []string{"pve1", "pve2", "pve3", "pve5", "pve6"}, prio: map[string]int{"pve5": 2, "pve6": 2}}},
			[]rule{{name: "vm-400", nodes: []string{"pve1", "pve2", "pve3", "pve5", "pve6"}, strict: true, prio: map[string]int{"pve5": 2, "pve6": 2}}}},
		{"preferred terms", "pve1",
			all, scheduler.Request{VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: []string{"db"}, TopologyKey: "rack", Weight: 10}}}, nil, nil},
		{"required vm_affinity over nodes: the one peer", "pve3",
			[]string{"pve1", "pve2", "pve3", "pve4"}, scheduler.Request{VMAffinity: []scheduler.VMGroupTerm{{Tags: []string{"db"}, TopologyKey: "node"}}},
			[]rule{{name: "together-db-302-400", affinity: "positive", vmids: []int{302, 400}}, {name: "vm-302", nodes: []string{"pve1", "pve2", "pve3", "pve4"}, vmids: []int{302, 400}}},
			[]rule{{name: "together-db-302-400", affinity: "positive", vmids: []int{302, 400}}, {name: "vm-302", nodes: []string{"pve1", "pve2", "pve3", "pve4"}, strict: true, vmids: []int{302, 400}}}},
		{"a negative group collapses the node rule into one class", "pve5",
			[]string{"pve2", "pve3", "pve4", "pve5", "pve6"}, scheduler.Request{VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: []string{"db"}, TopologyKey: "node"}},
				TopologySpread: []scheduler.SpreadConstraint{{Tags: []string{"web"}, TopologyKey: "rack", MaxSkew: 1, WhenUnsatisfiable: "DoNotSchedule"}}},
			// Under preferred, its rack first (no rack has fewer web VMs), nodes with a DB last.
			[]rule{{name: "vm-400", nodes: []string{"pve2", "pve3", "pve4", "pve5", "pve6"}, prio: map[string]int{"pve5": 2, "pve6": 2}}},
			[]rule{{name: "apart-db", affinity: "negative", vmids: []int{301, 302, 400}}, {name: "vm-400", nodes: []string{"pve2", "pve3", "pve4", "pve5", "pve6"}, strict: true}}},
	}
	for _, c := range cases {
		snap := racks
		snap.Guests = append(slices.Clone(racks.Guests), scheduler.Guest{VMID: 400, Node: c.node})
		for _, strict := range []bool{false, true} {
			want := c.preferred
			if strict {
				want = c.strict
			}
			got := Want(Input{VMID: 400, Name: "vm", Node: c.node, Request: c.req, Snap: snap, Managed: managed, PolicyNodes: c.eligible, Strict: strict})
			var have []rule
			for _, r := range got {
				h := rule{name: strings.TrimPrefix(r.Name, Prefix), nodes: r.Nodes, prio: r.Priorities, strict: r.Strict, affinity: r.Affinity}
				if r.Type == scheduler.HAResourceAffinity || len(r.VMIDs) > 1 {
					h.vmids = r.VMIDs
				}
				if len(h.prio) == 0 {
					h.prio = nil
				}
				have = append(have, h)
			}
			if !reflect.DeepEqual(have, want) {
				t.Errorf("%s, strict %t:\n got %+v\nwant %+v", c.name, strict, have, want)
			}
		}
	}
}

// What a failure leaves the VM: a strict rule with one usable node, a negative group as large
// as the eligible nodes, warned of; non-strict rules never are.
func TestNoTarget(t *testing.T) {
	snap := cluster()
	one := Rule{HARule: scheduler.HARule{Name: "qemuscheduler-vm-104", Type: scheduler.HANodeAffinity, Strict: true, Nodes: []string{"pve1", "pve3"}}, Policy: "p"}
	snap.Nodes[2].Online = false
	got := NoTarget(104, "db", []Rule{one}, snap, []string{"pve1", "pve3"})
	if len(got) != 1 || !strings.Contains(got[0], "qemuscheduler-vm-104") || !strings.Contains(got[0], "VM db (104)") || !strings.Contains(got[0], "if pve1 fails") {
		t.Errorf("strict rule with one node up: %q", got)
	}
	one.Strict = false
	if got := NoTarget(104, "db", []Rule{one}, snap, []string{"pve1", "pve3"}); len(got) != 0 {
		t.Errorf("non-strict: %q", got)
	}
	neg := Rule{HARule: scheduler.HARule{Name: "qemuscheduler-apart-db", Type: scheduler.HAResourceAffinity, Affinity: scheduler.HANegative, VMIDs: []int{1, 2, 104}}}
	if got := NoTarget(104, "db", []Rule{neg}, snap, []string{"pve1", "pve2", "pve3"}); len(got) != 1 || !strings.Contains(got[0], "3 VMs apart on the 3 nodes") {
		t.Errorf("negative group as large as the nodes: %q", got)
	}
	if got := NoTarget(104, "db", []Rule{neg}, snap, []string{"pve1", "pve2", "pve3", "pve4"}); len(got) != 0 {
		t.Errorf("a node to spare: %q", got)
	}
}

func TestGroupKey(t *testing.T) {
	if k := groupKey(scheduler.TagSelector{Tags: []string{"web", "Prod"}}); k != "prod_web" {
		t.Errorf("key %q", k)
	}
	if k := groupKey(scheduler.TagSelector{TagsAnyOf: []string{"b", "a"}, TagsNoneOf: []string{"old"}}); k != "any-a_b-none-old" {
		t.Errorf("key %q", k)
	}
	if a, b := groupKey(scheduler.TagSelector{Tags: []string{"a.b"}}), groupKey(scheduler.TagSelector{Tags: []string{"a+b"}}); a == b || !strings.HasPrefix(a, "a_b-") {
		t.Errorf("keys %q and %q must differ and stay readable", a, b)
	}
}

func TestChanges(t *testing.T) {
	managed := map[int]bool{100: true, 101: true, 102: true}
	apart := scheduler.HARule{Name: "qemuscheduler-apart-web", Type: "resource-affinity", Affinity: "negative", VMIDs: []int{100, 101}, Comment: "c"}
	want := []Rule{{HARule: scheduler.HARule{Name: apart.Name, Type: apart.Type, Affinity: "negative", VMIDs: []int{100, 102}, Comment: "c"}}}
	// Joining keeps the members another writer added that are still HA resources.
	got := Changes(102, want, []scheduler.HARule{apart}, managed)
	if len(got) != 1 || got[0].Op != Update || !reflect.DeepEqual(got[0].Rule.VMIDs, []int{100, 101, 102}) {
		t.Fatalf("join %+v", got)
	}
	if got := Changes(102, want, Apply([]scheduler.HARule{apart}, got), managed); len(got) != 0 {
		t.Errorf("after the join: %+v, want in sync", got)
	}
	// An outside disable or a missing rule is restored.
	off := apart
	off.Disabled = true
	if got := Changes(100, want[:1], []scheduler.HARule{off}, managed); len(got) != 1 || got[0].Op != Update || got[0].Rule.Disabled {
		t.Errorf("disabled outside: %+v", got)
	}
	if got := Changes(100, want, nil, managed); len(got) != 1 || got[0].Op != Create {
		t.Errorf("deleted outside: %+v", got)
	}
	// Leaving: a pair is deleted, a larger rule updated; others' rules are not touched.
	own := []scheduler.HARule{apart, {Name: "theirs", Type: "resource-affinity", Affinity: "negative", VMIDs: []int{100, 101}}}
	if got := Changes(100, nil, own, managed); len(got) != 1 || got[0].Op != Delete || got[0].Rule.Name != apart.Name {
		t.Errorf("leave a pair: %+v", got)
	}
	three := apart
	three.VMIDs = []int{100, 101, 102}
	if got := Changes(100, nil, []scheduler.HARule{three}, managed); len(got) != 1 || got[0].Op != Update || !reflect.DeepEqual(got[0].Rule.VMIDs, []int{101, 102}) {
		t.Errorf("leave a three: %+v", got)
	}
}

func TestCheck(t *testing.T) {
	neg := scheduler.HARule{Name: "apart", Type: "resource-affinity", Affinity: "negative", VMIDs: []int{100, 101, 102}}
	pos := scheduler.HARule{Name: "together", Type: "resource-affinity", Affinity: "positive", VMIDs: []int{100, 101}}
	pin := func(name string, vmid int, nodes ...string) scheduler.HARule {
		return scheduler.HARule{Name: name, Type: "node-affinity", VMIDs: []int{vmid}, Nodes: nodes, Strict: true}
	}
	prio := func(name string, vmid int, priorities map[string]int, nodes ...string) scheduler.HARule {
		r := pin(name, vmid, nodes...)
		r.Priorities = priorities
		return r
	}
	tests := []struct {
		name  string
		rules []scheduler.HARule
		nodes int
		want  string
	}{
		{"feasible", []scheduler.HARule{neg, pin("p0", 100, "pve1"), pin("p1", 101, "pve2")}, 3, ""},
		{"more than nodes", []scheduler.HARule{neg}, 2, "apart: rule defines more resources (3) than available nodes (2)"},
		{"positive and negative", []scheduler.HARule{neg, pos}, 3, "apart: rule shares two or more resources with a positive resource affinity rule (with rule together)"},
		{"two node rules", []scheduler.HARule{pin("p0", 100, "pve1"), pin("p1", 100, "pve2")}, 3, "p0: resource 100 is already used in another node affinity rule (with rule p1)"},
		{"restricted", []scheduler.HARule{neg, pin("p0", 100, "pve1"), pin("p1", 101, "pve1")}, 3, "apart: 2 resources are restricted to less nodes (1)"},
		{"positive in two node rules", []scheduler.HARule{pos, pin("p0", 100, "pve1"), pin("p1", 101, "pve1")}, 3, "together: resources are in multiple node affinity rules (with rule p0, p1)"},
		{"one resource", []scheduler.HARule{{Name: "x", Type: "resource-affinity", Affinity: "negative", VMIDs: []int{1}}}, 3, "x: rule is ineffective"},
		// PVE's check_single_priority_node_affinity_in_resource_affinity_rules, both sides named.
		{"node rule with priorities", []scheduler.HARule{neg, prio("p0", 100, map[string]int{"pve1": 2}, "pve1", "pve2")}, 3,
			"apart: resources are in node affinity rules with multiple priorities (with rule p0)"},
		{"node rule with priorities, its side", []scheduler.HARule{prio("p0", 100, map[string]int{"pve1": 2}, "pve1", "pve2"), pos}, 3,
			"p0: resources are in a resource affinity rule and cannot be in a node affinity rule with multiple priorities (with rule together)"},
		{"one priority class", []scheduler.HARule{neg, prio("p0", 100, map[string]int{"pve1": 2, "pve2": 2}, "pve1", "pve2")}, 3, ""},
		{"priorities without resource affinity", []scheduler.HARule{prio("p0", 100, map[string]int{"pve1": 2}, "pve1", "pve2")}, 3, ""},
		{"priorities of a disabled rule", []scheduler.HARule{neg, func() scheduler.HARule {
			r := prio("p0", 100, map[string]int{"pve1": 2}, "pve1", "pve2")
			r.Disabled = true
			return r
		}()}, 3, ""},
		{"disabled rules do not count", []scheduler.HARule{neg, {Name: "off", Type: "resource-affinity", Affinity: "positive", VMIDs: []int{100, 101}, Disabled: true}}, 3, ""},
	}
	for _, tc := range tests {
		var got []string
		for _, p := range Check(tc.rules, tc.nodes) {
			got = append(got, p.Rule+": "+p.String())
		}
		if (tc.want == "") != (len(got) == 0) || (tc.want != "" && !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, tc.want) })) {
			t.Errorf("%s: problems %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A required vm_affinity over nodes pairs the VM with the one peer it runs next to, never the
// whole group (finding 4), and the pair shares the peer's node rule in one class: PVE allows a
// positive group in one node rule only, of a single priority class. A peer with a node rule of
// its own (a replica pinned by its rules) is accepted, and keeps its node.
func TestWantPairSharesThePeersNodeRule(t *testing.T) {
	snap := cluster()
	snap.Guests = append(snap.Guests, scheduler.Guest{VMID: 104, Node: "pve3", Tags: []string{"side"}})
	managed := map[int]bool{100: true, 101: true, 103: true, 104: true}
	side := scheduler.Request{VMAffinity: []scheduler.VMGroupTerm{{Tags: []string{"web"}, TopologyKey: "node"}}}
	// The replica 101 (on pve2, of the web group with 100) keeps a rule of its own, with classes.
	replica := Want(Input{VMID: 101, Name: "web", Node: "pve2", Snap: snap, Managed: managed, PolicyNodes: []string{"pve1", "pve2", "pve3"},
		Request: scheduler.Request{VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: []string{"web"}, TopologyKey: "node"}}}})
	if len(replica) != 1 || replica[0].Name != "qemuscheduler-vm-101" || !replica[0].MultiplePriorities() {
		t.Fatalf("replica %+v, want its node rule with classes", replica)
	}
	cur := Apply(nil, Changes(101, replica, nil, managed))
	// The sidecar 104 next to it on pve2: a pair with 101 only (not 100), in 101's node rule.
	snap.Guests[len(snap.Guests)-1].Node = "pve2"
	sidecar := Want(Input{VMID: 104, Name: "side", Node: "pve2", Snap: snap, Managed: managed, PolicyNodes: []string{"pve2", "pve3", "pve4"}, Request: side})
	if len(sidecar) != 2 || sidecar[0].Name != "qemuscheduler-together-web-101-104" || !reflect.DeepEqual(sidecar[0].VMIDs, []int{101, 104}) ||
		sidecar[1].Name != "qemuscheduler-vm-101" || !sidecar[1].Shared || sidecar[1].MultiplePriorities() {
		t.Fatalf("sidecar %+v", sidecar)
	}
	cur = Apply(cur, Changes(104, sidecar, cur, managed))
	// The replica, held in the pair, flattens its classes: PVE accepts the set.
	snap.Guests[1].Recorded = &scheduler.Recorded{Policy: side}
	snap.Guests[len(snap.Guests)-1].Recorded = &scheduler.Recorded{Policy: side}
	held := Held(101, []string{"web"}, false, cur, snap, managed)
	if len(held) != 1 || held[0].Name != "qemuscheduler-together-web-101-104" {
		t.Fatalf("held %+v, want the pair", held)
	}
	replica = Want(Input{VMID: 101, Name: "web", Node: "pve2", Snap: snap, Managed: managed, PolicyNodes: []string{"pve1", "pve2", "pve3"}, PairedBy: []int{104},
		Request: scheduler.Request{VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: []string{"web"}, TopologyKey: "node"}}}})
	cur = Apply(cur, Changes(101, append(replica, held...), cur, managed))
	if problems := Check(cur, len(snap.Nodes)); len(problems) != 0 {
		t.Errorf("PVE would refuse %v: %+v", problems, cur)
	}
	i := slices.IndexFunc(cur, func(r scheduler.HARule) bool { return r.Name == "qemuscheduler-vm-101" })
	if i < 0 || !reflect.DeepEqual(cur[i].VMIDs, []int{101, 104}) || !reflect.DeepEqual(cur[i].Nodes, []string{"pve2", "pve3"}) {
		t.Errorf("rules %+v, want 101's node rule over both on pve2, pve3", cur)
	}
	// In sync for both.
	if got := Changes(104, sidecar, cur, managed); len(got) != 0 {
		t.Errorf("sidecar after: %+v", got)
	}
	if got := Changes(101, append(replica, held...), cur, managed); len(got) != 0 {
		t.Errorf("replica after: %+v", got)
	}
	// Two VMs of the group with the term next to each other write the same two rules,
	// whichever writes.
	snap.Guests[len(snap.Guests)-1].Tags = []string{"side", "web"}
	a := Want(Input{VMID: 101, Name: "a", Node: "pve2", Snap: snap, Managed: managed, PolicyNodes: []string{"pve2"}, Request: side, PairedBy: []int{104}})
	b := Want(Input{VMID: 104, Name: "b", Node: "pve2", Snap: snap, Managed: managed, PolicyNodes: []string{"pve2"}, Request: side, PairedBy: []int{101}})
	for i := range a {
		a[i].Policy, b[i].Policy = "", ""
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("mutual pair: %+v and %+v", a, b)
	}
}

// The tags groups select by are those of required terms over nodes (the terms that make
// resource-affinity rules), in lower case, each once; preferred terms and other keys add none.
func TestGroupTags(t *testing.T) {
	anti := []scheduler.VMGroupTerm{{Tags: []string{"Web"}, TagsNoneOf: []string{"canary"}, TopologyKey: "node"},
		{Tags: []string{"zone-only"}, TopologyKey: "zone"}, {Tags: []string{"soft"}, TopologyKey: "node", Weight: 10}}
	aff := []scheduler.VMGroupTerm{{TagsAnyOf: []string{"db", "web"}, TopologyKey: "node"}}
	if got := GroupTags(anti, aff); !reflect.DeepEqual(got, []string{"canary", "db", "web"}) {
		t.Errorf("group tags %v, want canary, db, web", got)
	}
	if got := GroupTags(); len(got) != 0 {
		t.Errorf("no terms: %v", got)
	}
}

// A node of the VM's current domain rule that lost the key is reported, whether it is the
// VM's node (the rule would widen to every node) or another (it would leave the domain); an
// offline node, a rule as wide as the node-level rules and a VM without a domain term are not.
func TestLostKeys(t *testing.T) {
	spread := scheduler.Request{TopologySpread: []scheduler.SpreadConstraint{{TopologyKey: "zone", WhenUnsatisfiable: "DoNotSchedule", MaxSkew: 1, Tags: []string{"db"}}}}
	all := []string{"pve1", "pve2", "pve3", "pve4"}
	rule := func(nodes ...string) []scheduler.HARule {
		return []scheduler.HARule{{Name: Prefix + "vm-103", Type: scheduler.HANodeAffinity, Strict: true, VMIDs: []int{103}, Nodes: nodes}}
	}
	snap := cluster()
	delete(snap.Nodes[2].Labels, "zone") // pve3's Notes line lost its s
	in := Input{VMID: 103, Node: "pve3", Request: spread, Snap: snap, PolicyNodes: all}
	got := LostKeys(in, rule("pve3", "pve4"))
	want := []Lost{{Node: "pve3", Key: "zone", Rule: Prefix + "vm-103", Value: "b",
		Policy: "topology_spread on tags db with topology_key zone (DoNotSchedule)", VMNode: true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lost %+v, want %+v", got, want)
	}
	other := in
	other.Node = "pve4"
	if got := LostKeys(other, rule("pve3", "pve4")); len(got) != 1 || got[0].Node != "pve3" || got[0].VMNode {
		t.Errorf("lost %+v, want pve3, not the VM's node", got)
	}
	if got := LostKeys(in, rule("pve3")); len(got) != 1 || got[0].Value != "" {
		t.Errorf("lost %+v, want pve3 with no value known (no other node in the rule)", got)
	}
	offline := in
	offline.Snap = cluster()
	offline.Snap.Nodes[2].Online, offline.Snap.Nodes[2].Labels = false, nil
	if got := LostKeys(offline, rule("pve3", "pve4")); got != nil {
		t.Errorf("lost %+v for an offline node, whose Notes cannot be read", got)
	}
	if got := LostKeys(in, rule(all...)); got != nil {
		t.Errorf("lost %+v for a rule as wide as the node-level rules, made for no domain", got)
	}
	if got := LostKeys(Input{VMID: 103, Node: "pve3", Snap: snap, PolicyNodes: all}, rule("pve3", "pve4")); got != nil {
		t.Errorf("lost %+v for a VM without a domain term", got)
	}
	if got := LostKeys(in, []scheduler.HARule{{Name: "user-rule", Type: scheduler.HANodeAffinity, VMIDs: []int{103}, Nodes: []string{"pve3"}}}); got != nil {
		t.Errorf("lost %+v for a rule the provider does not keep", got)
	}
}

// D is the VM's home, not where it runs: after an HA recovery (the VM and a peer moved off
// rack r1) its rule computed anew is the one its home gave, peers count at their homes, and the
// planned placements of VMs not created yet count as members. A provider move (Placing) makes
// the node its new home; a rule without a recorded home falls back to its highest class.
func TestWantFromHome(t *testing.T) {
	racks := rackCluster()
	all := []string{"pve1", "pve2", "pve3", "pve4", "pve5", "pve6"}
	spread := scheduler.Request{TopologySpread: []scheduler.SpreadConstraint{{Tags: []string{"web"}, TopologyKey: "rack", MaxSkew: 1, WhenUnsatisfiable: "DoNotSchedule"}}}
	web := func(vmid int, node string) scheduler.Guest {
		return scheduler.Guest{VMID: vmid, Name: "web" + strconv.Itoa(vmid), Node: node, Tags: []string{"web"}}
	}
	// 400 at home on pve1 with 201 (r1), 202 on pve3 (r2); 203 is planned on pve5, not created.
	snap := racks
	snap.Guests = []scheduler.Guest{web(400, "pve1"), web(201, "pve2"), web(202, "pve3")}
	snap.Reservations = []scheduler.Reservation{{VMID: 203, Name: "web203", Node: "pve5", Tags: []string{"web"}}}
	in := Input{VMID: 400, Name: "web400", Node: "pve1", Snap: snap, PolicyNodes: all, Request: spread, Placing: true}
	home := Want(in)
	if len(home) != 1 || !strings.HasSuffix(home[0].Comment, ", placed on pve1") ||
		!reflect.DeepEqual(home[0].Priorities, map[string]int{"pve1": 2, "pve2": 2, "pve3": 1, "pve4": 1, "pve5": 1, "pve6": 1}) {
		t.Fatalf("at home: %+v", home)
	}
	// Rack r1 fails: 400 recovered onto pve4, 201 onto pve6. 201's rule records its home.
	rules := []scheduler.HARule{home[0].HARule, {Name: NodeRuleName(201), Type: scheduler.HANodeAffinity, VMIDs: []int{201}, Nodes: all,
		Priorities: map[string]int{"pve1": 2, "pve2": 2}, Comment: "x" + placedOn + "pve2"}}
	snap.Guests = []scheduler.Guest{web(400, "pve4"), web(201, "pve6"), web(202, "pve3")}
	snap.Nodes = slices.Clone(racks.Nodes)
	after := Want(Input{VMID: 400, Name: "web400", Node: "pve4", Snap: snap, PolicyNodes: all, Request: spread, Rules: rules})
	if !reflect.DeepEqual(after, home) {
		t.Errorf("after the recovery:\n got %+v\nwant %+v", after, home)
	}
	// A pinned move to pve5 makes rack r3 its home.
	moved := Want(Input{VMID: 400, Name: "web400", Node: "pve5", Snap: snap, PolicyNodes: all, Request: spread, Rules: rules, Placing: true})
	if len(moved) != 1 || moved[0].Priorities["pve5"] != 2 || moved[0].Priorities["pve1"] == 2 || !strings.HasSuffix(moved[0].Comment, placedOn+"pve5") {
		t.Errorf("moved: %+v", moved)
	}
	// Without a recorded home: the rule's highest class, where the VM does not run now.
	old := home[0].HARule
	old.Comment = "qemuscheduler: VM web400 (400) on the nodes its rules allow"
	if got := Home(400, "pve4", []scheduler.HARule{old}); got != "pve1" {
		t.Errorf("home from the classes: %s", got)
	}
	if got := Home(400, "pve2", []scheduler.HARule{old}); got != "pve2" {
		t.Errorf("home in its class: %s", got)
	}
	if got := Home(400, "pve4", nil); got != "pve4" {
		t.Errorf("home without a rule: %s", got)
	}
}

// Pairs that chain (501 next to web VM 101, 502 next to side VM 501: A-B and B-C) make one
// positive group in PVE, which allows it one node rule: every
// member's node rule is the group's, named for its lowest VMID, and a member's own rule is
// folded into it. PVE accepts the result, and each member is then in sync.
func TestWantChainedPairsShareOneNodeRule(t *testing.T) {
	snap := cluster()
	snap.Guests = []scheduler.Guest{{VMID: 101, Node: "pve2", Tags: []string{"web"}}, {VMID: 501, Node: "pve2", Tags: []string{"side", "web"}},
		{VMID: 502, Node: "pve2", Tags: []string{"side"}}}
	managed := map[int]bool{101: true, 501: true, 502: true}
	nodes := []string{"pve1", "pve2", "pve3"}
	next := func(tag string) scheduler.Request {
		return scheduler.Request{VMAffinity: []scheduler.VMGroupTerm{{Tags: []string{tag}, TopologyKey: "node"}}}
	}
	// 502 has a node rule of its own first (its node-level rules).
	cur := Apply(nil, Changes(502, Want(Input{VMID: 502, Name: "c", Node: "pve2", Snap: snap, Managed: managed, PolicyNodes: nodes}), nil, managed))
	// 501 next to a web VM: 101. 502 next to a side VM: 501 (A-B, B-C).
	want501 := Want(Input{VMID: 501, Name: "b", Node: "pve2", Snap: snap, Managed: managed, PolicyNodes: nodes, Request: next("web"), Rules: cur})
	cur = Apply(cur, Changes(501, want501, cur, managed))
	want502 := Want(Input{VMID: 502, Name: "c", Node: "pve2", Snap: snap, Managed: managed, PolicyNodes: nodes, Request: next("side"), Rules: cur})
	cur = Apply(cur, Changes(502, want502, cur, managed))
	var nodeRules []scheduler.HARule
	for _, r := range cur {
		if r.Type == scheduler.HANodeAffinity {
			nodeRules = append(nodeRules, r)
		}
	}
	if len(nodeRules) != 1 || nodeRules[0].Name != NodeRuleName(101) || !reflect.DeepEqual(nodeRules[0].VMIDs, []int{101, 501, 502}) {
		t.Fatalf("node rules %+v, want one for the group 101, 501, 502", nodeRules)
	}
	if problems := Check(cur, len(snap.Nodes)); len(problems) != 0 {
		t.Errorf("PVE would refuse %v: %+v", problems, cur)
	}
	// 501 is held in 502's pair (502's record has the term), as the provider reads it.
	snap.Guests[2].Recorded = &scheduler.Recorded{Policy: next("side")}
	held := Held(501, []string{"side", "web"}, false, cur, snap, managed)
	want501 = Want(Input{VMID: 501, Name: "b", Node: "pve2", Snap: snap, Managed: managed, PolicyNodes: nodes, Request: next("web"), Rules: cur, PairedBy: []int{502}})
	if got := Changes(501, append(want501, held...), cur, managed); len(held) != 1 || len(got) != 0 {
		t.Errorf("501 after: %+v", got)
	}
	if got := Changes(502, want502, cur, managed); len(got) != 0 {
		t.Errorf("502 after: %+v", got)
	}
}

package plugins

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

func antiTerm(key string, weight int, tags ...string) []scheduler.VMGroupTerm {
	return []scheduler.VMGroupTerm{{Tags: tags, TopologyKey: key, Weight: weight}}
}

func TestVMAntiAffinityFilterByNode(t *testing.T) {
	nodes := []scheduler.Node{node("pve1", 8, 32), node("pve2", 8, 32), node("pve3", 8, 32), node("pve4", 8, 32)}
	stopped := tagged(1002, "pve2", "web")
	stopped.Status = "stopped"
	tmpl := tagged(1003, "pve3", "web")
	tmpl.Template = true
	ns := infos(nodes, tagged(1001, "pve1", "web"), stopped, tmpl, tagged(1004, "pve3", "db"))
	ns[3].Guests = append(ns[3].Guests, &scheduler.Guest{VMID: 1005, Node: "pve4", Tags: []string{"web"}, Assumed: true})
	r := request("web-9")
	r.VMAntiAffinity = antiTerm(TopologyNode, 0, "web")
	got := verdicts(t, newPlugin[scheduler.FilterPlugin](t, newVMAffinityFilter, nil), &r, ns)
	want := map[string]string{
		"pve1": "VMAntiAffinity: pve1 already runs 1 guest tagged [web]: 1001",
		"pve2": "VMAntiAffinity: pve2 already runs 1 guest tagged [web]: 1002",           // stopped guests count
		"pve3": "",                                                                       // templates never count; db is another group
		"pve4": "VMAntiAffinity: pve4 already runs 1 guest tagged [web]: 1005 (planned)", // placed earlier in the plan
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
}

// A guest being migrated is a member on its source and on its target (marked there), so
// anti-affinity keeps a new member off both.
func TestVMAntiAffinityCountsAMigrationOnBothNodes(t *testing.T) {
	moving := tagged(1001, "pve1", "web")
	moving.Lock, moving.MigratingTo = "migrate", "pve2"
	ns := infos([]scheduler.Node{node("pve1", 8, 32), node("pve2", 8, 32), node("pve3", 8, 32)}, moving)
	r := request("web-9")
	r.VMAntiAffinity = antiTerm(TopologyNode, 0, "web")
	got := verdicts(t, newPlugin[scheduler.FilterPlugin](t, newVMAffinityFilter, nil), &r, ns)
	want := map[string]string{
		"pve1": "VMAntiAffinity: pve1 already runs 1 guest tagged [web]: 1001",
		"pve2": "VMAntiAffinity: pve2 already runs 1 guest tagged [web]: 1001 (migrating here)",
		"pve3": "",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
}

// A node without the key is in no domain: it passes anti-affinity and fails affinity.
func TestVMAffinityFilterByZone(t *testing.T) {
	nodes := []scheduler.Node{zoned("pve1", "a"), zoned("pve2", "a"), zoned("pve3", "b"), zoned("pve4", "")}
	ns := infos(nodes, tagged(2001, "pve1", "db"), tagged(2002, "pve1", "db"), tagged(2003, "pve4", "db"))
	f := newPlugin[scheduler.FilterPlugin](t, newVMAffinityFilter, nil)

	anti := request("db-3")
	anti.VMAntiAffinity = antiTerm("zone", 0, "db")
	want := map[string]string{
		"pve1": "VMAntiAffinity: zone=a already runs 2 guests tagged [db]: 2001, 2002",
		"pve2": "VMAntiAffinity: zone=a already runs 2 guests tagged [db]: 2001, 2002",
		"pve3": "", "pve4": "",
	}
	if got := verdicts(t, f, &anti, ns); !reflect.DeepEqual(got, want) {
		t.Errorf("anti-affinity: got  %v\nwant %v", got, want)
	}

	aff := request("app")
	aff.VMAffinity = antiTerm("zone", 0, "db")
	want = map[string]string{
		"pve1": "", "pve2": "",
		"pve3": "VMAffinity: zone=b runs no guest tagged [db] (3 guests elsewhere)",
		"pve4": "VMAffinity: pve4 has no label zone, so it shares no domain with guests tagged [db]",
	}
	if got := verdicts(t, f, &aff, ns); !reflect.DeepEqual(got, want) {
		t.Errorf("affinity: got  %v\nwant %v", got, want)
	}
}

// The first member of an affinity group may go anywhere with the key; a VM outside the group
// cannot start it.
func TestVMAffinityFilterFirstMember(t *testing.T) {
	nodes := []scheduler.Node{zoned("pve1", "a"), zoned("pve2", "b"), zoned("pve3", "")}
	ns := infos(nodes, tagged(100, "pve1", "other"))
	f := newPlugin[scheduler.FilterPlugin](t, newVMAffinityFilter, nil)
	first := request("db-1")
	first.Tags = []string{"db"}
	first.VMAffinity = antiTerm("zone", 0, "db")
	got := verdicts(t, f, &first, ns)
	if got["pve1"] != "" || got["pve2"] != "" || !strings.Contains(got["pve3"], "has no label zone") {
		t.Errorf("first member: %v", got)
	}
	outsider := request("app")
	outsider.VMAffinity = antiTerm("zone", 0, "db")
	for n, reason := range verdicts(t, f, &outsider, ns) {
		if n != "pve3" && reason != "VMAffinity: no guest tagged [db] exists, and this VM does not carry those tags to start the group" {
			t.Errorf("%s: %q", n, reason)
		}
	}
}

func TestVMAffinityFilterProxLBPins(t *testing.T) {
	ns := infos(threeEqualNodes())
	r := request("a")
	r.Tags = []string{"plb_pin_pve2", "plb_pin_PVE3"}
	got := verdicts(t, newPlugin[scheduler.FilterPlugin](t, newVMAffinityFilter, nil), &r, ns)
	want := map[string]string{"pve1": "VMAffinity: ProxLB tags pin the VM to pve2, PVE3", "pve2": "", "pve3": ""}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	off := newPlugin[scheduler.FilterPlugin](t, newVMAffinityFilter, map[string]string{ProxLBTagsArg: "false"})
	if got := verdicts(t, off, &r, ns); got["pve1"] != "" {
		t.Errorf("honor_proxlb_tags off still pins: %v", got)
	}
}

// Preferred terms do not filter; with no required term the filter keeps no state.
func TestVMAffinityFilterIgnoresPreferredTerms(t *testing.T) {
	ns := infos(threeEqualNodes(), tagged(100, "pve1", "web"))
	r := request("a")
	r.VMAntiAffinity = antiTerm(TopologyNode, 50, "web")
	for n, reason := range verdicts(t, newPlugin[scheduler.FilterPlugin](t, newVMAffinityFilter, nil), &r, ns) {
		if reason != "" {
			t.Errorf("%s: %q", n, reason)
		}
	}
}

func webRequests(n int, change func(*scheduler.Request)) []scheduler.Request {
	reqs := make([]scheduler.Request, n)
	for i := range reqs {
		reqs[i] = request(fmt.Sprintf("web-%d", i+1))
		reqs[i].Tags = []string{"web"}
		change(&reqs[i])
	}
	return reqs
}

func nodeCounts(d scheduler.Decision) map[string]int {
	out := map[string]int{}
	for _, p := range d.Placements {
		out[p.Node]++
	}
	return out
}

// Earlier placements of one call are members: three web VMs with required anti-affinity take
// three nodes, and a fourth says why it cannot go anywhere and what to use instead.
func TestVMAntiAffinityMultiPlacement(t *testing.T) {
	p := mustProfile(scheduler.PluginConfig{})
	snap := scheduler.Snapshot{Nodes: threeEqualNodes()}
	anti := func(r *scheduler.Request) { r.VMAntiAffinity = antiTerm(TopologyNode, 0, "web") }
	d, err := p.Schedule(snap, webRequests(3, anti), scheduler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeCounts(d); len(got) != 3 {
		t.Fatalf("three VMs on %v", got)
	}
	_, err = p.Schedule(snap, webRequests(6, anti), scheduler.Options{})
	var ue *scheduler.UnschedulableError
	want := `cannot place "web-4": 0/3 nodes are available: 3 node(s) already run a guest tagged [web] (required vm_anti_affinity by node; all 3 nodes already run one, so no more VMs of the group can be kept apart: use topology_spread with max_skew = 1 to spread them evenly instead)`
	if !errors.As(err, &ue) || err.Error() != want {
		t.Fatalf("err = %v\nwant  %s", err, want)
	}
	for _, c := range ue.Candidates {
		if len(c.Reasons) != 1 || !strings.HasPrefix(c.Reasons[0], "VMAntiAffinity: "+c.Node+" already runs 1 guest tagged [web]: ") {
			t.Errorf("%s: %v", c.Node, c.Reasons)
		}
	}
}

// Sticky placement re-checks the group with the guest itself left out: a lone web VM stays,
// one sharing its node with another web VM is placed anew, and CheckNode says why.
func TestVMAntiAffinitySticky(t *testing.T) {
	p := mustProfile(scheduler.PluginConfig{})
	g1, g2 := tagged(101, "pve1", "web"), tagged(102, "pve1", "web")
	g1.Name, g2.Name = "web-1", "web-2"
	snap := scheduler.Snapshot{Nodes: threeEqualNodes(), Guests: []scheduler.Guest{g1, g2}}
	anti := func(r *scheduler.Request) { r.VMAntiAffinity = antiTerm(TopologyNode, 0, "web") }
	lone := scheduler.Snapshot{Nodes: snap.Nodes, Guests: []scheduler.Guest{g1}}
	d, err := p.Schedule(lone, webRequests(1, anti), scheduler.Options{Sticky: true})
	if err != nil || !d.Placements[0].Existing || d.Placements[0].Node != "pve1" {
		t.Fatalf("lone guest not kept: %+v %v", d.Placements, err)
	}
	d, err = p.Schedule(snap, webRequests(1, anti), scheduler.Options{Sticky: true})
	if err != nil || d.Placements[0].Existing || d.Placements[0].Node == "pve1" {
		t.Fatalf("guest sharing its node kept: %+v %v", d.Placements, err)
	}
	reasons := p.CheckNode(snap, webRequests(1, anti)[0], "pve1", 101)
	if want := []string{"VMAntiAffinity: pve1 already runs 1 guest tagged [web]: 102"}; !reflect.DeepEqual(reasons, want) {
		t.Errorf("CheckNode = %v, want %v", reasons, want)
	}
}

func TestVMAffinityScorePreferred(t *testing.T) {
	nodes := []scheduler.Node{zoned("pve1", "a"), zoned("pve2", "a"), zoned("pve3", "b"), zoned("pve4", "")}
	ns := infos(nodes, tagged(1, "pve1", "web"), tagged(2, "pve1", "web"), tagged(3, "pve3", "web"), tagged(4, "pve2", "db"))
	s := newPlugin[scheduler.ScorePlugin](t, newVMAffinityScore, nil)

	r := request("x")
	if got := scoreNodes(s, &r, ns); !reflect.DeepEqual(got, map[string]float64{"pve1": 0, "pve2": 0, "pve3": 0, "pve4": 0}) {
		t.Errorf("no terms: %v", got)
	}
	// Anti-affinity to web by node, weight 50, and affinity to db by zone, weight 100.
	r.VMAntiAffinity = antiTerm(TopologyNode, 50, "web")
	r.VMAffinity = antiTerm("zone", 100, "db")
	// Raw pve1 = -50*2 + 100*1 = 0, pve2 = 0 + 100 = 100, pve3 = -50, pve4 = 0 (no zone);
	// min-max over -50..100, truncated as kube: 100*50/150 = 33.
	want := map[string]float64{"pve1": 33, "pve2": 100, "pve3": 0, "pve4": 33}
	if got := scoreNodes(s, &r, ns); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	// Counted over every node: pve1 is not feasible, its web guests still weigh on zone a.
	r.VMAffinity, r.VMAntiAffinity = nil, antiTerm("zone", 10, "web")
	state := scheduler.NewCycleState()
	s.(scheduler.PreScorePlugin).PreScore(state, &r, ns[1:])
	if got := s.Score(state, &r, ns[1]); got != 0 {
		t.Errorf("feasible-only view: pve2 = %v, want 0 (members of zone a sit on pve1)", got)
	}
}

// A preference that cannot be met leaves the VM schedulable: every node already runs a web VM,
// so the score says nothing, and a node with fewer members wins over one with more.
func TestVMAntiAffinityPreferredCannotBeMet(t *testing.T) {
	snap := scheduler.Snapshot{Nodes: threeEqualNodes(), Guests: []scheduler.Guest{
		tagged(101, "pve1", "web"), tagged(102, "pve1", "web"), tagged(103, "pve2", "web"), tagged(104, "pve3", "web"), tagged(105, "pve3", "web")}}
	reqs := webRequests(1, func(r *scheduler.Request) { r.VMAntiAffinity = antiTerm(TopologyNode, 100, "web") })
	d, err := mustProfile(scheduler.PluginConfig{}).Schedule(snap, reqs, scheduler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pl := d.Placements[0]
	if pl.Node != "pve2" {
		t.Fatalf("placed on %s, want pve2 (1 web VM against 2)", pl.Node)
	}
	for _, c := range pl.Candidates {
		if want := map[string]float64{"pve1": 0, "pve2": 100, "pve3": 0}[c.Node]; c.Scores[VMAffinityName] != want {
			t.Errorf("%s: VMAffinity score %v, want %v", c.Node, c.Scores[VMAffinityName], want)
		}
	}
}

// ProxLB tags on existing guests and on the request: anti-affinity keeps apart, affinity draws
// together; the provider switch turns both off.
func TestVMAffinityScoreProxLB(t *testing.T) {
	ns := infos(threeEqualNodes(), tagged(1, "pve1", "plb_anti_affinity_web"), tagged(2, "pve3", "plb_affinity_db"))
	on := newPlugin[scheduler.ScorePlugin](t, newVMAffinityScore, nil)
	off := newPlugin[scheduler.ScorePlugin](t, newVMAffinityScore, map[string]string{ProxLBTagsArg: "false"})
	r := request("x")
	r.Tags = []string{"plb_anti_affinity_web"}
	if got := scoreNodes(on, &r, ns); !reflect.DeepEqual(got, map[string]float64{"pve1": 0, "pve2": 100, "pve3": 100}) {
		t.Errorf("anti-affinity: %v", got)
	}
	r.Tags = []string{"plb_affinity_db"}
	if got := scoreNodes(on, &r, ns); !reflect.DeepEqual(got, map[string]float64{"pve1": 0, "pve2": 0, "pve3": 100}) {
		t.Errorf("affinity: %v", got)
	}
	if got := scoreNodes(off, &r, ns); !reflect.DeepEqual(got, map[string]float64{"pve1": 0, "pve2": 0, "pve3": 0}) {
		t.Errorf("switched off: %v", got)
	}
}

// Placements of one decision see each other through their tags alone.
func TestVMAffinityRequiredFollowsEarlierPlacement(t *testing.T) {
	reqs := webRequests(3, func(r *scheduler.Request) {
		r.Tags = []string{"db"}
		r.VMAffinity = antiTerm(TopologyNode, 0, "db")
	})
	d, err := mustProfile(scheduler.PluginConfig{}).Schedule(scheduler.Snapshot{Nodes: threeEqualNodes()}, reqs, scheduler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeCounts(d); len(got) != 1 {
		t.Errorf("affinity group split over %v", got)
	}
}

func TestVMGroupsEmptyCluster(t *testing.T) {
	reqs := webRequests(1, func(r *scheduler.Request) {
		r.VMAntiAffinity = antiTerm(TopologyNode, 0, "web")
		r.TopologySpread = []scheduler.SpreadConstraint{{Tags: []string{"web"}, TopologyKey: TopologyNode, MaxSkew: 1, WhenUnsatisfiable: DoNotSchedule}}
	})
	_, err := mustProfile(scheduler.PluginConfig{}).Schedule(scheduler.Snapshot{}, reqs, scheduler.Options{})
	if err == nil || !strings.Contains(err.Error(), "0/0 nodes are available") {
		t.Fatalf("err = %v", err)
	}
	for _, f := range []scheduler.FilterPlugin{newPlugin[scheduler.FilterPlugin](t, newVMAffinityFilter, nil), topologySpreadFilter{}} {
		if got := verdicts(t, f, &reqs[0], nil); len(got) != 0 {
			t.Errorf("%s: %v", f.Name(), got)
		}
	}
}

// Members on a node that cannot take the VM still count for its zone: pve1 is offline but its
// two web VMs make zone a the fuller one, so the VM goes to zone b's pve3, not to pve2.
func TestVMAffinityScoreCountsInfeasibleNodes(t *testing.T) {
	nodes := []scheduler.Node{zoned("pve1", "a"), zoned("pve2", "a"), zoned("pve3", "b")}
	nodes[0].Online = false
	snap := scheduler.Snapshot{Nodes: nodes, Guests: []scheduler.Guest{tagged(101, "pve1", "web"), tagged(102, "pve1", "web"), tagged(103, "pve3", "web")}}
	reqs := webRequests(1, func(r *scheduler.Request) { r.VMAntiAffinity = antiTerm("zone", 100, "web") })
	d, err := mustProfile(scheduler.PluginConfig{}).Schedule(snap, reqs, scheduler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Placements[0].Node != "pve3" {
		t.Errorf("placed on %s, want pve3", d.Placements[0].Node)
	}
}

package plugins

import (
	"reflect"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

func spreadOf(key string, maxSkew int, when string, tags ...string) []scheduler.SpreadConstraint {
	return []scheduler.SpreadConstraint{{Tags: tags, TopologyKey: key, MaxSkew: maxSkew, WhenUnsatisfiable: when}}
}

// guestsIn puts n web guests on each node, ids from base.
func guestsIn(base int, perNode map[string]int) []scheduler.Guest {
	var out []scheduler.Guest
	for _, name := range []string{"pve1", "pve2", "pve3", "pve4", "pve5"} {
		for i := 0; i < perNode[name]; i++ {
			out = append(out, tagged(base, name, "web"))
			base++
		}
	}
	return out
}

// Zones a=2, b=1, c=1 and max_skew 1: zone a would hold 3 against a minimum of 1.
func TestTopologySpreadFilterByZone(t *testing.T) {
	nodes := []scheduler.Node{zoned("pve1", "a"), zoned("pve2", "b"), zoned("pve3", "c"), zoned("pve4", "")}
	ns := infos(nodes, guestsIn(100, map[string]int{"pve1": 2, "pve2": 1, "pve3": 1, "pve4": 5})...)
	r := request("web-9")
	r.Tags = []string{"web"}
	r.TopologySpread = spreadOf("zone", 1, DoNotSchedule, "web")
	want := map[string]string{
		"pve1": "TopologySpread: zone=a would hold 3 of [web], min 1, skew 2 > 1",
		"pve2": "", "pve3": "",
		"pve4": "TopologySpread: pve4 has no label zone, which the spread of [web] needs",
	}
	if got := verdicts(t, topologySpreadFilter{}, &r, ns); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}

// Skew exactly at max_skew passes; one more fails.
func TestTopologySpreadFilterBoundary(t *testing.T) {
	ns := infos(threeEqualNodes(), guestsIn(100, map[string]int{"pve1": 2, "pve2": 1})...)
	r := request("web-9")
	r.Tags = []string{"web"}
	r.TopologySpread = spreadOf(TopologyNode, 2, DoNotSchedule, "web")
	want := map[string]string{"pve1": "TopologySpread: pve1 would hold 3 of [web], min 0, skew 3 > 2", "pve2": "", "pve3": ""}
	if got := verdicts(t, topologySpreadFilter{}, &r, ns); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	// A VM outside the group does not join the count: pve1 holds 2, skew 2 = max_skew.
	r.Tags = nil
	if got := verdicts(t, topologySpreadFilter{}, &r, ns); got["pve1"] != "" {
		t.Errorf("non-member: %v", got)
	}
}

// Stopped and assumed members count, templates do not.
func TestTopologySpreadFilterCounting(t *testing.T) {
	stopped := tagged(100, "pve1", "web")
	stopped.Status = "stopped"
	tmpl := tagged(101, "pve2", "web")
	tmpl.Template = true
	ns := infos(threeEqualNodes(), stopped, tmpl)
	ns[2].Guests = append(ns[2].Guests, &scheduler.Guest{VMID: 102, Node: "pve3", Tags: []string{"web"}, Assumed: true})
	r := request("web-9")
	r.Tags = []string{"web"}
	r.TopologySpread = spreadOf(TopologyNode, 1, DoNotSchedule, "web")
	want := map[string]string{
		"pve1": "TopologySpread: pve1 would hold 2 of [web], min 0, skew 2 > 1",
		"pve2": "",
		"pve3": "TopologySpread: pve3 would hold 2 of [web], min 0, skew 2 > 1",
	}
	if got := verdicts(t, topologySpreadFilter{}, &r, ns); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}

// A domain whose only node is offline, tainted or outside the node selector is not eligible:
// it cannot pin the minimum at 0. A toleration makes the tainted one eligible again.
func TestTopologySpreadEligibleDomains(t *testing.T) {
	counts := map[string]int{"pve1": 2, "pve2": 1}
	r := request("web-9")
	r.Tags = []string{"web"}
	r.TopologySpread = spreadOf("zone", 1, DoNotSchedule, "web")
	cases := []struct {
		name     string
		change   func(n *scheduler.Node, r *scheduler.Request)
		pve2Pass bool
	}{
		{"eligible", func(*scheduler.Node, *scheduler.Request) {}, false},
		{"offline", func(n *scheduler.Node, _ *scheduler.Request) { n.Online = false }, true},
		{"tainted", func(n *scheduler.Node, _ *scheduler.Request) {
			n.Taints = []scheduler.Taint{{Key: "node.qemu-scheduler/maintenance", Effect: "NoSchedule"}}
		}, true},
		{"tainted, tolerated", func(n *scheduler.Node, r *scheduler.Request) {
			n.Taints = []scheduler.Taint{{Key: "dedicated", Value: "db", Effect: "NoExecute"}}
			r.Tolerations = []scheduler.Toleration{{Key: "dedicated", Value: "db"}}
		}, false},
		{"prefer-no-schedule taint", func(n *scheduler.Node, _ *scheduler.Request) {
			n.Taints = []scheduler.Taint{{Key: "old-hw", Effect: "PreferNoSchedule"}}
		}, false},
		{"node selector", func(_ *scheduler.Node, r *scheduler.Request) { r.NodeSelector = map[string]string{"disk": "nvme"} }, true},
		{"required node affinity", func(_ *scheduler.Node, r *scheduler.Request) {
			r.NodeAffinity = []scheduler.NodeAffinityTerm{scheduler.Expression(0, "zone", "NotIn", "c")}
		}, true},
		{"preferred node affinity", func(_ *scheduler.Node, r *scheduler.Request) {
			r.NodeAffinity = []scheduler.NodeAffinityTerm{scheduler.Expression(10, "zone", "NotIn", "c")}
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nodes := []scheduler.Node{zoned("pve1", "a"), zoned("pve2", "b"), zoned("pve3", "c")}
			for _, n := range nodes[:2] {
				n.Labels["disk"] = "nvme"
			}
			req := r
			tc.change(&nodes[2], &req)
			got := verdicts(t, topologySpreadFilter{}, &req, infos(nodes, guestsIn(100, counts)...))
			if (got["pve2"] == "") != tc.pve2Pass {
				t.Errorf("pve2: %q, want pass %v", got["pve2"], tc.pve2Pass)
			}
		})
	}
}

// count = 6 with max_skew 1 lands 2-2-2, by node and by zone.
func TestTopologySpreadMultiPlacement(t *testing.T) {
	p := mustProfile(scheduler.PluginConfig{})
	for _, tc := range []struct {
		name  string
		nodes []scheduler.Node
		key   string
		zone  map[string]string
	}{
		{"node", threeEqualNodes(), TopologyNode, map[string]string{"pve1": "pve1", "pve2": "pve2", "pve3": "pve3"}},
		{"zone", []scheduler.Node{zoned("pve1", "a"), zoned("pve2", "a"), zoned("pve3", "b"), zoned("pve4", "c")}, "zone",
			map[string]string{"pve1": "a", "pve2": "a", "pve3": "b", "pve4": "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A bigger first node would take every VM on capacity alone.
			tc.nodes[0].MaxMem *= 4
			tc.nodes[0].MaxCPU *= 4
			reqs := webRequests(6, func(r *scheduler.Request) {
				r.TopologySpread = spreadOf(tc.key, 1, DoNotSchedule, "web")
			})
			d, err := p.Schedule(scheduler.Snapshot{Nodes: tc.nodes}, reqs, scheduler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			perDomain := map[string]int{}
			for n, c := range nodeCounts(d) {
				perDomain[tc.zone[n]] += c
			}
			for dom, c := range perDomain {
				if c != 2 {
					t.Errorf("domain %s holds %d, want 2 (all: %v)", dom, c, perDomain)
				}
			}
			if len(perDomain) != 3 {
				t.Errorf("domains used: %v", perDomain)
			}
		})
	}
}

// ScheduleAnyway: kube's formula, reversed so the emptiest domain scores 100; a node without
// the key scores 0; without spreads every node scores 0.
func TestTopologySpreadScore(t *testing.T) {
	nodes := []scheduler.Node{node("pve1", 8, 32), node("pve2", 8, 32), node("pve3", 8, 32)}
	ns := infos(nodes, guestsIn(100, map[string]int{"pve1": 2, "pve2": 1})...)
	r := request("web-9")
	if got := scoreNodes(topologySpreadScore{}, &r, ns); !reflect.DeepEqual(got, map[string]float64{"pve1": 0, "pve2": 0, "pve3": 0}) {
		t.Errorf("no spread: %v", got)
	}
	r.TopologySpread = spreadOf(TopologyNode, 1, ScheduleAnyway, "web")
	got := scoreNodes(topologySpreadScore{}, &r, ns)
	// Raw pve1 = round(2*ln5) = 3, pve2 = round(ln5) = 2, pve3 = 0: 100*(3+0-2)/3 = 33.
	if got["pve1"] != 0 || got["pve2"] != 33 || got["pve3"] != 100 {
		t.Errorf("by node: %v", got)
	}
	// DoNotSchedule spreads are the filter's, not scored.
	r.TopologySpread = spreadOf(TopologyNode, 1, DoNotSchedule, "web")
	if got := scoreNodes(topologySpreadScore{}, &r, ns); got["pve3"] != 0 || got["pve1"] != 0 {
		t.Errorf("DoNotSchedule scored: %v", got)
	}

	zones := []scheduler.Node{zoned("pve1", "a"), zoned("pve2", "b"), zoned("pve3", "")}
	r.TopologySpread = spreadOf("zone", 2, ScheduleAnyway, "web")
	got = scoreNodes(topologySpreadScore{}, &r, infos(zones, guestsIn(100, map[string]int{"pve1": 1})...))
	// pve3 lacks the key: ignored, so the weight is ln(2 zones + 2). Raw a = round(ln4 + 1) = 2,
	// b = 0 + 1: b scores 100, a 100*(2+1-2)/2 = 50.
	if got["pve1"] != 50 || got["pve2"] != 100 || got["pve3"] != 0 {
		t.Errorf("by zone: %v", got)
	}
}

// A node outside every domain still takes a VM whose spread is ScheduleAnyway; under
// DoNotSchedule it does not, and the message says which label is missing.
func TestTopologySpreadMissingKeyByKind(t *testing.T) {
	snap := scheduler.Snapshot{Nodes: []scheduler.Node{zoned("pve1", "")}}
	p := mustProfile(scheduler.PluginConfig{})
	anyway := webRequests(1, func(r *scheduler.Request) { r.TopologySpread = spreadOf("zone", 1, ScheduleAnyway, "web") })
	if d, err := p.Schedule(snap, anyway, scheduler.Options{}); err != nil || d.Placements[0].Node != "pve1" {
		t.Fatalf("ScheduleAnyway: %+v %v", d, err)
	}
	strict := webRequests(1, func(r *scheduler.Request) { r.TopologySpread = spreadOf("zone", 1, DoNotSchedule, "web") })
	_, err := p.Schedule(snap, strict, scheduler.Options{})
	if want := `cannot place "web-1": 0/1 nodes are available: 1 node(s) have no label zone (topology_spread)`; err == nil || err.Error() != want {
		t.Fatalf("DoNotSchedule: %v\nwant %s", err, want)
	}
}

// A reservation whose guest the snapshot already lists stands for that guest, counted once
// and with the tags it is being given: 101 is a clone still being set up, with its source's
// tags so far, so pve1 holds one web VM, not zero or two.
func TestTopologySpreadReservedGuestCountsOnce(t *testing.T) {
	cloning := tagged(101, "pve1", "template")
	cloning.Status, cloning.Lock = "stopped", "clone"
	snap := scheduler.Snapshot{Nodes: threeEqualNodes(), Guests: []scheduler.Guest{cloning, tagged(102, "pve2", "web")},
		Reservations: []scheduler.Reservation{{VMID: 101, Node: "pve1", Name: "web-1", VCPUs: 1, MemoryMiB: 1024, Tags: []string{"web"}}}}
	reqs := webRequests(1, func(r *scheduler.Request) { r.TopologySpread = spreadOf(TopologyNode, 1, DoNotSchedule, "web") })
	d, err := mustProfile(scheduler.PluginConfig{}).Schedule(snap, reqs, scheduler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(d.Placements[0].Candidates[0].Reasons, "; "); got != "TopologySpread: pve1 would hold 2 of [web], min 0, skew 2 > 1" {
		t.Errorf("pve1: %s", got)
	}
	ns := scheduler.NodeInfos(&snap)
	if len(ns[0].Guests) != 1 || !ns[0].Guests[0].Assumed || ns[0].AllocMem != 1<<30 {
		t.Errorf("pve1 lists %d guests, allocates %d bytes; want the reservation alone, its 1 GiB counted", len(ns[0].Guests), ns[0].AllocMem)
	}
}

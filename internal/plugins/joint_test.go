package plugins

import (
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// ratioOne is the plugin config of the clusters: no overcommit of CPUs either.
func ratioOne() scheduler.PluginConfig {
	return scheduler.PluginConfig{Filters: map[string]scheduler.PluginSetting{CPUOvercommitName: {Args: map[string]string{"ratio": "1"}}}}
}

func sized(name string, cores, memGiB int) scheduler.Request {
	r := request(name)
	r.Cores, r.MemoryMiB = cores, memGiB*1024
	return r
}

// replicas are count = n VMs named web-0.. of one size, carrying the web tag.
func replicas(n, cores, memGiB int) []scheduler.Request {
	reqs := make([]scheduler.Request, n)
	for i := range reqs {
		reqs[i] = sized(fmt.Sprintf("web-%d", i), cores, memGiB)
		reqs[i].Tags = []string{"web"}
	}
	return reqs
}

func setError(t *testing.T, err error) *scheduler.SetError {
	t.Helper()
	var se *scheduler.SetError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want a *SetError", err)
	}
	var ue *scheduler.UnschedulableError
	if !errors.As(err, &ue) || ue.Request == "" || len(ue.Candidates) == 0 {
		t.Fatalf("the SetError does not unwrap to the per-node explanation: %#v", err)
	}
	return se
}

// count = 4 with required anti-affinity on 3 nodes: three fit, the fourth is explained with
// the other three placed, and the error says what keeps replicas apart.
func TestScheduleSetAntiAffinityCountTooLarge(t *testing.T) {
	reqs := replicas(4, 1, 1)
	for i := range reqs {
		reqs[i].VMAntiAffinity = antiTerm(TopologyNode, 0, "web")
	}
	_, err := mustProfile(scheduler.PluginConfig{}).ScheduleSet(scheduler.Snapshot{Nodes: threeEqualNodes()}, reqs, scheduler.Options{})
	se := setError(t, err)
	if se.Placed != 3 || se.Total != 4 || !reflect.DeepEqual(se.Unplaced, []string{"web-3"}) || se.Request != "web-3" {
		t.Fatalf("placed %d of %d, unplaced %v, request %s; want 3 of 4, [web-3]", se.Placed, se.Total, se.Unplaced, se.Request)
	}
	for _, want := range []string{
		"0/3 nodes are available: 3 node(s) already run a guest tagged [web]",
		"only 3 of the plan's 4 new VMs can be placed together; cannot place: web-3",
		"topology_spread with max_skew = 1 lets replicas share domains",
		// The smallest cause: the group alone cannot be kept apart.
		"cause: web-3 with vm_anti_affinity [web] by node: 4 members, 3 eligible nodes",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%s", want, err)
		}
	}
	for _, c := range se.Candidates {
		if c.Feasible || !strings.HasPrefix(c.Reasons[0], "VMAntiAffinity: "+c.Node+" already runs 1 guest tagged [web]") {
			t.Errorf("candidate %s: %v, want refused by the anti-affinity with one replica there", c.Node, c.Reasons)
		}
	}
}

// count = 7 x 2 vCPU with 12 vCPUs free: six fit, whatever the order.
func TestScheduleSetCPUCountTooLarge(t *testing.T) {
	nodes := []scheduler.Node{node("pve1", 4, 32), node("pve2", 4, 32), node("pve3", 4, 32)}
	_, err := mustProfile(ratioOne()).ScheduleSet(scheduler.Snapshot{Nodes: nodes}, replicas(7, 2, 1), scheduler.Options{})
	se := setError(t, err)
	if se.Placed != 6 || se.Total != 7 || !reflect.DeepEqual(se.Unplaced, []string{"web-6"}) {
		t.Fatalf("placed %d of %d, unplaced %v; want 6 of 7, [web-6]", se.Placed, se.Total, se.Unplaced)
	}
	if strings.Contains(err.Error(), "topology_spread") {
		t.Errorf("the anti-affinity hint is given for a capacity failure:\n%s", err)
	}
	if want := "3 node(s) exceeded cpu overcommit ratio 1"; !strings.Contains(err.Error(), want) {
		t.Errorf("error lacks %q:\n%s", want, err)
	}
}

// Three 5 GiB and three 3 GiB VMs on three 8 GiB nodes have exactly one packing (a 5 and a 3
// per node): every order of the requests finds it, with the same VMIDs in request order.
func TestScheduleSetMixedSizesEveryOrder(t *testing.T) {
	nodes := []scheduler.Node{node("pve1", 8, 8), node("pve2", 8, 8), node("pve3", 8, 8)}
	base := []scheduler.Request{sized("big-0", 1, 5), sized("big-1", 1, 5), sized("big-2", 1, 5), sized("small-0", 1, 3), sized("small-1", 1, 3), sized("small-2", 1, 3)}
	p := mustProfile(scheduler.PluginConfig{})
	greedyFailed := 0
	for _, perm := range permutations(len(base)) {
		reqs := make([]scheduler.Request, len(base))
		for i, j := range perm {
			reqs[i] = base[j]
		}
		if _, err := p.Schedule(scheduler.Snapshot{Nodes: nodes}, reqs, scheduler.Options{}); err != nil {
			greedyFailed++
		}
		d, err := p.ScheduleSet(scheduler.Snapshot{Nodes: nodes}, reqs, scheduler.Options{})
		if err != nil {
			t.Fatalf("order %v: %v", names(reqs), err)
		}
		perNode := map[string]int{}
		for i, pl := range d.Placements {
			if pl.Name != reqs[i].Name || pl.VMID != 100+i {
				t.Fatalf("order %v: placement %d is %s/%d, want %s/%d", names(reqs), i, pl.Name, pl.VMID, reqs[i].Name, 100+i)
			}
			perNode[pl.Node] += reqs[i].MemoryMiB
		}
		for n, mib := range perNode {
			if mib != 8*1024 {
				t.Fatalf("order %v: %s holds %d MiB, want a 5 and a 3 GiB VM", names(reqs), n, mib)
			}
		}
	}
	// The test is only worth something if arrival order strands a VM in some orders.
	if greedyFailed == 0 {
		t.Fatal("the greedy pass placed every order: the joint search was not exercised")
	}
}

// Two 4-core VMs fill two 4-CPU nodes: a set of two more fails with none placed, and once the
// old ones are out of the snapshot (they are being replaced), the set fits.
func TestScheduleSetFullNodesAndReplacements(t *testing.T) {
	nodes := []scheduler.Node{node("pve1", 4, 32), node("pve2", 4, 32)}
	old := []scheduler.Guest{running(100, "pve1", 4, 4), running(101, "pve2", 4, 4)}
	reqs := []scheduler.Request{sized("a", 4, 4), sized("b", 4, 4)}
	p := mustProfile(ratioOne())
	_, err := p.ScheduleSet(scheduler.Snapshot{Nodes: nodes, Guests: old}, reqs, scheduler.Options{})
	if se := setError(t, err); se.Placed != 0 || !reflect.DeepEqual(se.Unplaced, []string{"a", "b"}) {
		t.Fatalf("placed %d, unplaced %v; want 0 and [a b]", se.Placed, se.Unplaced)
	}
	d, err := p.ScheduleSet(scheduler.Snapshot{Nodes: nodes}, reqs, scheduler.Options{})
	if err != nil || d.Placements[0].Node == d.Placements[1].Node {
		t.Fatalf("replacements on an emptied cluster: %+v, %v", d.Placements, err)
	}
}

// An existing guest kept in place (sticky) is not part of the search: the new VMs are packed
// around it, and the set line counts the new VMs only.
func TestScheduleSetKeepsStickyGuests(t *testing.T) {
	nodes := []scheduler.Node{node("pve1", 8, 8), node("pve2", 8, 8)}
	kept := running(100, "pve1", 1, 3)
	kept.Name = "small-0"
	reqs := []scheduler.Request{sized("small-0", 1, 3), sized("small-1", 1, 3), sized("big-0", 1, 5), sized("big-1", 1, 5)}
	d, err := mustProfile(scheduler.PluginConfig{}).ScheduleSet(scheduler.Snapshot{Nodes: nodes, Guests: []scheduler.Guest{kept}}, reqs, scheduler.Options{Sticky: true})
	if err != nil {
		t.Fatal(err)
	}
	if pl := d.Placements[0]; !pl.Existing || pl.Node != "pve1" || pl.VMID != 100 {
		t.Fatalf("the existing guest was not kept: %+v", pl)
	}
	if d.Placements[1].Node != "pve2" || d.Placements[2].Node == d.Placements[3].Node {
		t.Fatalf("placements %v, want small-1 on pve2 and one big VM per node", summaries(d))
	}
	reqs = append(reqs, sized("big-2", 1, 5))
	_, err = mustProfile(scheduler.PluginConfig{}).ScheduleSet(scheduler.Snapshot{Nodes: nodes, Guests: []scheduler.Guest{kept}}, reqs, scheduler.Options{Sticky: true})
	if se := setError(t, err); se.Placed != 3 || se.Total != 4 {
		t.Fatalf("placed %d of %d, want 3 of the 4 new VMs", se.Placed, se.Total)
	}
}

// VMs that require the company of a VM of the same set listed after them: the greedy pass
// refuses the first, the joint search places the group's VM first. The db node has room for
// one app only, so the second goes... nowhere: the required affinity pins both to the db's
// node, and the set line counts what fits.
func TestScheduleSetAffinityWithinTheSet(t *testing.T) {
	nodes := []scheduler.Node{node("pve1", 8, 8), node("pve2", 8, 8)}
	app := func(name string) scheduler.Request {
		r := sized(name, 1, 2)
		r.VMAffinity = antiTerm(TopologyNode, 0, "db")
		return r
	}
	db := sized("db", 1, 4)
	db.Tags = []string{"db"}
	p := mustProfile(scheduler.PluginConfig{})
	reqs := []scheduler.Request{app("app-0"), app("app-1"), db}
	if _, err := p.Schedule(scheduler.Snapshot{Nodes: nodes}, reqs, scheduler.Options{}); err == nil {
		t.Fatal("the greedy pass placed an app before its db")
	}
	d, err := p.ScheduleSet(scheduler.Snapshot{Nodes: nodes}, reqs, scheduler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Placements[0].Node != d.Placements[2].Node || d.Placements[1].Node != d.Placements[2].Node {
		t.Fatalf("apps not with their db: %v", summaries(d))
	}
	_, err = p.ScheduleSet(scheduler.Snapshot{Nodes: nodes}, append(reqs, app("app-2")), scheduler.Options{})
	if se := setError(t, err); se.Placed != 3 || !reflect.DeepEqual(se.Unplaced, []string{"app-2"}) {
		t.Fatalf("placed %d, unplaced %v; want 3 and [app-2]", se.Placed, se.Unplaced)
	}
}

// A DoNotSchedule spread by node over two nodes of which one has room for one VM only: the
// spread lets at most a skew of 1, so three VMs fit (2 + 1) and four do not.
func TestScheduleSetSpreadWithCapacity(t *testing.T) {
	nodes := []scheduler.Node{node("pve1", 8, 2), node("pve2", 8, 16)}
	set := func(n int) []scheduler.Request {
		reqs := replicas(n, 1, 2)
		for i := range reqs {
			reqs[i].TopologySpread = spreadOf(TopologyNode, 1, DoNotSchedule, "web")
		}
		return reqs
	}
	p := mustProfile(scheduler.PluginConfig{})
	if _, err := p.ScheduleSet(scheduler.Snapshot{Nodes: nodes}, set(3), scheduler.Options{}); err != nil {
		t.Fatal(err)
	}
	_, err := p.ScheduleSet(scheduler.Snapshot{Nodes: nodes}, set(4), scheduler.Options{})
	if se := setError(t, err); se.Placed != 3 || se.Total != 4 {
		t.Fatalf("placed %d of %d, want 3 of 4", se.Placed, se.Total)
	}
}

// The same inputs give the same decision, through the joint search too.
func TestScheduleSetIsDeterministic(t *testing.T) {
	nodes := []scheduler.Node{node("pve1", 8, 8), node("pve2", 8, 8), node("pve3", 8, 8)}
	// An order the greedy pass strands a 5 GiB VM in.
	reqs := []scheduler.Request{sized("s-0", 1, 3), sized("b-0", 1, 5), sized("s-1", 1, 3), sized("s-2", 1, 3), sized("b-1", 1, 5), sized("b-2", 1, 5)}
	p := mustProfile(scheduler.PluginConfig{})
	first, err := p.ScheduleSet(scheduler.Snapshot{Nodes: nodes}, reqs, scheduler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		again, err := p.ScheduleSet(scheduler.Snapshot{Nodes: nodes}, reqs, scheduler.Options{})
		if err != nil || !reflect.DeepEqual(first, again) {
			t.Fatalf("run %d differs: %v vs %v (%v)", i+2, summaries(first), summaries(again), err)
		}
	}
	if !strings.Contains(first.Placements[0].Summary, "placed jointly") {
		t.Fatalf("the greedy pass placed the set; the joint search was not exercised: %v", summaries(first))
	}
}

// Random small sets against an exhaustive search: every set it places, ScheduleSet places, and
// every placement ScheduleSet returns passes the hard filters with the rest of the set in
// place.
func TestScheduleSetAgainstExhaustiveSearch(t *testing.T) {
	rng := rand.New(rand.NewSource(20))
	p := mustProfile(ratioOne())
	var fits, refused, joint int
	for inst := 0; inst < 300; inst++ {
		snap, reqs := randomInstance(rng)
		most := largestSubset(p, snap, reqs)
		exists := most == len(reqs)
		d, err := p.ScheduleSet(snap, reqs, scheduler.Options{})
		switch {
		case err == nil:
			fits++
			if _, greedy := p.Schedule(snap, reqs, scheduler.Options{}); greedy != nil {
				joint++
			}
			checkPlacements(t, p, snap, reqs, d)
		case exists:
			t.Fatalf("instance %d: the exhaustive search places the set, ScheduleSet says: %v\n%s", inst, err, describeInstance(snap, reqs))
		default:
			refused++
			var se *scheduler.SetError
			if !errors.As(err, &se) || se.Placed >= se.Total || len(se.Unplaced) != se.Total-se.Placed {
				t.Fatalf("instance %d: %v", inst, err)
			}
			if se.Placed != most {
				t.Fatalf("instance %d: %d placed, the exhaustive search places %d:\n%s", inst, se.Placed, most, describeInstance(snap, reqs))
			}
		}
		if err == nil && !exists {
			t.Fatalf("instance %d: ScheduleSet placed a set the exhaustive search refuses:\n%s", inst, describeInstance(snap, reqs))
		}
	}
	if fits < 60 || refused < 60 || joint < 10 {
		t.Fatalf("%d sets fit (%d of them only jointly) and %d do not: the instances do not test every side", fits, joint, refused)
	}
	t.Logf("%d sets fit (%d of them only jointly), %d do not", fits, joint, refused)
}

// Random small sets with terms whose verdict a later placement can turn (a DoNotSchedule
// spread, a required affinity) beside anti-affinity, against every assignment of nodes
// checked with the whole set in place: ScheduleSet places exactly the sets that some
// assignment places, and counts the most VMs that fit together.
func TestScheduleSetSpreadAndAffinityAgainstExhaustiveSearch(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	p := mustProfile(ratioOne())
	var fits, refused int
	for inst := 0; inst < 150; inst++ {
		var snap scheduler.Snapshot
		for i := 0; i < 2+rng.Intn(2); i++ {
			snap.Nodes = append(snap.Nodes, node(fmt.Sprintf("pve%d", i+1), 2+2*rng.Intn(3), uint64(2+2*rng.Intn(4))))
			if rng.Intn(4) == 0 {
				g := running(900+i, snap.Nodes[i].Name, 1, 1)
				g.Tags = []string{"s"}
				snap.Guests = append(snap.Guests, g)
			}
		}
		reqs := make([]scheduler.Request, 2+rng.Intn(4))
		for i := range reqs {
			reqs[i] = sized(fmt.Sprintf("vm-%d", i), 1+rng.Intn(2), 1+rng.Intn(3))
			switch rng.Intn(4) {
			case 0:
				reqs[i].Tags = []string{"s"}
				reqs[i].TopologySpread = spreadOf(TopologyNode, 1, DoNotSchedule, "s")
			case 1:
				reqs[i].VMAffinity = antiTerm(TopologyNode, 0, "s")
			case 2:
				reqs[i].Tags = []string{"a"}
				reqs[i].VMAntiAffinity = antiTerm(TopologyNode, 0, "a")
			}
		}
		most := wholeSetSubset(p, snap, reqs, make([]int, len(reqs)), 0)
		d, err := p.ScheduleSet(snap, reqs, scheduler.Options{})
		switch {
		case err == nil && most == len(reqs):
			fits++
			checkPlacements(t, p, snap, reqs, d)
		case err == nil:
			t.Fatalf("instance %d: ScheduleSet placed a set no assignment places:\n%v\n%s", inst, summaries(d), describeInstance(snap, reqs))
		case most == len(reqs):
			t.Fatalf("instance %d: an assignment places the set, ScheduleSet says: %v\n%s", inst, err, describeInstance(snap, reqs))
		default:
			refused++
			var se *scheduler.SetError
			if !errors.As(err, &se) || se.Placed != most {
				t.Fatalf("instance %d: %v; %d fit together\n%s", inst, err, most, describeInstance(snap, reqs))
			}
		}
	}
	if fits < 30 || refused < 30 {
		t.Fatalf("%d sets fit and %d do not: the instances do not test both sides", fits, refused)
	}
	t.Logf("%d sets fit, %d do not", fits, refused)
}

// wholeSetSubset is the most requests that fit together, each checked beside all the others
// placed: at[i] is request i's node index plus one (0: left out), tried for every request
// from i on.
func wholeSetSubset(p *scheduler.Profile, snap scheduler.Snapshot, reqs []scheduler.Request, at []int, i int) int {
	if i < len(reqs) {
		most := 0
		for n := 0; n <= len(snap.Nodes); n++ {
			at[i] = n
			most = max(most, wholeSetSubset(p, snap, reqs, at, i+1))
		}
		return most
	}
	all := snap
	all.Guests = append([]scheduler.Guest(nil), snap.Guests...)
	placed := 0
	for j, n := range at {
		if n > 0 {
			all.Guests = append(all.Guests, placedGuest(reqs[j], snap.Nodes[n-1].Name, 10000+j))
			placed++
		}
	}
	for j, n := range at {
		if n > 0 && p.CheckNode(all, reqs[j], snap.Nodes[n-1].Name, 10000+j) != nil {
			return 0
		}
	}
	return placed
}

// randomInstance is 2-4 nodes of random size with a few guests, and 2-7 VMs of random size,
// some of them kept apart by a required anti-affinity.
func randomInstance(rng *rand.Rand) (scheduler.Snapshot, []scheduler.Request) {
	var snap scheduler.Snapshot
	for i := 0; i < 2+rng.Intn(3); i++ {
		snap.Nodes = append(snap.Nodes, node(fmt.Sprintf("pve%d", i+1), 2+2*rng.Intn(3), uint64(4+4*rng.Intn(3))))
		if rng.Intn(3) == 0 {
			snap.Guests = append(snap.Guests, running(900+i, snap.Nodes[i].Name, 1, 1+uint64(rng.Intn(2))))
		}
	}
	reqs := make([]scheduler.Request, 2+rng.Intn(6))
	for i := range reqs {
		reqs[i] = sized(fmt.Sprintf("vm-%d", i), 1+rng.Intn(3), 1+rng.Intn(5))
		if rng.Intn(3) == 0 {
			reqs[i].Tags = []string{"apart"}
			reqs[i].VMAntiAffinity = antiTerm(TopologyNode, 0, "apart")
		}
	}
	return snap, reqs
}

// largestSubset is the most requests that fit together: each request in turn is left out or
// placed on a node that passes, cut where the rest cannot beat the best found.
func largestSubset(p *scheduler.Profile, snap scheduler.Snapshot, reqs []scheduler.Request) int {
	return subsetFrom(p, snap, reqs, 0, 0)
}

func subsetFrom(p *scheduler.Profile, snap scheduler.Snapshot, reqs []scheduler.Request, placed, best int) int {
	if placed+len(reqs) <= best {
		return best
	}
	if len(reqs) == 0 {
		return placed
	}
	r := reqs[0]
	for _, n := range snap.Nodes {
		if p.CheckNode(snap, r, n.Name, 0) != nil {
			continue
		}
		next := snap
		next.Guests = append(append([]scheduler.Guest(nil), snap.Guests...), placedGuest(r, n.Name, 10000+len(snap.Guests)))
		best = max(best, subsetFrom(p, next, reqs[1:], placed+1, best))
	}
	return max(best, subsetFrom(p, snap, reqs[1:], placed, best))
}

func placedGuest(r scheduler.Request, node string, vmid int) scheduler.Guest {
	return scheduler.Guest{VMID: vmid, Node: node, Name: r.Name, Type: scheduler.GuestQEMU, Status: "running",
		CPUs: float64(r.VCPUs()), MaxMem: uint64(r.MemoryMiB) * scheduler.MiB, Tags: r.Tags}
}

// checkPlacements checks every placement with the whole set placed, itself left out.
func checkPlacements(t *testing.T, p *scheduler.Profile, snap scheduler.Snapshot, reqs []scheduler.Request, d scheduler.Decision) {
	t.Helper()
	all := snap
	all.Guests = append([]scheduler.Guest(nil), snap.Guests...)
	for i, pl := range d.Placements {
		all.Guests = append(all.Guests, placedGuest(reqs[i], pl.Node, pl.VMID))
	}
	for i, pl := range d.Placements {
		if reasons := p.CheckNode(all, reqs[i], pl.Node, pl.VMID); reasons != nil {
			t.Fatalf("%s on %s fails with the set placed: %v\n%s", pl.Name, pl.Node, reasons, describeInstance(snap, reqs))
		}
	}
}

func describeInstance(snap scheduler.Snapshot, reqs []scheduler.Request) string {
	var b strings.Builder
	for _, n := range snap.Nodes {
		fmt.Fprintf(&b, "node %s: %d CPUs, %d GiB\n", n.Name, n.MaxCPU, n.MaxMem/gib)
	}
	for _, g := range snap.Guests {
		fmt.Fprintf(&b, "guest %d on %s: %v CPUs, %d GiB\n", g.VMID, g.Node, g.CPUs, g.MaxMem/gib)
	}
	for _, r := range reqs {
		fmt.Fprintf(&b, "vm %s: %d vCPUs, %d MiB, tags %v, anti %v\n", r.Name, r.VCPUs(), r.MemoryMiB, r.Tags, r.VMAntiAffinity)
	}
	return b.String()
}

func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for at := 0; at <= len(p); at++ {
			q := append(append(append([]int{}, p[:at]...), n-1), p[at:]...)
			out = append(out, q)
		}
	}
	return out
}

func names(reqs []scheduler.Request) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.Name
	}
	return out
}

func summaries(d scheduler.Decision) []string {
	out := make([]string, len(d.Placements))
	for i, p := range d.Placements {
		out[i] = p.Summary
	}
	return out
}

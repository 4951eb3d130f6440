package plugins

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/nodelabels"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// plantedKind says which rules a planted set carries beside capacities, storage and node
// policies (a tainted node in nine, a node selector on some VMs).
type plantedKind struct {
	name string
	// anti: a group kept apart by node and a smaller one kept apart by zone.
	anti bool
	// spread: two DoNotSchedule spreads by zone with max_skew 1 (one of them with min_domains
	// = the zones) and one by node.
	spread bool
}

var plantedKinds = []plantedKind{{name: "plain"}, {name: "anti", anti: true}, {name: "spread", spread: true}, {name: "both", anti: true, spread: true}}

// plantedSet draws a set of vms new VMs on nodes nodes that has a placement: the placement is
// drawn first (each VM on a node its rules allow beside those drawn before it), then every
// node's capacity (CPUs at the default overcommit of 4, memory, its storage) is cut to hold
// exactly its existing guests and its planted VMs, so that a node without a planted VM is
// full. guests is the number of existing guests per node. It returns the planted node of
// each VM.
func plantedSet(rng *rand.Rand, vms, nodes, guests int, kind plantedKind) (scheduler.Snapshot, []scheduler.Request, []int) {
	zones := max(2, min(8, nodes/4))
	var snap scheduler.Snapshot
	for i := range nodes {
		n := node(fmt.Sprintf("pve%02d", i+1), []int{16, 32, 64}[rng.Intn(3)], 0)
		n.Labels = map[string]string{"zone": fmt.Sprintf("z%d", i%zones), "disk": []string{"ssd", "hdd"}[rng.Intn(2)]}
		if i == 0 {
			n.Labels["disk"] = "ssd" // some node serves the node selector
		}
		if i%9 == 8 {
			n.Taints = []scheduler.Taint{{Key: "dedicated", Value: "db", Effect: nodelabels.NoSchedule}}
		}
		snap.Nodes = append(snap.Nodes, n)
	}
	reqs := make([]scheduler.Request, vms)
	for i := range reqs {
		reqs[i] = sized(fmt.Sprintf("vm-%02d", i), 1+rng.Intn(8), 1+rng.Intn(16))
		reqs[i].DiskBytes = uint64(8+rng.Intn(56)) * gib
	}
	// The groups take the first VMs: anti-affinity by node, by zone, then the spreads.
	next := 0
	group := func(n int, set func(*scheduler.Request)) {
		for ; n > 0 && next < vms; n-- {
			set(&reqs[next])
			next++
		}
	}
	if kind.anti {
		group(max(3, vms/5), func(r *scheduler.Request) {
			r.Tags = append(r.Tags, "apart")
			r.VMAntiAffinity = append(r.VMAntiAffinity, antiTerm(TopologyNode, 0, "apart")...)
		})
		group(zones-1, func(r *scheduler.Request) {
			r.Tags = append(r.Tags, "zoned")
			r.VMAntiAffinity = append(r.VMAntiAffinity, antiTerm("zone", 0, "zoned")...)
		})
	}
	if kind.spread {
		group(max(4, vms/4), func(r *scheduler.Request) {
			r.Tags = append(r.Tags, "web")
			r.TopologySpread = []scheduler.SpreadConstraint{{Tags: []string{"web"}, TopologyKey: "zone", MaxSkew: 1, WhenUnsatisfiable: DoNotSchedule, MinDomains: zones}}
		})
		group(max(4, vms/5), func(r *scheduler.Request) {
			r.Tags = append(r.Tags, "api")
			r.TopologySpread = append(spreadOf("zone", 1, DoNotSchedule, "api"), spreadOf(TopologyNode, 1, DoNotSchedule, "api")...)
		})
	}
	// A node selector on some of the VMs in no group.
	for i := next; i < vms; i++ {
		if rng.Intn(4) == 0 {
			reqs[i].NodeSelector = map[string]string{"disk": "ssd"}
		}
	}
	at := plant(rng, snap, reqs, zones)
	// Existing guests, then each node cut to fit them and its planted VMs exactly.
	vmid := 1000
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		var cpus, mem, disk uint64
		for j, r := range reqs {
			if at[j] == i {
				cpus += uint64(r.VCPUs())
				mem += uint64(r.MemoryMiB) * scheduler.MiB
				disk += r.DiskBytes
			}
		}
		for range guests {
			g := running(vmid, n.Name, float64(1+rng.Intn(2)), uint64(1+rng.Intn(2)))
			vmid++
			cpus += uint64(g.CPUs)
			mem += g.MaxMem
			snap.Guests = append(snap.Guests, g)
		}
		if over := cpus; over > uint64(4*n.MaxCPU) {
			n.MaxCPU = int(over+3) / 4
		}
		filler := running(vmid, n.Name, float64(uint64(4*n.MaxCPU)-cpus), 0)
		vmid++
		n.MaxMem = mem + uint64(rng.Intn(3))*gib
		filler.MaxMem = n.MaxMem - mem
		snap.Guests = append(snap.Guests, filler)
		n.Storages[0].Total = 2048 * gib
		n.Storages[0].Used = n.Storages[0].Total - disk
	}
	return snap, reqs, at
}

// plant draws each VM's node: one its node policies allow, apart from its anti-affinity
// groups' members drawn before it, and for a spread the least filled domain (a node of the
// zone with the fewest members, or a node without one).
func plant(rng *rand.Rand, snap scheduler.Snapshot, reqs []scheduler.Request, zones int) []int {
	at := make([]int, len(reqs))
	zoneOf := func(n int) string { return snap.Nodes[n].Labels["zone"] }
	for j, r := range reqs {
		var ok []int
		for n, nd := range snap.Nodes {
			if len(nd.Taints) > 0 || r.NodeSelector["disk"] != "" && nd.Labels["disk"] != r.NodeSelector["disk"] {
				continue
			}
			if clash(snap, reqs[:j], at, r, n, zoneOf) {
				continue
			}
			ok = append(ok, n)
		}
		for _, c := range r.TopologySpread {
			count := map[string]int{}
			for k := range reqs[:j] {
				if c.Group().Selects(reqs[k].Tags) {
					d := snap.Nodes[at[k]].Name
					if c.TopologyKey == "zone" {
						d = zoneOf(at[k])
					}
					count[d]++
				}
			}
			least := -1
			for _, n := range ok {
				d := snap.Nodes[n].Name
				if c.TopologyKey == "zone" {
					d = zoneOf(n)
				}
				if least < 0 || count[d] < least {
					least = count[d]
				}
			}
			var fewest []int
			for _, n := range ok {
				d := snap.Nodes[n].Name
				if c.TopologyKey == "zone" {
					d = zoneOf(n)
				}
				if count[d] == least {
					fewest = append(fewest, n)
				}
			}
			ok = fewest
		}
		if len(ok) == 0 {
			panic(fmt.Sprintf("no node to plant %s on", r.Name))
		}
		at[j] = ok[rng.Intn(len(ok))]
	}
	return at
}

// clash reports whether r on node n breaks a required anti-affinity with the VMs drawn before.
func clash(snap scheduler.Snapshot, before []scheduler.Request, at []int, r scheduler.Request, n int, zoneOf func(int) string) bool {
	for _, t := range r.VMAntiAffinity {
		for k, o := range before {
			if !t.Group().Selects(o.Tags) {
				continue
			}
			if t.TopologyKey == TopologyNode && at[k] == n || t.TopologyKey == "zone" && zoneOf(at[k]) == zoneOf(n) {
				return true
			}
		}
	}
	return false
}

// checkPlanted fails the test when the planted placement itself does not pass every filter:
// the generator, not the search, would be wrong.
func checkPlanted(t *testing.T, p *scheduler.Profile, snap scheduler.Snapshot, reqs []scheduler.Request, at []int) {
	t.Helper()
	d := scheduler.Decision{Placements: make([]scheduler.Placement, len(reqs))}
	for i, r := range reqs {
		d.Placements[i] = scheduler.Placement{Name: r.Name, Node: snap.Nodes[at[i]].Name, VMID: 100 + i}
	}
	checkPlacements(t, p, snap, reqs, d)
}

// Sets with a planted placement and no room to spare, from 12 VMs on 8 nodes to 32 on 32,
// with and without anti-affinity and spreads: the search places every one of them (260 sets).
func TestScheduleSetPlacesPlantedSets(t *testing.T) {
	p := mustProfile(scheduler.PluginConfig{})
	sizes := []struct {
		vms, nodes, seeds int
		kinds             []plantedKind
	}{{12, 8, 30, plantedKinds}, {20, 16, 20, plantedKinds}, {32, 32, 15, plantedKinds}}
	total, joint := 0, 0
	for _, size := range sizes {
		for _, kind := range size.kinds {
			for seed := range size.seeds {
				rng := rand.New(rand.NewSource(int64(1000*size.vms + 10*seed + len(kind.name))))
				snap, reqs, at := plantedSet(rng, size.vms, size.nodes, 4, kind)
				checkPlanted(t, p, snap, reqs, at)
				d, err := p.ScheduleSet(snap, reqs, scheduler.Options{})
				if err != nil {
					t.Fatalf("%dx%d %s seed %d: %v", size.vms, size.nodes, kind.name, seed, err)
				}
				checkPlacements(t, p, snap, reqs, d)
				total++
				if _, greedy := p.Schedule(snap, reqs, scheduler.Options{}); greedy != nil {
					joint++
				}
			}
		}
	}
	if joint < total/4 {
		t.Fatalf("only %d of %d planted sets need the joint search", joint, total)
	}
	t.Logf("%d planted sets placed, %d of them only jointly", total, joint)
}

// Tight sets of 50 VMs on 64 nodes, ten seeds of each kind: every one is placed (bin
// completion fills node after node exactly), every placement passes every filter, and the
// first seed's placement is the same when run again. Budgets count work, so this does not
// depend on the machine; the CPU it takes is in benchmarks/changeset.md.
func TestScheduleSetPlantedFiftyOnSixtyFour(t *testing.T) {
	p := mustProfile(scheduler.PluginConfig{})
	const seeds = 10
	for _, kind := range plantedKinds {
		for seed := range seeds {
			rng := rand.New(rand.NewSource(int64(1000*50 + 10*seed + len(kind.name))))
			snap, reqs, at := plantedSet(rng, 50, 64, 4, kind)
			checkPlanted(t, p, snap, reqs, at)
			d, err := p.ScheduleSet(snap, reqs, scheduler.Options{})
			if err != nil {
				t.Fatalf("%s seed %d: %v", kind.name, seed, err)
			}
			checkPlacements(t, p, snap, reqs, d)
			if seed == 0 {
				// Deterministic beyond the complete sizes too: budgets count work.
				if again, err := p.ScheduleSet(snap, reqs, scheduler.Options{}); err != nil || !reflect.DeepEqual(d, again) {
					t.Fatalf("%s seed 0: a second run differs (%v)", kind.name, err)
				}
			}
		}
	}
}

// The example: 15 VMs on 4 nodes in two zones, two spreads by zone (one with
// min_domains) and one by node, memory, CPUs and disks cut to the planted placement. Each
// seed's set is placed whole, and the greedy pass alone fails some of them.
func TestScheduleSetPlacesFifteenWithTwoSpreads(t *testing.T) {
	p := mustProfile(scheduler.PluginConfig{})
	joint := 0
	for seed := range 40 {
		rng := rand.New(rand.NewSource(int64(15_000 + seed)))
		snap, reqs, at := plantedSet(rng, 15, 4, 4, plantedKinds[2])
		checkPlanted(t, p, snap, reqs, at)
		d, err := p.ScheduleSet(snap, reqs, scheduler.Options{})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		checkPlacements(t, p, snap, reqs, d)
		if _, greedy := p.Schedule(snap, reqs, scheduler.Options{}); greedy != nil {
			joint++
		}
	}
	if joint == 0 {
		t.Fatal("the greedy pass placed every set: the test does not exercise the search")
	}
}

// A VM whose DoNotSchedule spread keeps it off every node it has room on, beside a VM that
// fits nowhere: the spread VM's refusal is the set's, not "fits on no node even without the
// others" (more of its group in the set would let it in), and the search proves it.
func TestScheduleSetSpreadVMIsNotRefusedAlone(t *testing.T) {
	p := mustProfile(ratioOne())
	snap := scheduler.Snapshot{Nodes: []scheduler.Node{node("pve1", 8, 16), node("pve2", 8, 16), node("pve3", 1, 1)}}
	for i, n := range []string{"pve1", "pve2"} {
		g := running(900+i, n, 1, 1)
		g.Tags = []string{"s"}
		snap.Guests = append(snap.Guests, g)
	}
	x := sized("x", 2, 2)
	x.Tags = []string{"s"}
	x.TopologySpread = spreadOf(TopologyNode, 1, DoNotSchedule, "s")
	huge := sized("huge", 64, 64)
	_, err := p.ScheduleSet(snap, []scheduler.Request{x, huge}, scheduler.Options{})
	se := setError(t, err)
	if se.Alone || se.GaveUp || se.Request != "x" || !strings.Contains(err.Error(), "of the plan's 2 new VMs") {
		t.Fatalf("err = %v (%+v), want the set's refusal of x", err, se)
	}
	// Without the spread, x fits pve1 or pve2: the refusal names huge, alone.
	x.TopologySpread = nil
	_, err = p.ScheduleSet(snap, []scheduler.Request{x, huge}, scheduler.Options{})
	if se = setError(t, err); !se.Alone || se.Request != "huge" {
		t.Fatalf("err = %v, want huge refused alone", err)
	}
}

// A group kept apart by zone with more members than zones is refused as proven, at once,
// naming the cause, however large the set: never "the search gave up".
func TestScheduleSetProvesAGroupLargerThanItsDomains(t *testing.T) {
	var snap scheduler.Snapshot
	for i := range 16 {
		n := node(fmt.Sprintf("pve%02d", i+1), 32, 128)
		n.Labels = map[string]string{"zone": fmt.Sprintf("z%d", i%4)}
		snap.Nodes = append(snap.Nodes, n)
	}
	reqs := replicas(40, 1, 1)
	for i := range reqs {
		reqs[i].VMAntiAffinity = antiTerm("zone", 0, "web")
	}
	_, err := mustProfile(scheduler.PluginConfig{}).ScheduleSet(snap, reqs, scheduler.Options{})
	se := setError(t, err)
	if se.GaveUp || se.Placed != 4 || !strings.Contains(err.Error(), "vm_anti_affinity [web] by zone: 40 members, 4 eligible domains of zone") {
		t.Fatalf("err = %v (%+v), want the proven refusal with its cause", err, se)
	}
}

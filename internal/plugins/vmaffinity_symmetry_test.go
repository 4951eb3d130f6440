package plugins

import (
	"reflect"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// withRecord gives a guest a recorded anti-affinity term.
func withRecord(g scheduler.Guest, anti ...scheduler.VMGroupTerm) scheduler.Guest {
	g.Recorded = &scheduler.Recorded{Policy: scheduler.Request{VMAntiAffinity: anti}}
	return g
}

// kube's "existing pod's anti-affinity" symmetry: a request that declares no rule is kept out
// of the domains whose guests' recorded required anti-affinity selects it; a request outside
// the group, and preferred terms, are not.
func TestVMAntiAffinityFilterRecordedSymmetry(t *testing.T) {
	nodes := []scheduler.Node{zoned("pve1", "a"), zoned("pve2", "a"), zoned("pve3", "b"), zoned("pve4", "")}
	ns := infos(nodes,
		withRecord(tagged(3001, "pve1", "db"), scheduler.VMGroupTerm{Tags: []string{"db"}, TopologyKey: "zone"}),
		withRecord(tagged(3002, "pve3", "cache"), scheduler.VMGroupTerm{Tags: []string{"db"}, TopologyKey: "node", Weight: 50}),
		withRecord(tagged(3003, "pve4", "db"), scheduler.VMGroupTerm{Tags: []string{"db"}, TopologyKey: "zone"})) // no zone: keeps no one out
	f := newPlugin[scheduler.FilterPlugin](t, newVMAffinityFilter, nil)
	r := request("db-new")
	r.Tags = []string{"db", "prod"}
	want := map[string]string{
		"pve1": "VMAntiAffinity: zone=a runs guest 3001 (vm3001), whose recorded required vm_anti_affinity keeps guests tagged [db] out of its zone domain",
		"pve2": "VMAntiAffinity: zone=a runs guest 3001 (vm3001), whose recorded required vm_anti_affinity keeps guests tagged [db] out of its zone domain",
		"pve3": "", "pve4": "",
	}
	if got := verdicts(t, f, &r, ns); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	other := request("web")
	other.Tags = []string{"web"}
	for n, why := range verdicts(t, f, &other, ns) {
		if why != "" {
			t.Errorf("a VM outside the group is refused on %s: %s", n, why)
		}
	}
}

// A recorded preferred anti-affinity scores against the nodes of its domain.
func TestVMAntiAffinityScoreRecordedSymmetry(t *testing.T) {
	nodes := []scheduler.Node{node("pve1", 8, 32), node("pve2", 8, 32)}
	ns := infos(nodes, withRecord(tagged(3002, "pve1", "cache"), scheduler.VMGroupTerm{Tags: []string{"db"}, TopologyKey: "node", Weight: 50}))
	s := newPlugin[scheduler.ScorePlugin](t, newVMAffinityScore, nil)
	r := request("db-new")
	r.Tags = []string{"db"}
	if got := scoreNodes(s, &r, ns); got["pve1"] != 0 || got["pve2"] != 100 {
		t.Errorf("scores %v, want pve1 0, pve2 100", got)
	}
}

// Within one decision the VMs placed before keep their anti-affinity's group out too: the
// symmetry does not wait for the record to exist.
func TestVMAntiAffinitySymmetryWithinADecision(t *testing.T) {
	p := mustProfile(scheduler.PluginConfig{})
	// pve2 is busier, so both would choose pve1 if nothing kept them apart.
	busy := node("pve2", 8, 32)
	busy.CPU, busy.Mem = 0.8, 28*gib
	snap := scheduler.Snapshot{Nodes: []scheduler.Node{node("pve1", 8, 32), busy}, Guests: []scheduler.Guest{running(900, "pve2", 4, 16)}}
	loner := request("loner")
	loner.Tags, loner.VMAntiAffinity = []string{"app"}, antiTerm(TopologyNode, 0, "db")
	db := request("db")
	db.Tags = []string{"db"}
	for _, order := range [][]scheduler.Request{{loner, db}, {db, loner}} {
		d, err := p.Schedule(snap, order, scheduler.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Placements[0].Node == d.Placements[1].Node {
			t.Errorf("%s and %s share %s", d.Placements[0].Name, d.Placements[1].Name, d.Placements[0].Node)
		}
	}
}

package scheduler_test

import (
	"fmt"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// fewestGuests is a complete score plugin: it counts the guests per node once per request
// (PreScore), scores by the count (Score) and maps the counts to 0..100 (NormalizeScores).
type fewestGuests struct{}

func (fewestGuests) Name() string { return "FewestGuests" }

func (fewestGuests) PreScore(s *scheduler.CycleState, _ *scheduler.Request, feasible []*scheduler.NodeInfo) {
	most := 0
	for _, n := range feasible {
		most = max(most, len(n.Guests))
	}
	s.Write("FewestGuests", most)
}

func (fewestGuests) Score(_ *scheduler.CycleState, _ *scheduler.Request, n *scheduler.NodeInfo) float64 {
	return float64(len(n.Guests))
}

func (fewestGuests) NormalizeScores(s *scheduler.CycleState, _ *scheduler.Request, scores []scheduler.NodeScore) {
	most, _ := s.Read("FewestGuests")
	for i := range scores {
		scores[i].Score = 100 * (1 - scores[i].Score/float64(max(most.(int), 1)))
	}
}

var (
	_ scheduler.ScorePlugin     = fewestGuests{}
	_ scheduler.PreScorePlugin  = fewestGuests{}
	_ scheduler.ScoreNormalizer = fewestGuests{}
)

// A registry with one plugin: node a holds a guest, so x and y take the two empty nodes; y
// avoids x's node because x is an assumed guest there when y is scored.
func ExampleProfile_Schedule() {
	reg := scheduler.Registry{Scores: []scheduler.PluginSpec{{Name: "FewestGuests",
		New: func(map[string]string) (scheduler.Plugin, error) { return fewestGuests{}, nil }}}}
	profile, err := scheduler.NewProfile(reg, scheduler.PluginConfig{})
	if err != nil {
		panic(err)
	}
	storage := []scheduler.Storage{{Name: "local", Content: []string{"images"}, Active: true, Total: 1 << 40}}
	snap := scheduler.Snapshot{
		Nodes: []scheduler.Node{
			{Name: "a", Online: true, MaxCPU: 8, MaxMem: 32 << 30, Storages: storage},
			{Name: "b", Online: true, MaxCPU: 8, MaxMem: 32 << 30, Storages: storage},
			{Name: "c", Online: true, MaxCPU: 8, MaxMem: 32 << 30, Storages: storage},
		},
		Guests: []scheduler.Guest{{VMID: 100, Node: "a", Name: "old", Status: "stopped"}},
	}
	reqs := []scheduler.Request{{Name: "x", Cores: 1, Sockets: 1, MemoryMiB: 512}, {Name: "y", Cores: 1, Sockets: 1, MemoryMiB: 512}}
	d, err := profile.Schedule(snap, reqs, scheduler.Options{})
	if err != nil {
		panic(err)
	}
	for _, p := range d.Placements {
		fmt.Println(p.Name, p.Node, p.VMID)
	}
	// Output:
	// x b 101
	// y c 102
}

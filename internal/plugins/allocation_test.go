package plugins

import (
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// MostAllocated caps a resource allocated above its capacity at 100 (kube's mostRequestedScore):
// cpu 3+3 of 4 counts as 4 of 4, 100; memory 600*100/1000 = 60; (100+60)/2 = 80. Kube's own
// cases are replayed in conformance_noderesources_test.go.
func TestMostAllocatedAboveCapacityCountsAsFull(t *testing.T) {
	n := scheduler.Node{Name: "node1", Online: true, MaxCPU: 4, MaxMem: 1000 * scheduler.MiB}
	g := scheduler.Guest{VMID: 1, Node: "node1", Type: scheduler.GuestQEMU, Status: "running", CPUs: 3, MaxMem: 200 * scheduler.MiB}
	r := scheduler.Request{Name: "pod", Cores: 3, Sockets: 1, MemoryMiB: 400}
	got := scoreNodes(newPlugin[scheduler.ScorePlugin](t, newMostAllocated, nil), &r, infos([]scheduler.Node{n}, g))
	if got["node1"] != 80 {
		t.Errorf("score %v, want 80", got["node1"])
	}
}

// Args are whole numbers 1..100, as kube validates resource weights; unknown args list the
// valid ones; the three scores run only when enabled.
func TestAllocationScoreArgsAndDefaults(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"scores:\n  LeastAllocated: {config: {cpu_weight: 0}}\n", `score plugin LeastAllocated: arg cpu_weight must be a whole number from 1 to 100, got "0"`},
		{"scores:\n  MostAllocated: {config: {memory_weight: 101}}\n", `score plugin MostAllocated: arg memory_weight must be a whole number from 1 to 100, got "101"`},
		{"scores:\n  MostAllocated: {config: {memory_weight: 1.5}}\n", `arg memory_weight must be a whole number from 1 to 100, got "1.5"`},
		{"scores:\n  MostAllocated: {config: {cpu: 2}}\n", `unknown arg "cpu" for score plugin MostAllocated; valid args: cpu_weight, memory_weight`},
		{"scores:\n  BalancedAllocation: {config: {cpu_weight: 2}}\n", `unknown arg "cpu_weight" for score plugin BalancedAllocation; valid args: none`},
	} {
		wantYAMLInputError(t, tt.yaml, tt.want)
	}
	snap := scheduler.Snapshot{Nodes: []scheduler.Node{node("pve1", 8, 32)}}
	scoresOf := func(cfg scheduler.PluginConfig) string {
		d, err := mustProfile(cfg).Schedule(snap, []scheduler.Request{request("a")}, scheduler.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, name := range []string{NodeResourceName, LeastAllocatedName, MostAllocatedName, BalancedAllocationName} {
			if _, ok := d.Placements[0].Candidates[0].Scores[name]; ok {
				names = append(names, name)
			}
		}
		return strings.Join(names, ",")
	}
	if got := scoresOf(scheduler.PluginConfig{}); got != "NodeResource" {
		t.Errorf("default scores: %s, want NodeResource only", got)
	}
	cfg, err := scheduler.ParsePluginConfigYAML([]byte("scores: {LeastAllocated: {}, MostAllocated: {}, BalancedAllocation: {}}"))
	if err != nil {
		t.Fatal(err)
	}
	if got := scoresOf(cfg); got != "NodeResource,LeastAllocated,MostAllocated,BalancedAllocation" {
		t.Errorf("enabled scores: %s, want all four", got)
	}
}

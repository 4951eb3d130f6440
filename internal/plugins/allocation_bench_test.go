package plugins

import (
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// BenchmarkScheduleScores is one decision on 64 nodes x 10,000 guests with each default-off
// score enabled in turn, then with every plugin on, disks of a known size included.
func BenchmarkScheduleScores(b *testing.B) {
	snap := benchSnapshot(64, 10000)
	on := true
	for _, tt := range []struct {
		name   string
		scores []string
	}{
		{LeastAllocatedName, []string{LeastAllocatedName}},
		{MostAllocatedName, []string{MostAllocatedName}},
		{BalancedAllocationName, []string{BalancedAllocationName}},
		{"all", []string{LeastAllocatedName, MostAllocatedName, BalancedAllocationName}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			cfg := scheduler.PluginConfig{Scores: map[string]scheduler.PluginSetting{}}
			for _, s := range tt.scores {
				cfg.Scores[s] = scheduler.PluginSetting{Enable: &on}
			}
			r := benchRequest("web")
			r.DiskBytes = 32 * gib
			benchProfileDecisions(b, mustProfile(cfg), snap, []scheduler.Request{r})
		})
	}
}

// BenchmarkAllocationScoresAlone is the scores' own share of a decision: one plugin scoring
// the 64 nodes of the 64 x 10,000 cluster (PreScore, Score per node, normalisation).
func BenchmarkAllocationScoresAlone(b *testing.B) {
	snap := benchSnapshot(64, 10000)
	nodes := scheduler.NodeInfos(&snap)
	r := benchRequest("web")
	for _, tt := range []struct {
		name  string
		build func(map[string]string) (scheduler.Plugin, error)
	}{
		{LeastAllocatedName, newLeastAllocated},
		{MostAllocatedName, newMostAllocated},
		{BalancedAllocationName, newBalancedAllocation},
	} {
		b.Run(tt.name, func(b *testing.B) {
			s := newPlugin[scheduler.ScorePlugin](b, tt.build, nil)
			for i := 0; i < b.N; i++ {
				scoreNodes(s, &r, nodes)
			}
		})
	}
}

package scheduler

import (
	"slices"
	"testing"
)

// cpuRoom is cpuFit as a capacity, which bin completion needs.
type cpuRoom struct{ cpuFit }

func (cpuRoom) Room(n *NodeInfo) float64  { return float64(n.Node.MaxCPU) - n.AllocCPU }
func (cpuRoom) Demand(r *Request) float64 { return float64(r.VCPUs()) }
func (cpuRoom) Amount(v float64) string   { return FormatNumber(v) + " vCPUs" }

// Bin completion fills node after node exactly: 6+2, 5+3 and 4+4 on three 8-CPU nodes, the
// only placement up to the order of the nodes.
func TestBinsFillEveryNodeExactly(t *testing.T) {
	p := testProfile(t, Registry{Filters: []PluginSpec{{Name: "CPUFit", New: func(map[string]string) (Plugin, error) { return cpuRoom{}, nil }}}}, PluginConfig{})
	snap := Snapshot{Nodes: testNodes("n1", "n2", "n3")}
	reqs := cpuRequests(6, 5, 4, 4, 3, 2)
	s, _ := newTestSearch(p, &snap, reqs)
	if !s.bins(searchBudget) {
		t.Fatal("bin completion did not place the set")
	}
	load := make([]int, 3)
	for _, st := range s.stack {
		load[st.node] += reqs[st.req].Cores
	}
	if len(s.stack) != len(reqs) || !slices.Equal(load, []int{8, 8, 8}) {
		t.Fatalf("%d placed, loads %v, want all 6 and 8 on every node", len(s.stack), load)
	}
}

package rebalance

import (
	"fmt"
	"sort"
)

// HighUtilization holds the HighNodeUtilization percentages of configured allocation: a node
// under both is emptied.
type HighUtilization struct {
	CPUThreshold, MemoryThreshold float64
}

// empty is the kube descheduler's HighNodeUtilization: the online nodes under both thresholds,
// least used first, give every movable guest to the other nodes, fullest first (kube pairs the
// strategy with MostAllocated scoring), so that they can be switched off or serviced. A node
// under the thresholds never receives. Rules, budget and caps are the other strategies'; what
// cannot move is kept with the reason.
func (p *planner) empty(u HighUtilization) error {
	under := map[string]bool{}
	var sources []string
	for _, n := range p.snap.Nodes {
		if x := p.alloc[n.Name].usage(); n.Online && x.CPUPercent < u.CPUThreshold && x.MemoryPercent < u.MemoryThreshold {
			under[n.Name] = true
			sources = append(sources, n.Name)
		}
	}
	sort.SliceStable(sources, func(i, j int) bool {
		return level(p.alloc[sources[i]].usage()) < level(p.alloc[sources[j]].usage())
	})
	accept := func(to string) string {
		if under[to] {
			return "is under the high_node_utilization thresholds itself, so it is being emptied"
		}
		return ""
	}
	for _, src := range sources {
		s := p.alloc[src].usage()
		why := fmt.Sprintf("HighNodeUtilization: %s is under the thresholds (cpu %s%%, memory %s%%) and is emptied", src, pct(s.CPUPercent), pct(s.MemoryPercent))
		n, err := p.leave(src, why, accept, true, false)
		if err != nil {
			return err
		}
		p.emptied += n
	}
	return nil
}

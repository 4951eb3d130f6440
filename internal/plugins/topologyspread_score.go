package plugins

import (
	"math"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// topologySpreadScore prefers the domains holding fewer members of the ScheduleAnyway spreads,
// with kube's PodTopologySpread formula: per spread, members in the node's domain times
// ln(domains + 2) plus max_skew - 1, summed, then reversed and scaled over the feasible nodes
// so that the emptiest domain scores 100. A node lacking a spread's key scores 0.
type topologySpreadScore struct{}

var (
	_ scheduler.ScorePlugin     = topologySpreadScore{}
	_ scheduler.PreScorePlugin  = topologySpreadScore{}
	_ scheduler.ScoreNormalizer = topologySpreadScore{}
)

func newTopologySpreadScore(map[string]string) (scheduler.Plugin, error) {
	return topologySpreadScore{}, nil
}

func (topologySpreadScore) Name() string { return TopologySpreadName }

// spreadScoreState is what PreScore computes once per request.
type spreadScoreState struct {
	spreads []spread
	// weights[i] is ln(domains of spread i among the feasible nodes + 2): a key with more
	// domains weighs more, as in kube.
	weights []float64
	// outside are the feasible nodes lacking some spread's key.
	outside map[string]bool
}

const topologySpreadScoreKey = TopologySpreadName + "/score"

func (topologySpreadScore) PreScore(state *scheduler.CycleState, r *scheduler.Request, feasible []*scheduler.NodeInfo) {
	spreads := prepareSpreads(state, r, allNodes(state, feasible), ScheduleAnyway)
	if len(spreads) == 0 {
		return
	}
	s := &spreadScoreState{spreads: spreads, weights: make([]float64, len(spreads)), outside: map[string]bool{}}
	for i, sp := range spreads {
		domains := map[string]bool{}
		for _, ni := range feasible {
			if d, ok := domainOf(ni.Node, sp.c.TopologyKey); ok {
				domains[d] = true
			} else {
				s.outside[ni.Node.Name] = true
			}
		}
		s.weights[i] = math.Log(float64(len(domains) + 2))
	}
	state.Write(topologySpreadScoreKey, s)
}

func (topologySpreadScore) Score(state *scheduler.CycleState, _ *scheduler.Request, n *scheduler.NodeInfo) float64 {
	v, ok := state.Read(topologySpreadScoreKey)
	if !ok {
		return 0
	}
	s := v.(*spreadScoreState)
	if s.outside[n.Node.Name] {
		return 0
	}
	var sum float64
	for i, sp := range s.spreads {
		sum += float64(sp.counts.in(n.Node))*s.weights[i] + float64(sp.c.MaxSkew-1)
	}
	return sum
}

// NormalizeScores maps the fewest members to 100 and the most to min/max*100, as kube does;
// nodes outside a domain get 0. Without ScheduleAnyway spreads every node keeps 0.
func (topologySpreadScore) NormalizeScores(state *scheduler.CycleState, _ *scheduler.Request, scores []scheduler.NodeScore) {
	v, ok := state.Read(topologySpreadScoreKey)
	if !ok {
		return
	}
	s := v.(*spreadScoreState)
	lo, hi, seen := 0.0, 0.0, false
	for _, ns := range scores {
		if s.outside[ns.Node] {
			continue
		}
		if !seen || ns.Score < lo {
			lo = ns.Score
		}
		if !seen || ns.Score > hi {
			hi = ns.Score
		}
		seen = true
	}
	for i := range scores {
		switch {
		case s.outside[scores[i].Node]:
			scores[i].Score = 0
		case hi == 0:
			scores[i].Score = 100
		default:
			scores[i].Score = 100 * (hi + lo - scores[i].Score) / hi
		}
	}
}

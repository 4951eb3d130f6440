package plugins

import (
	"math"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// topologySpreadScore prefers the domains holding fewer members of the ScheduleAnyway spreads,
// with kube's PodTopologySpread formula: per spread, members in the node's domain times
// ln(domains + 2) plus max_skew - 1, summed and rounded to an integer, then reversed over the
// feasible nodes as 100*(max + min - score)/max in integers, so that the emptiest domain
// scores 100. A node lacking a key of any ScheduleAnyway spread scores 0.
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
	// weights[i] is ln(domains of spread i among the scored feasible nodes + 2): a key with
	// more domains weighs more, as in kube.
	weights []float64
	// ignored are the feasible nodes lacking some spread's key: kube scores them 0.
	ignored map[string]bool
}

const topologySpreadScoreKey = TopologySpreadName + "/score"

func (topologySpreadScore) PreScore(state *scheduler.CycleState, r *scheduler.Request, feasible []*scheduler.NodeInfo) {
	spreads := prepareSpreads(state, r, allNodes(state, feasible), ScheduleAnyway)
	if len(spreads) == 0 {
		return
	}
	cs := make([]scheduler.SpreadConstraint, len(spreads))
	for i, sp := range spreads {
		cs[i] = sp.c
	}
	s := &spreadScoreState{spreads: spreads, weights: make([]float64, len(spreads)), ignored: map[string]bool{}}
	for _, ni := range feasible {
		if !hasKeys(ni.Node, cs) {
			s.ignored[ni.Node.Name] = true
		}
	}
	for i, sp := range spreads {
		domains := map[string]bool{}
		for _, ni := range feasible {
			if !s.ignored[ni.Node.Name] {
				d, _ := domainOf(ni.Node, sp.c.TopologyKey)
				domains[d] = true
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
	if s.ignored[n.Node.Name] {
		return 0
	}
	var sum float64
	for i, sp := range s.spreads {
		sum += float64(sp.in(n.Node))*s.weights[i] + float64(sp.c.MaxSkew-1)
	}
	return math.Round(sum)
}

// NormalizeScores maps the fewest members to 100 and the rest to 100*(max+min-score)/max,
// truncated as kube's integer division does; ignored nodes get 0. Without ScheduleAnyway
// spreads every node keeps 0.
func (topologySpreadScore) NormalizeScores(state *scheduler.CycleState, _ *scheduler.Request, scores []scheduler.NodeScore) {
	v, ok := state.Read(topologySpreadScoreKey)
	if !ok {
		return
	}
	s := v.(*spreadScoreState)
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, ns := range scores {
		if !s.ignored[ns.Node] {
			lo, hi = min(lo, int64(ns.Score)), max(hi, int64(ns.Score))
		}
	}
	for i := range scores {
		switch {
		case s.ignored[scores[i].Node]:
			scores[i].Score = 0
		case hi == 0:
			scores[i].Score = 100
		default:
			scores[i].Score = float64(100 * (hi + lo - int64(scores[i].Score)) / hi)
		}
	}
}

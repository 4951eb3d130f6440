package plugins

import (
	"math"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// vmAffinityScore prefers the nodes the preferred vm_affinity terms draw the VM to and avoids
// those the preferred vm_anti_affinity terms push it from, ProxLB's plb_affinity* and
// plb_anti_affinity* tags included (weight 100, by node). As kube's InterPodAffinity score:
// each term adds (affinity) or takes (anti-affinity) its weight once per member in the node's
// domain; existing guests' recorded terms that select the VM weigh on their own domain
// (symmetry: preferred affinity +weight, required affinity +1, preferred anti-affinity
// -weight); and the sums are scaled min-max to 0..100 over the feasible nodes, truncated to an
// integer as kube's.
type vmAffinityScore struct {
	proxLB bool
}

var (
	_ scheduler.ScorePlugin     = vmAffinityScore{}
	_ scheduler.PreScorePlugin  = vmAffinityScore{}
	_ scheduler.ScoreNormalizer = vmAffinityScore{}
)

func newVMAffinityScore(args map[string]string) (scheduler.Plugin, error) {
	proxLB, err := parseProxLBArg(args)
	return vmAffinityScore{proxLB: proxLB}, err
}

func (vmAffinityScore) Name() string { return VMAffinityName }

// vmAffinityScoreState is what PreScore computes once per request.
type vmAffinityScoreState struct {
	groups []weightedGroup
	// recorded are existing guests' recorded terms that weigh on the request (recordedScoreTerms).
	recorded []recordedTerm
}

// weightedGroup is one preferred term: its signed weight and its group's counts.
type weightedGroup struct {
	weight int
	counts *groupCounts
}

const vmAffinityScoreKey = VMAffinityName + "/score"

func (p vmAffinityScore) PreScore(state *scheduler.CycleState, r *scheduler.Request, feasible []*scheduler.NodeInfo) {
	affinity, anti := r.VMAffinity, r.VMAntiAffinity
	if p.proxLB {
		plbAffinity, plbAnti := proxLBTerms(r)
		affinity = append(append([]scheduler.VMGroupTerm(nil), affinity...), plbAffinity...)
		anti = append(append([]scheduler.VMGroupTerm(nil), anti...), plbAnti...)
	}
	nodes := allNodes(state, feasible)
	var groups []weightedGroup
	for _, t := range affinity {
		if t.Weight > 0 {
			groups = append(groups, weightedGroup{weight: t.Weight, counts: countGroup(state, nodes, t.Group(), t.TopologyKey)})
		}
	}
	for _, t := range anti {
		if t.Weight > 0 {
			groups = append(groups, weightedGroup{weight: -t.Weight, counts: countGroup(state, nodes, t.Group(), t.TopologyKey)})
		}
	}
	recorded := recordedScoreTerms(r, nodes)
	if len(groups) > 0 || len(recorded) > 0 {
		state.Write(vmAffinityScoreKey, &vmAffinityScoreState{groups: groups, recorded: recorded})
	}
}

// allNodes is every node of the view when the pipeline provides it, so that members on nodes
// that cannot take the request still count for their domain.
func allNodes(state *scheduler.CycleState, feasible []*scheduler.NodeInfo) []*scheduler.NodeInfo {
	if nodes := state.Nodes(); nodes != nil {
		return nodes
	}
	return feasible
}

func (vmAffinityScore) Score(state *scheduler.CycleState, _ *scheduler.Request, n *scheduler.NodeInfo) float64 {
	v, ok := state.Read(vmAffinityScoreKey)
	if !ok {
		return 0
	}
	s := v.(*vmAffinityScoreState)
	sum := recordedWeight(s.recorded, n.Node)
	for _, g := range s.groups {
		sum += float64(g.weight * g.counts.in(n.Node))
	}
	return sum
}

// NormalizeScores scales min-max to 0..100 as kube, 100 * ((score-min) / (max-min)) truncated; when every node scores the same (or the request
// has no preferred term) every node gets 0, which cannot change the decision.
func (vmAffinityScore) NormalizeScores(_ *scheduler.CycleState, _ *scheduler.Request, scores []scheduler.NodeScore) {
	if len(scores) == 0 {
		return
	}
	lo, hi := scores[0].Score, scores[0].Score
	for _, s := range scores {
		lo, hi = min(lo, s.Score), max(hi, s.Score)
	}
	for i := range scores {
		if hi > lo {
			scores[i].Score = math.Trunc(100 * ((scores[i].Score - lo) / (hi - lo)))
		} else {
			scores[i].Score = 0
		}
	}
}

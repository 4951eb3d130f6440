package plugins

import (
	"fmt"
	"strconv"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/nodelabels"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// TopologySpreadName is the config key of the spread filter and of the spread score.
const TopologySpreadName = "TopologySpread"

// Values of a spread's when_unsatisfiable.
const (
	DoNotSchedule  = "DoNotSchedule"
	ScheduleAnyway = "ScheduleAnyway"
)

// topologySpreadFilter enforces the DoNotSchedule spreads, like kube's PodTopologySpread
// filter: placing the VM in a node's domain must not make that domain hold more than max_skew
// members above the emptiest eligible domain.
type topologySpreadFilter struct{}

var (
	_ scheduler.FilterPlugin    = topologySpreadFilter{}
	_ scheduler.PreFilterPlugin = topologySpreadFilter{}
)

func newTopologySpreadFilter(map[string]string) (scheduler.Plugin, error) {
	return topologySpreadFilter{}, nil
}

func (topologySpreadFilter) Name() string { return TopologySpreadName }

// spread is one constraint with its group counted and its minimum found, once per request.
type spread struct {
	c      scheduler.SpreadConstraint
	counts *groupCounts
	// min is the fewest members in an eligible domain.
	min int
	// self is 1 when the request carries the group's tags (it joins the domain), else 0.
	self int
	// group is the phrase of the unschedulable summary and tags the group as reasons show it,
	// both built once: a spread rejects most nodes, for every request.
	group, tags string
}

const topologySpreadFilterKey = TopologySpreadName + "/filter"

func (topologySpreadFilter) PreFilter(state *scheduler.CycleState, r *scheduler.Request, nodes []*scheduler.NodeInfo) error {
	spreads := prepareSpreads(state, r, nodes, DoNotSchedule)
	if len(spreads) > 0 {
		state.Write(topologySpreadFilterKey, spreads)
	}
	return nil
}

// prepareSpreads counts the request's spreads of one kind over all nodes. The minimum is
// taken over eligible domains only: those with a node that is online, matches the request's
// node selector and required node affinity, and has no NoSchedule taint it does not
// tolerate, so that a drained or tainted node cannot pin the minimum at 0 (kube's
// nodeAffinityPolicy and nodeTaintsPolicy both Honor).
func prepareSpreads(state *scheduler.CycleState, r *scheduler.Request, nodes []*scheduler.NodeInfo, kind string) []spread {
	var out []spread
	var eligible []bool
	for _, c := range r.TopologySpread {
		if c.WhenUnsatisfiable != kind {
			continue
		}
		if eligible == nil {
			eligible = make([]bool, len(nodes))
			for i, ni := range nodes {
				eligible[i] = eligibleNode(r, ni.Node)
			}
		}
		s := spread{c: c, counts: countGroup(state, nodes, c.Tags, c.TopologyKey),
			group: fmt.Sprintf("would exceed max_skew %d of topology_spread %v by %s", c.MaxSkew, c.Tags, c.TopologyKey),
			tags:  fmt.Sprint(c.Tags)}
		if carriesAll(r.Tags, c.Tags) {
			s.self = 1
		}
		first := true
		for i, ni := range nodes {
			if !eligible[i] {
				continue
			}
			if _, ok := domainOf(ni.Node, c.TopologyKey); !ok {
				continue
			}
			if n := s.counts.in(ni.Node); first || n < s.min {
				s.min, first = n, false
			}
		}
		out = append(out, s)
	}
	return out
}

// eligibleNode is a node that could take the request as far as the node policies go: online,
// matching the node selector and every required node_affinity term, and with no NoSchedule
// or NoExecute taint left untolerated.
func eligibleNode(r *scheduler.Request, n *scheduler.Node) bool {
	if !n.Online {
		return false
	}
	for k, v := range r.NodeSelector {
		if got, ok := n.Labels[k]; !ok || got != v {
			return false
		}
	}
	for _, t := range r.NodeAffinity {
		if t.Weight == 0 && !nodelabels.MatchTerm(n.Labels, t) {
			return false
		}
	}
	for _, t := range n.Taints {
		if t.Effect != nodelabels.PreferNoSchedule && !nodelabels.Tolerated(r.Tolerations, t) {
			return false
		}
	}
	return true
}

func (topologySpreadFilter) Filter(state *scheduler.CycleState, _ *scheduler.Request, n *scheduler.NodeInfo) *scheduler.Rejection {
	v, ok := state.Read(topologySpreadFilterKey)
	if !ok {
		return nil
	}
	for _, s := range v.([]spread) {
		key, tags := s.c.TopologyKey, s.c.Tags
		d, hasKey := domainOf(n.Node, key)
		if !hasKey {
			// As in kube: a VM on a node outside every domain would escape the count.
			return &scheduler.Rejection{
				Reason: fmt.Sprintf("TopologySpread: %s has no label %s, which the spread of %v needs", n.Node.Name, key, tags),
				Group:  fmt.Sprintf("have no label %s (topology_spread)", key),
			}
		}
		would := s.counts.in(n.Node) + s.self
		if skew := would - s.min; skew > s.c.MaxSkew {
			return &scheduler.Rejection{
				Reason: "TopologySpread: " + domainName(key, d) + " would hold " + strconv.Itoa(would) + " of " + s.tags +
					", min " + strconv.Itoa(s.min) + ", skew " + strconv.Itoa(skew) + " > " + strconv.Itoa(s.c.MaxSkew),
				Group: s.group,
			}
		}
	}
	return nil
}

package plugins

import (
	"fmt"
	"math"
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

// Values of a spread's node_affinity_policy and node_taints_policy; empty means Honor.
const (
	PolicyHonor  = "Honor"
	PolicyIgnore = "Ignore"
)

// spread is one constraint with its group counted and its minimum found, once per request.
type spread struct {
	c scheduler.SpreadConstraint
	// counts holds the members per eligible domain, 0 included: a domain is eligible when
	// one of its nodes is (see prepareSpreads). Members on other nodes are not counted at all,
	// as in kube.
	counts map[string]int
	// min is the fewest members in an eligible domain, math.MaxInt when there is none (then
	// no node can exceed the skew, as in kube).
	min int
	// self is 1 when the request is in the group (it joins the domain), else 0.
	self int
	// group is the phrase of the unschedulable summary and tags the group as reasons show it,
	// both built once: a spread rejects most nodes, for every request.
	group, tags string
}

// in returns the members counted in the node's domain.
func (s *spread) in(n *scheduler.Node) int {
	d, _ := domainOf(n, s.c.TopologyKey)
	return s.counts[d]
}

// minimum is kube's global minimum: 0 while fewer eligible domains than min_domains exist.
func (s *spread) minimum() int {
	if len(s.counts) < s.c.MinDomains {
		return 0
	}
	return s.min
}

const topologySpreadFilterKey = TopologySpreadName + "/filter"

func (topologySpreadFilter) PreFilter(state *scheduler.CycleState, r *scheduler.Request, nodes []*scheduler.NodeInfo) error {
	spreads := prepareSpreads(state, r, nodes, DoNotSchedule)
	if len(spreads) > 0 {
		state.Write(topologySpreadFilterKey, spreads)
	}
	return nil
}

// nodeFit is what a node offers the request's spreads of one kind: whether it is online,
// carries all their topology keys, passes the node selector and required node affinity, and
// has no NoSchedule or NoExecute taint left untolerated.
type nodeFit struct{ online, keys, affinity, taints bool }

func fitOf(r *scheduler.Request, n *scheduler.Node, cs []scheduler.SpreadConstraint) nodeFit {
	f := nodeFit{online: n.Online, keys: hasKeys(n, cs), affinity: true, taints: true}
	for k, v := range r.NodeSelector {
		if got, ok := n.Labels[k]; !ok || got != v {
			f.affinity = false
		}
	}
	for _, t := range r.NodeAffinity {
		if t.Weight == 0 && !nodelabels.MatchAffinity(n.Labels, t) {
			f.affinity = false
		}
	}
	for _, t := range n.Taints {
		if t.Effect != nodelabels.PreferNoSchedule && !nodelabels.Tolerated(r.Tolerations, t) {
			f.taints = false
		}
	}
	return f
}

// eligible applies a spread's node inclusion policies, kube's matchNodeInclusionPolicies; a
// node lacking a key, or offline (kube has no such node), is never eligible.
func (f nodeFit) eligible(c scheduler.SpreadConstraint) bool {
	return f.online && f.keys && (f.affinity || c.NodeAffinityPolicy == PolicyIgnore) && (f.taints || c.NodeTaintsPolicy == PolicyIgnore)
}

// prepareSpreads counts the request's spreads of one kind over all nodes, as kube's
// PodTopologySpread does: only nodes carrying the keys of all these spreads and eligible
// under each spread's policies count, so that a drained, tainted or unselected node neither
// pins the minimum at 0 nor adds its members to a domain.
func prepareSpreads(state *scheduler.CycleState, r *scheduler.Request, nodes []*scheduler.NodeInfo, kind string) []spread {
	var cs []scheduler.SpreadConstraint
	for _, c := range r.TopologySpread {
		if c.WhenUnsatisfiable == kind {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		return nil
	}
	fits := make([]nodeFit, len(nodes))
	for i, ni := range nodes {
		fits[i] = fitOf(r, ni.Node, cs)
	}
	out := make([]spread, 0, len(cs))
	for _, c := range cs {
		tags := DescribeGroup(c.Group())
		s := spread{c: c, counts: map[string]int{}, min: math.MaxInt, tags: tags,
			group: fmt.Sprintf("would exceed max_skew %d of topology_spread %s by %s", c.MaxSkew, tags, c.TopologyKey)}
		if c.Group().Selects(r.Tags) {
			s.self = 1
		}
		gm := membersOf(state, nodes, c.Group())
		for i, ni := range nodes {
			if !fits[i].eligible(c) {
				continue
			}
			d, _ := domainOf(ni.Node, c.TopologyKey)
			s.counts[d] += gm.perNode[i].count
		}
		for _, n := range s.counts {
			s.min = min(s.min, n)
		}
		out = append(out, s)
	}
	return out
}

// hasKeys reports whether the node carries the topology key of every spread.
func hasKeys(n *scheduler.Node, cs []scheduler.SpreadConstraint) bool {
	for _, c := range cs {
		if _, ok := domainOf(n, c.TopologyKey); !ok {
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
		key, tags := s.c.TopologyKey, s.tags
		d, hasKey := domainOf(n.Node, key)
		if !hasKey && !n.Node.Online {
			return offlineNoKey("TopologySpread", n.Node, key)
		}
		if !hasKey {
			// As in kube: a VM on a node outside every domain would escape the count.
			return &scheduler.Rejection{
				Reason: fmt.Sprintf("TopologySpread: %s has no label %s, which the spread of %s needs", n.Node.Name, key, tags),
				Group:  fmt.Sprintf("have no label %s (topology_spread)", key),
			}
		}
		would, least := s.counts[d]+s.self, s.minimum()
		if skew := would - least; skew > s.c.MaxSkew {
			why := "" // a minimum of 0 where every domain holds members needs saying why
			if len(s.counts) < s.c.MinDomains {
				why = fmt.Sprintf(" (%d eligible domains, fewer than min_domains %d)", len(s.counts), s.c.MinDomains)
			}
			return &scheduler.Rejection{
				Reason: "TopologySpread: " + domainName(key, d) + " would hold " + strconv.Itoa(would) + " of " + s.tags +
					", min " + strconv.Itoa(least) + why + ", skew " + strconv.Itoa(skew) + " > " + strconv.Itoa(s.c.MaxSkew),
				Group: s.group,
			}
		}
	}
	return nil
}

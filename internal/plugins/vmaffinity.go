package plugins

import (
	"fmt"
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// VMAffinityName is the config key of the VM group filter and of the VM group score.
const VMAffinityName = "VMAffinity"

// vmAffinityFilter enforces the required vm_affinity and vm_anti_affinity terms (weight 0)
// and the ProxLB pins (plb_pin_<node> tags), like kube's InterPodAffinity filter with groups
// of guests by tags instead of pods by labels.
type vmAffinityFilter struct {
	proxLB bool
}

var (
	_ scheduler.FilterPlugin    = vmAffinityFilter{}
	_ scheduler.PreFilterPlugin = vmAffinityFilter{}
)

func newVMAffinityFilter(args map[string]string) (scheduler.Plugin, error) {
	proxLB, err := parseProxLBArg(args)
	return vmAffinityFilter{proxLB: proxLB}, err
}

func (vmAffinityFilter) Name() string { return VMAffinityName }

// requiredTerm is one required term with its group counted over all nodes.
type requiredTerm struct {
	anti   bool
	term   scheduler.VMGroupTerm
	counts *groupCounts
	// self is true when the request is in the group itself: the first member of an affinity
	// group may go anywhere.
	self bool
	// group is the phrase of the unschedulable summary, tags the group as reasons show it.
	group, tags string
}

// vmAffinityState is what PreFilter computes once per request.
type vmAffinityState struct {
	terms []requiredTerm
	pins  []string
	// recorded are existing guests' recorded required anti-affinity terms against the request.
	recorded []recordedTerm
}

const vmAffinityFilterKey = VMAffinityName + "/filter"

func (f vmAffinityFilter) PreFilter(state *scheduler.CycleState, r *scheduler.Request, nodes []*scheduler.NodeInfo) error {
	s := &vmAffinityState{}
	if f.proxLB {
		s.pins = proxLBPins(r)
	}
	for _, t := range r.VMAffinity {
		if t.Weight == 0 {
			s.terms = append(s.terms, newRequiredTerm(state, nodes, r, t, false))
		}
	}
	for _, t := range r.VMAntiAffinity {
		if t.Weight == 0 {
			s.terms = append(s.terms, newRequiredTerm(state, nodes, r, t, true))
		}
	}
	s.recorded = recordedAntiAffinity(r, allNodes(state, nodes))
	if len(s.terms) > 0 || len(s.pins) > 0 || len(s.recorded) > 0 {
		state.Write(vmAffinityFilterKey, s)
	}
	return nil
}

func newRequiredTerm(state *scheduler.CycleState, nodes []*scheduler.NodeInfo, r *scheduler.Request, t scheduler.VMGroupTerm, anti bool) requiredTerm {
	rt := requiredTerm{anti: anti, term: t, counts: countGroup(state, nodes, t.Group(), t.TopologyKey), self: t.Group().Selects(r.Tags),
		tags: DescribeGroup(t.Group())}
	if !anti {
		rt.group = fmt.Sprintf("run no guest tagged %s (required vm_affinity by %s)", rt.tags, t.TopologyKey)
		return rt
	}
	rt.group = fmt.Sprintf("already run a guest tagged %s (required vm_anti_affinity by %s)", rt.tags, t.TopologyKey)
	// Every domain taken means no node can ever pass while the group stays: say so, and
	// what keeps a group larger than the domains apart.
	if c := rt.counts; c.domains > 0 && c.occupied == c.domains {
		where := fmt.Sprintf("all %d nodes", c.domains)
		if t.TopologyKey != TopologyNode {
			where = fmt.Sprintf("all %d domains of %s", c.domains, t.TopologyKey)
		}
		rt.group = fmt.Sprintf("already run a guest tagged %s (required vm_anti_affinity by %s; %s already run one, so no more VMs of the group can be kept apart: use topology_spread with max_skew = 1 to spread them evenly instead)",
			rt.tags, t.TopologyKey, where)
	}
	return rt
}

func (vmAffinityFilter) Filter(state *scheduler.CycleState, _ *scheduler.Request, n *scheduler.NodeInfo) *scheduler.Rejection {
	v, ok := state.Read(vmAffinityFilterKey)
	if !ok {
		return nil
	}
	s := v.(*vmAffinityState)
	if len(s.pins) > 0 && !pinned(s.pins, n.Node.Name) {
		return &scheduler.Rejection{
			Reason: fmt.Sprintf("VMAffinity: ProxLB tags pin the VM to %s", strings.Join(s.pins, ", ")),
			Group:  fmt.Sprintf("not among the ProxLB pins %s", strings.Join(s.pins, ", ")),
		}
	}
	for i := range s.terms {
		if rej := s.terms[i].check(n.Node); rej != nil {
			return rej
		}
	}
	for i := range s.recorded {
		if rej := s.recorded[i].check(n.Node); rej != nil {
			return rej
		}
	}
	return nil
}

func pinned(pins []string, node string) bool {
	for _, p := range pins {
		if strings.EqualFold(p, node) {
			return true
		}
	}
	return false
}

// check applies one term to a node: design §2's rules for domains and missing keys.
func (t *requiredTerm) check(n *scheduler.Node) *scheduler.Rejection {
	key, tags, c := t.term.TopologyKey, t.tags, t.counts
	d, hasKey := domainOf(n, key)
	if t.anti {
		// A node without the key is in no domain, so no member shares one with it.
		m := c.holds(d)
		if !hasKey || m == nil {
			return nil
		}
		return &scheduler.Rejection{
			Reason: fmt.Sprintf("VMAntiAffinity: %s already runs %s tagged %s: %s", domainName(key, d), guests(m.count), tags, m),
			Group:  t.group,
		}
	}
	if !hasKey && !n.Online {
		return offlineNoKey("VMAffinity", n, key)
	}
	if !hasKey {
		return &scheduler.Rejection{
			Reason: fmt.Sprintf("VMAffinity: %s has no label %s, so it shares no domain with guests tagged %s", n.Name, key, tags),
			Group:  fmt.Sprintf("have no label %s (required vm_affinity)", key),
		}
	}
	if c.total == 0 {
		if t.self {
			return nil
		}
		return &scheduler.Rejection{
			Reason: fmt.Sprintf("VMAffinity: no guest tagged %s exists, and this VM does not carry those tags to start the group", tags),
			Group:  fmt.Sprintf("found no guest tagged %s in the cluster (required vm_affinity)", tags),
		}
	}
	if c.holds(d) != nil {
		return nil
	}
	return &scheduler.Rejection{
		Reason: fmt.Sprintf("VMAffinity: %s runs no guest tagged %s (%s elsewhere)", domainName(key, d), tags, guests(c.total)),
		Group:  t.group,
	}
}

package harules

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Op is what a change does to a rule.
type Op int

// The changes to the cluster's rules.
const (
	Create Op = iota
	Update
	Delete
)

// Change is one write that brings the cluster's rules to what a VM wants.
type Change struct {
	Op   Op
	Rule scheduler.HARule
	// Policy is the VM policy a created or updated rule keeps ("" when the VM leaves it).
	Policy string
}

// Changes are the writes that put the VM vmid in exactly the rules it wants among the
// cluster's rules cur, updates first: a wanted rule is created, or updated to hold its
// wanted resources and the members it has that are still HA resources (others' members are
// kept, so concurrent writers lose none; a shared node rule also keeps only the nodes the
// others allowed, until they all have left it); a rule of this provider the VM no longer wants is
// left, and deleted when that leaves a resource-affinity rule with fewer than two resources
// or a node rule with none. managed are the guests that are HA resources. None: in sync.
func Changes(vmid int, want []Rule, cur []scheduler.HARule, managed map[int]bool) []Change {
	var out []Change
	for _, w := range want {
		i := slices.IndexFunc(cur, func(r scheduler.HARule) bool { return strings.EqualFold(r.Name, w.Name) })
		if i < 0 {
			out = append(out, Change{Op: Create, Rule: w.HARule, Policy: w.Policy})
			continue
		}
		next := w.HARule
		if w.Type == scheduler.HAResourceAffinity || w.Shared {
			for _, m := range cur[i].VMIDs {
				if managed[m] && !slices.Contains(next.VMIDs, m) {
					next.VMIDs = append(next.VMIDs, m)
					if slices.Contains(cur[i].CTs, m) {
						next.CTs = append(next.CTs, m)
					}
				}
			}
			sort.Ints(next.VMIDs)
			if w.Shared && slices.ContainsFunc(cur[i].VMIDs, func(m int) bool { return m != vmid && managed[m] }) {
				// Until the others leave: their nodes, and their strictness (one strict member's
				// rule must not be loosened by a preferred one, nor flip with each apply).
				next.Nodes = slices.DeleteFunc(slices.Clone(next.Nodes), func(n string) bool { return !slices.Contains(cur[i].Nodes, n) })
				next.Strict = next.Strict || cur[i].Strict
			}
		}
		if !same(cur[i], next) {
			out = append(out, Change{Op: Update, Rule: next, Policy: w.Policy})
		}
	}
	for _, r := range cur {
		if !strings.HasPrefix(r.Name, Prefix) || !slices.Contains(r.VMIDs, vmid) ||
			slices.ContainsFunc(want, func(w Rule) bool { return strings.EqualFold(w.Name, r.Name) }) {
			continue
		}
		left := r
		left.VMIDs = slices.DeleteFunc(slices.Clone(r.VMIDs), func(m int) bool { return m == vmid })
		if len(left.VMIDs) == 0 || (r.Type == scheduler.HAResourceAffinity && len(left.VMIDs) < 2) {
			out = append(out, Change{Op: Delete, Rule: r})
		} else {
			out = append(out, Change{Op: Update, Rule: left})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Op == Update && out[j].Op != Update })
	return append(folded(vmid, want, cur), out...)
}

// folded deletes, first, the own node rules of the other members of a shared node rule in
// want: PVE refuses a resource in two node rules, so a member's own rule is folded into the
// group's (which keeps its nodes: Changes) rather than left for its own apply.
func folded(vmid int, want []Rule, cur []scheduler.HARule) []Change {
	var out []Change
	for _, w := range want {
		if !w.Shared {
			continue
		}
		for _, m := range w.VMIDs {
			own := NodeRuleName(m)
			if i := slices.IndexFunc(cur, func(r scheduler.HARule) bool { return strings.EqualFold(r.Name, own) }); m != vmid && i >= 0 &&
				!strings.EqualFold(own, w.Name) && slices.Equal(cur[i].VMIDs, []int{m}) {
				out = append(out, Change{Op: Delete, Rule: cur[i]})
			}
		}
	}
	return out
}

// same tells whether the cluster's rule a already is b.
func same(a, b scheduler.HARule) bool {
	sorted := func(v []int) []int { v = slices.Clone(v); sort.Ints(v); return v }
	names := func(v []string) []string { v = slices.Clone(v); sort.Strings(v); return v }
	return a.Type == b.Type && a.Affinity == b.Affinity && a.Strict == b.Strict && a.Disabled == b.Disabled &&
		a.Comment == b.Comment && slices.Equal(sorted(a.VMIDs), sorted(b.VMIDs)) && slices.Equal(names(a.Nodes), names(b.Nodes)) &&
		maps.Equal(a.Priorities, b.Priorities)
}

// Apply is the rule set cur after changes.
func Apply(cur []scheduler.HARule, changes []Change) []scheduler.HARule {
	out := slices.Clone(cur)
	for _, c := range changes {
		i := slices.IndexFunc(out, func(r scheduler.HARule) bool { return strings.EqualFold(r.Name, c.Rule.Name) })
		switch {
		case c.Op == Delete && i >= 0:
			out = slices.Delete(out, i, i+1)
		case c.Op != Delete && i >= 0:
			out[i] = c.Rule
		case c.Op != Delete:
			out = append(out, c.Rule)
		}
	}
	return out
}

// Problem is why PVE would refuse to write a rule: the check that fails and the other
// rules it fails with.
type Problem struct {
	Rule    string
	Message string
	With    []string
}

func (p Problem) String() string {
	if len(p.With) == 0 {
		return p.Message
	}
	return fmt.Sprintf("%s (with rule %s)", p.Message, strings.Join(p.With, ", "))
}

// Check is PVE's feasibility check of a rule set (pve-ha-manager Rules.pm and its plugins)
// over the enabled rules of a cluster of nodes nodes: every problem, by the rule it is in.
func Check(rules []scheduler.HARule, nodes int) []Problem {
	var out []Problem
	add := func(rule, msg string, with ...string) {
		out = append(out, Problem{Rule: rule, Message: msg, With: with})
	}
	var nodeRules, resRules []scheduler.HARule
	for _, r := range rules {
		switch {
		case r.Disabled:
		case r.Type == scheduler.HANodeAffinity:
			nodeRules = append(nodeRules, r)
		default:
			resRules = append(resRules, r)
		}
	}
	for _, r := range nodeRules {
		if len(r.Nodes) == 0 {
			add(r.Name, "rule has no node: the node-level rules of its resources allow no node in common")
		}
	}
	for i, a := range nodeRules {
		for j, b := range nodeRules {
			if common := overlap(a.VMIDs, b.VMIDs); i != j && len(common) > 0 {
				add(a.Name, fmt.Sprintf("resource %d is already used in another node affinity rule", common[0]), b.Name)
			}
		}
	}
	for _, r := range resRules {
		if len(r.VMIDs) < 2 {
			add(r.Name, "rule is ineffective as there are less than two resources")
		}
		if r.Affinity == scheduler.HANegative && len(r.VMIDs) > nodes {
			add(r.Name, fmt.Sprintf("rule defines more resources (%d) than available nodes (%d)", len(r.VMIDs), nodes))
		}
		var paired []string
		multiple := false
		located, allowed := map[int]bool{}, map[string]bool{}
		for _, n := range nodeRules {
			common := overlap(r.VMIDs, n.VMIDs)
			if len(common) == 0 {
				continue
			}
			paired = append(paired, n.Name)
			multiple = multiple || n.MultiplePriorities()
			for _, m := range common {
				located[m] = true
			}
			for _, node := range n.Nodes {
				allowed[node] = true
			}
		}
		// PVE cannot tell which priority class the group may use when its nodes are up or down,
		// so it refuses the pair and names both sides.
		if multiple {
			add(r.Name, "resources are in node affinity rules with multiple priorities", paired...)
			for _, n := range paired {
				add(n, "resources are in a resource affinity rule and cannot be in a node affinity rule with multiple priorities", r.Name)
			}
		}
		if r.Affinity == scheduler.HAPositive && len(paired) > 1 {
			add(r.Name, "resources are in multiple node affinity rules", paired...)
		}
		if r.Affinity == scheduler.HANegative && len(allowed) < len(located) {
			add(r.Name, fmt.Sprintf("%d resources are restricted to less nodes (%d) than available to the resources", len(located), len(allowed)), paired...)
		}
		for _, o := range resRules {
			if r.Affinity != o.Affinity && len(overlap(r.VMIDs, o.VMIDs)) >= 2 {
				add(r.Name, fmt.Sprintf("rule shares two or more resources with a %s resource affinity rule", o.Affinity), o.Name)
			}
		}
	}
	return out
}

func overlap(a, b []int) []int {
	var out []int
	for _, x := range a {
		if slices.Contains(b, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// Reranks tells whether changes only give the VM vmid's own node rule in cur other priorities:
// the same nodes, strictness, comment and members. That is all a move or a create of another
// member of its groups changes (the classes count the members by their homes); a change of
// anything else is the VM's own apply's to make.
func Reranks(vmid int, changes []Change, cur []scheduler.HARule) bool {
	if len(changes) != 1 || changes[0].Op != Update || changes[0].Rule.Name != NodeRuleName(vmid) {
		return false
	}
	i := slices.IndexFunc(cur, func(r scheduler.HARule) bool { return r.Name == changes[0].Rule.Name })
	if i < 0 || !slices.Equal(cur[i].VMIDs, []int{vmid}) {
		return false
	}
	was, next := cur[i], changes[0].Rule
	was.Priorities, next.Priorities = nil, nil
	return same(was, next)
}

// Counts tells whether the classes of a VM with the policy req depend on where the members of
// a group that selects tags have their homes: a required vm_anti_affinity (over nodes, or by
// domains without another member) or a topology_spread that must be satisfied (by how many
// members each domain has).
func Counts(req scheduler.Request, tags []string) bool {
	for _, t := range req.VMAntiAffinity {
		if t.Weight == 0 && t.Group().Selects(tags) {
			return true
		}
	}
	for _, c := range req.TopologySpread {
		if c.WhenUnsatisfiable == "DoNotSchedule" && c.Group().Selects(tags) {
			return true
		}
	}
	return false
}

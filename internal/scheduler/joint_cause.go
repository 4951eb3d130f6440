package scheduler

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// cause names a smallest cause of the set's refusal that holds whatever else the set holds:
// a required vm_anti_affinity group of r with more members (the set's new VMs of r's class
// and the guests already in the group) than domains they may use (those of the nodes that
// take r but for the group's rule, and those its guests are in). It is "" when there is no
// such group. The search must be unwound: r is checked on the cluster without the set.
func (s *search) cause(r *Request) string {
	for _, t := range r.VMAntiAffinity {
		g := t.Group()
		if t.Weight != 0 || !g.Selects(r.Tags) {
			continue
		}
		// Every new member must be of r's class, so that r's nodes are theirs.
		members := 0
		for i := range s.reqs {
			if _, isNew := s.vmids[i]; isNew && g.Selects(s.reqs[i].Tags) {
				if classKey(&s.reqs[i]) != classKey(r) {
					members = -1
					break
				}
				members++
			}
		}
		if members < 0 {
			continue
		}
		free := *r
		free.VMAntiAffinity = slices.DeleteFunc(slices.Clone(r.VMAntiAffinity), func(u VMGroupTerm) bool { return u.Weight == 0 })
		ev, err := s.p.evaluate(&free, s.infos)
		if err != nil {
			continue
		}
		domains := map[string]bool{}
		for n, ni := range s.infos {
			d, ok := domainOfKey(ni.Node, t.TopologyKey)
			if !ok {
				continue
			}
			if ev.cands[n].Feasible {
				domains[d] = true
			}
			for _, guest := range ni.Guests {
				if !guest.Template && g.Selects(guest.Tags) {
					domains[d] = true
					members++
				}
			}
		}
		if members > len(domains) {
			what := "nodes"
			if t.TopologyKey != "node" {
				what = "domains of " + t.TopologyKey
			}
			return fmt.Sprintf("cause: %s with vm_anti_affinity %v by %s: %d members, %d eligible %s", r.Name, t.Tags, t.TopologyKey, members, len(domains), what)
		}
	}
	return ""
}

// domainOfKey is the node's domain under a topology key: its name for "node", else the label.
func domainOfKey(n *Node, key string) (string, bool) {
	if key == "node" {
		return n.Name, true
	}
	v, ok := n.Labels[key]
	return v, ok
}

// Budgets of the search for a proven refusal's smallest cause, in the search's units: each
// trial (the exact search on a part of the set) at most trialBudget, all of them together at
// most coreBudget, so that a refusal stays fast. A trial that runs out proves nothing.
const (
	coreBudget  = 200_000
	trialBudget = 20_000
)

// verdict is what a trial found for a part of the set.
type verdict int

const (
	fitsTogether verdict = iota
	refusedTogether
	undecided
)

// coreSearch finds a smallest cause of a proven refusal: a part of the set's new VMs that
// cannot be placed together while every part one VM smaller can (a deletion filter: a VM whose
// removal leaves a part that still cannot be placed is left out for good). The members of a
// class are alike, so each class is cut to the fewest it needs by halving. spent counts the
// trials' work; unsure says that some trial ran out of its budget, so the part found may
// not be the smallest.
type coreSearch struct {
	s      *search
	snap   *Snapshot
	spent  int
	unsure bool
}

// minimalCause says a smallest cause of the set's proven refusal in user words: the fewest
// of the set's new VMs that cannot be placed together (any one fewer can), and the rule or
// capacity that keeps them apart. The search must be unwound. It is "" when that part is the
// whole set and there is no rule or capacity to blame.
func (s *search) minimalCause(snap *Snapshot) string {
	cs := &coreSearch{s: s, snap: snap}
	keep := make([]int, len(s.classes))
	for ci, c := range s.classes {
		keep[ci] = len(c.reqs)
	}
	for ci := range s.classes {
		lo, hi := 0, keep[ci]
		for lo < hi {
			keep[ci] = (lo + hi) / 2
			switch cs.verdict(keep) {
			case refusedTogether:
				hi = keep[ci]
			case undecided:
				cs.unsure = true
				lo = keep[ci] + 1
			default:
				lo = keep[ci] + 1
			}
		}
		keep[ci] = hi
	}
	part := cs.part(keep)
	if len(part) == 0 {
		return ""
	}
	line := "cause: " + listNames(s.reqs, part)
	if rule := cs.rule(part); rule != "" {
		it := "it"
		if strings.Contains(rule, " and ") {
			it = "them"
		}
		line += " with " + rule + ": they cannot be placed together with " + it + ", and can without " + it
	} else if room := cs.room(part); room != "" {
		line += " " + room
	} else if len(part) < s.total {
		line += " cannot be placed together"
	} else {
		// The whole set, and nothing to blame that the refusal does not say already.
		return ""
	}
	if cs.unsure {
		line += "; not proven the smallest: the search for it ran out of its budget"
	}
	return line
}

// verdict is try's for the first keep[c] members of each class, without a trial when they
// are part of the largest subset the search placed: where no probe leaves terms out (a
// required vm_affinity, a DoNotSchedule spread), taking VMs out of a placement that holds
// leaves one that holds.
func (cs *coreSearch) verdict(keep []int) verdict {
	if !cs.s.loose {
		placed := make([]int, len(keep))
		for _, st := range cs.s.bestSteps {
			placed[st.class]++
		}
		within := true
		for ci := range keep {
			within = within && keep[ci] <= placed[ci]
		}
		if within {
			return fitsTogether
		}
	}
	return cs.try(cs.s.reqs, cs.part(keep))
}

// part lists the request indexes of the first keep[c] members of each class, in request order.
func (cs *coreSearch) part(keep []int) []int {
	var part []int
	for ci, c := range cs.s.classes {
		part = append(part, c.reqs[:keep[ci]]...)
	}
	slices.Sort(part)
	return part
}

// try runs the exact search, within its budget, for the new VMs part of reqs (the set's
// requests, perhaps with a rule left out) on the view without the set.
func (cs *coreSearch) try(reqs []Request, part []int) verdict {
	if len(part) == 0 {
		return fitsTogether
	}
	if cs.spent >= coreBudget {
		return undecided
	}
	vmids := make(map[int]int, len(part))
	for _, i := range part {
		vmids[i] = cs.s.vmids[i]
	}
	t := newSearch(cs.s.p, cs.s.infos, cs.snap, reqs, part, vmids)
	t.budget = min(trialBudget, coreBudget-cs.spent)
	defer func() {
		cs.spent += t.work + t.prefilterCost*len(t.classes)
		t.unwind()
	}()
	for _, c := range t.classes {
		if t.cause(c.rep) != "" {
			return refusedTogether
		}
	}
	// Most parts that fit, fit as they come: the search only for the others.
	if t.fill(); len(t.stack) == t.total && t.holds() {
		return fitsTogether
	}
	t.unwind()
	switch t.dfs(nil) {
	case found:
		return fitsTogether
	case deadEnd:
		return refusedTogether
	}
	return undecided
}

// rule names the rules of the part's VMs without which the part fits: their required
// vm_anti_affinity, their DoNotSchedule spreads or their required vm_affinity, each kind
// tried left out on its own once the part fits without all of them. It is "" when the part
// does not fit even without them.
func (cs *coreSearch) rule(part []int) string {
	kinds := []struct {
		drop     func(r *Request)
		describe func(r *Request) []string
	}{
		{func(r *Request) { r.VMAntiAffinity = requiredTerms(r.VMAntiAffinity, false) },
			func(r *Request) []string {
				return describeTerms("vm_anti_affinity", requiredTerms(r.VMAntiAffinity, true))
			}},
		{func(r *Request) {
			r.TopologySpread = slices.DeleteFunc(slices.Clone(r.TopologySpread), func(c SpreadConstraint) bool { return c.WhenUnsatisfiable == "DoNotSchedule" })
		}, describeSpreads},
		{func(r *Request) { r.VMAffinity = requiredTerms(r.VMAffinity, false) },
			func(r *Request) []string { return describeTerms("vm_affinity", requiredTerms(r.VMAffinity, true)) }},
	}
	words := make([][]string, len(kinds))
	all := slices.Clone(cs.s.reqs)
	some := 0
	for k, kind := range kinds {
		for _, i := range part {
			for _, w := range kind.describe(&cs.s.reqs[i]) {
				if !slices.Contains(words[k], w) {
					words[k] = append(words[k], w)
				}
			}
			kind.drop(&all[i])
		}
		if len(words[k]) > 0 {
			some++
		}
	}
	// One trial without every rule first: when even that does not fit, no rule is to blame.
	if some == 0 || cs.try(all, part) != fitsTogether {
		return ""
	}
	for k, kind := range kinds {
		if len(words[k]) == 0 {
			continue
		}
		if some == 1 {
			return strings.Join(words[k], " and ")
		}
		reqs := slices.Clone(cs.s.reqs)
		for _, i := range part {
			kind.drop(&reqs[i])
		}
		if cs.try(reqs, part) == fitsTogether {
			return strings.Join(words[k], " and ")
		}
	}
	// No kind of rule alone: all of them together.
	return strings.Join(slices.Concat(words...), " and ")
}

// requiredTerms keeps the required terms (required true) or the preferred ones.
func requiredTerms(terms []VMGroupTerm, required bool) []VMGroupTerm {
	return slices.DeleteFunc(slices.Clone(terms), func(t VMGroupTerm) bool { return (t.Weight == 0) != required })
}

func describeTerms(kind string, terms []VMGroupTerm) []string {
	var words []string
	for _, t := range terms {
		words = append(words, fmt.Sprintf("%s %s by %s", kind, describeSelector(t.Group()), t.TopologyKey))
	}
	return words
}

func describeSpreads(r *Request) []string {
	var words []string
	for _, c := range r.TopologySpread {
		if c.WhenUnsatisfiable != "DoNotSchedule" {
			continue
		}
		w := fmt.Sprintf("topology_spread %s by %s max_skew %d", describeSelector(c.Group()), c.TopologyKey, c.MaxSkew)
		if c.MinDomains > 0 {
			w += fmt.Sprintf(" min_domains %d", c.MinDomains)
		}
		words = append(words, w)
	}
	return words
}

// describeSelector writes a group as the refusals do: [tags], then any of and none of.
func describeSelector(g TagSelector) string {
	w := fmt.Sprint(g.Tags)
	if len(g.TagsAnyOf) > 0 {
		w += fmt.Sprint(" any of ", g.TagsAnyOf)
	}
	if len(g.TagsNoneOf) > 0 {
		w += fmt.Sprint(" none of ", g.TagsNoneOf)
	}
	return w
}

// room says what the part needs of a capacity it is short of, on the nodes its VMs pass but
// for the capacities, against what those nodes have free: "need 12 GiB of memory on pve1,
// pve2, which have 10 GiB of memory free (MemoryOvercommit)". Where every capacity has the
// room in sum, it says every capacity and that the pieces are too small. It is "" without a
// capacity filter or a node.
func (cs *coreSearch) room(part []int) string {
	s := cs.s
	p := s.p.of(&s.reqs[part[0]])
	nodes := cs.eligible(p, part)
	if len(nodes) == 0 {
		return ""
	}
	// Per capacity: what the part needs, what the nodes have free.
	var needs, frees, plugins []string
	short := -1
	for _, f := range p.filters {
		cp, ok := f.(CapacityPlugin)
		if !ok {
			continue
		}
		need, free, least := 0.0, 0.0, math.Inf(1)
		for _, i := range part {
			need += cp.Demand(&s.reqs[i])
		}
		for _, n := range nodes {
			room := max(0, cp.Room(s.infos[n]))
			free += room
			least = min(least, room)
		}
		// A capacity of which every node could take the whole part's need splits nothing.
		if need <= least {
			continue
		}
		if need > free && short < 0 {
			short = len(needs)
		}
		needs, frees, plugins = append(needs, cp.Amount(need)), append(frees, cp.Amount(free)), append(plugins, f.Name())
	}
	if len(needs) == 0 {
		return ""
	}
	names := make([]string, len(nodes))
	for j, n := range nodes {
		names[j] = s.infos[n].Node.Name
	}
	if short >= 0 {
		return fmt.Sprintf("need %s on %s, which have %s free (%s)", needs[short], listed(names), frees[short], plugins[short])
	}
	// Every capacity has the room in sum: the nodes' pieces are too small.
	return fmt.Sprintf("need %s on %s, which have %s free (%s), in pieces too small for them",
		strings.Join(needs, " and "), listed(names), strings.Join(frees, " and "), strings.Join(plugins, ", "))
}

// eligible lists the nodes where some VM of the part passes every filter of p but the
// capacities, in view order.
func (cs *coreSearch) eligible(p *Profile, part []int) []int {
	ok := make([]bool, len(cs.s.infos))
	for _, i := range part {
		r := &cs.s.reqs[i]
		state := NewCycleState()
		state.nodes = cs.s.infos
		if p.preFilter(state, r, cs.s.infos) != nil {
			continue
		}
	next:
		for n, ni := range cs.s.infos {
			if ok[n] {
				continue
			}
			for _, f := range p.filters {
				if _, capacity := f.(CapacityPlugin); !capacity && f.Filter(state, r, ni) != nil {
					continue next
				}
			}
			ok[n] = true
		}
	}
	var nodes []int
	for n := range ok {
		if ok[n] {
			nodes = append(nodes, n)
		}
	}
	return nodes
}

// listNames lists the requests' names, at most listedNames of them.
func listNames(reqs []Request, part []int) string {
	names := make([]string, len(part))
	for j, i := range part {
		names[j] = reqs[i].Name
	}
	return listed(names)
}

// listed joins names, at most listedNames of them and how many more.
func listed(names []string) string {
	line := strings.Join(names[:min(len(names), listedNames)], ", ")
	if more := len(names) - listedNames; more > 0 {
		line += fmt.Sprintf(" and %d more", more)
	}
	return line
}

package scheduler

import (
	"cmp"
	"slices"
)

// The large-neighbourhood search (LNS, Shaw 1998) takes over beyond the complete sizes, once
// the exact search's restarts have spent their share of the budget.
//
// Why this one: a tight set of 50 VMs on 64 nodes is a vector bin packing with next to no
// slack, dressed in anti-affinity and spreads. The branch and bound is exact on a small set,
// but on a large one an early bad choice costs it its budget; a local search that moves one
// VM at a time (the repair this replaces) stalls, because an exact fit needs several VMs to
// move at once. The LNS keeps a placement that holds and re-solves a few of its nodes at a
// time with the same branch and bound, so that every filter, bound and memo of the dfs serves
// it and whatever it accepts passes the same whole check. The neighbourhood is first the
// nodes with the most room left: in a tight set, the room of the VMs not placed lies there in
// pieces too small for them, and freeing those nodes lets the sub-search gather the pieces.
// No Go library serves: a constraint or SAT solver (gophersat, for one) would need every
// filter compiled into its own terms, a copy of the plugins that would drift from them and
// lose their words; the filters are plugins, and only they can say whether a node passes.
//
// Every choice is fixed by the inputs: neighbourhoods ranked by room, blurred by a hash of the
// iteration (noise), budgets counted in work.

// lnsShare is the part of the search budget (at most searchBudget) that the restarts of the
// exact search leave to the LNS; beyond the complete sizes bin completion takes binsShare of
// it first.
const lnsShare = 0.7

// lnsStep is the budget unit of one neighbourhood's sub-search; the sub-searches' budgets
// follow Luby's sequence, so that a neighbourhood too large to settle soon costs little and
// now and then one is given the time to.
const lnsStep = 20_000

// lnsNodes is how many nodes a neighbourhood frees, in turn.
var lnsNodes = []int{9, 6, 12, 8}

// lns starts from the deepest branch the exact search built, less the VMs that do not hold
// beside the others (the last first, one at a time), with every VM that still fits added
// tightest fit first (fillBy, tightest; the scores' choice, fill, places
// fewer sets in the end). Then, until every VM is placed or its budget runs out, it frees the
// VMs on a neighbourhood of nodes and searches, exactly as the dfs does, for a placement of the freed VMs and one unplaced VM more, the other unplaced VMs
// left out (hide). A placement the dfs finds holds whole (it checks every full branch), so
// the current placement always holds and each success places one VM more. It returns whether
// every VM is placed; the stack then holds the placement.
func (s *search) lns(budget int) bool {
	s.unwind()
	s.work, s.budget = 0, budget
	// The nodes each class may use on the empty cluster, where the neighbourhoods are drawn.
	usable := make([][]int, len(s.classes))
	for ci, c := range s.classes {
		usable[ci], _ = s.feasible(c, nil)
	}
	steps := slices.Clone(s.deepest)
	s.place(steps)
	for s.loose && !s.holds() {
		// The deepest branch less, one at a time, the last VM that does not hold beside
		// the others (a spread's member in a domain that has one too many, most often).
		for j := len(s.stack) - 1; j >= 0; j-- {
			if !s.stepHolds(s.stack[j]) {
				steps = slices.Delete(steps, j, j+1)
				break
			}
		}
		s.place(steps)
	}
	s.fillBy(s.tightest)
	// The placements the LNS keeps hold whole: the largest is what a refusal counts.
	s.record()
	current := slices.Clone(s.stack)
	if len(current) == s.total {
		// As the dfs checks a full branch.
		return s.holds()
	}
	total, dead := s.total, s.dead
	defer func() { s.total, s.dead = total, dead }()
	stall := 0
	for it := 1; s.work < budget; it++ {
		s.place(current)
		target := s.unplacedClass(it)
		hood := s.neighbourhood(target, usable[target], it, stall)
		show := s.hide(target)
		kept := current[:0:0]
		for _, st := range current {
			if !hood[st.node] {
				kept = append(kept, st)
			}
		}
		s.place(kept)
		s.total = len(current) + 1
		// The states dead in one sub-search are dead for its VMs only.
		s.dead = map[string]struct{}{}
		s.restart = it
		s.budget = min(budget, s.work+luby(it)*lnsStep)
		stall++
		if s.dfs(nil) == found {
			current = slices.Clone(s.stack)
			stall = 0
			s.record()
		}
		s.unwind()
		show()
		if len(current) == total {
			s.place(current)
			return true
		}
	}
	return false
}

// hide leaves out every unplaced member of every class but one member of class target, so
// that the dfs searches for a placement of the placed and freed VMs and that one; the
// returned function shows them again. The members placed are the first of their class's
// requests (push takes them in order), so the hidden ones are the last.
func (s *search) hide(target int) (show func()) {
	hidden := make([]int, len(s.classes))
	for ci, c := range s.classes {
		hidden[ci] = c.left
		if ci == target {
			hidden[ci]--
		}
		c.reqs = c.reqs[:len(c.reqs)-hidden[ci]]
		c.left -= hidden[ci]
	}
	return func() {
		for ci, c := range s.classes {
			c.reqs = c.reqs[:len(c.reqs)+hidden[ci]]
			c.left += hidden[ci]
		}
	}
}

// tightest is the node of at on which class ci's next VM leaves the least room (as the dfs
// orders them; the first without capacities): the start of the LNS packs as the dfs does.
func (s *search) tightest(ci int, at []int, _ *CycleState) int {
	if len(s.caps) == 0 {
		return at[0]
	}
	room := s.leftover(ci, at, nil)
	return slices.MinFunc(at, func(a, b int) int { return cmp.Or(cmp.Compare(room[a], room[b]), a-b) })
}

// place makes the branch hold the placements of steps, in their order, from an empty branch:
// the members of each class are taken in request order again, as push takes them.
func (s *search) place(steps []step) {
	s.unwind()
	for _, st := range steps {
		s.push(st.class, st.node)
	}
}

// unplacedClass is one of the classes with members left, the it-th in turn.
func (s *search) unplacedClass(it int) int {
	var left []int
	for ci, c := range s.classes {
		if c.left > 0 {
			left = append(left, ci)
		}
	}
	return left[it%len(left)]
}

// neighbourhood picks the nodes whose VMs iteration it frees: about a quarter among the nodes the
// target class may use, the rest among all, each time the nodes with the most room left
// first (in units of the mean demand of the set's VMs, summed over the capacities), blurred
// by the iteration, the more the longer no VM was added (stall), so that each tries another
// mix.
func (s *search) neighbourhood(target int, usable []int, it, stall int) []bool {
	size := min(len(s.infos), lnsNodes[it%len(lnsNodes)])
	room := make([]float64, len(s.infos))
	for _, cp := range s.caps {
		need, count := 0.0, 0
		for _, c := range s.classes {
			need += float64(len(c.reqs)) * cp.Demand(c.rep)
			count += len(c.reqs)
		}
		if need == 0 {
			continue
		}
		unit := need / float64(count)
		for n, ni := range s.infos {
			room[n] += max(0, cp.Room(ni)) / unit
		}
	}
	s.work += len(s.infos)
	blur := lnsBlur * float64(1+min(stall, 20))
	for n := range room {
		room[n] += noise(uint64(it), uint64(n), uint64(target)) * blur
	}
	hood := make([]bool, len(s.infos))
	pick := func(from []int, k int) {
		ranked := slices.DeleteFunc(slices.Clone(from), func(n int) bool { return hood[n] })
		slices.SortStableFunc(ranked, func(a, b int) int { return cmp.Compare(room[b], room[a]) })
		for _, n := range ranked[:min(k, len(ranked))] {
			hood[n] = true
		}
	}
	pick(usable, (size+2)/4)
	all := make([]int, len(s.infos))
	for n := range all {
		all[n] = n
	}
	pick(all, size-(size+2)/4)
	return hood
}

// lnsBlur is how far an iteration moves a node's room at first, in the units of
// neighbourhood: far less than a VM, so that the nodes with room come first.
const lnsBlur = 0.05

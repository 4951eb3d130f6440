package scheduler

import (
	"cmp"
	"slices"
)

// Bin completion (Korf 2002) branches on nodes, not VMs: it takes the open node with the
// fewest ways to fill it, enumerates the sets of VMs left (by class) that fill it as far as
// they can, fullest first, places each set through the same checks as the dfs (the node in
// every member's feasible list as it comes, settledHold, advance) and closes the node. A
// closed node takes no VM more, so its room left is waste, and the waste of all closed nodes
// may not exceed what the VMs left leave unused of the open nodes (slack): in a set with no
// room to spare, every node must be filled exactly, which cuts every other set at once. The
// dfs's bound counts a node's room as long as some VM left may use it, so a branch that
// strands room in pieces no combination of the VMs left fills runs on until a VM runs out of
// nodes. The sets tried per node are capped, so this search is not complete; a full branch
// counts only after the whole check (holds), as the dfs's does, and it proves nothing.

// binsShare is the part of the search budget that bin completion spends beyond the complete
// sizes, after the restarts of the exact search and before the LNS.
const binsShare = 0.25

// binSets bounds the sets of VMs tried on one node (those that pass pushSet); binSteps the
// sets of a node visited while listing them.
const (
	binSets  = 16
	binSteps = 4096
)

// binSet is a set of VMs for one node: how many of each class, and the room it leaves per
// capacity, in units of the mean demand of the VMs left (waste).
type binSet struct {
	count []int
	waste float64
}

// bins runs bin completion from an empty branch within budget and reports whether it placed
// every VM; the stack then holds the placement.
func (s *search) bins(budget int) bool {
	if len(s.caps) == 0 {
		// Without capacities every set of VMs fits every node: nothing to complete.
		return false
	}
	s.unwind()
	s.work, s.budget = 0, budget
	lv, ok := s.advance(nil)
	if !ok {
		return false
	}
	closed := make([]bool, len(s.infos))
	return s.binFill(lv, closed, map[string]struct{}{}) == found
}

// binFill closes one more node, on each of its sets in turn, and recurses. seen holds the
// states (counts and closed nodes) this search left without a placement (its caps make that
// no proof: the dfs's dead states are not written).
func (s *search) binFill(lv *level, closed []bool, seen map[string]struct{}) outcome {
	if s.work > s.budget {
		return exhausted
	}
	if len(s.stack) == s.total {
		if s.holds() {
			return found
		}
		return deadEnd
	}
	key := s.key()
	if _, ok := s.dead[key]; ok {
		return deadEnd
	}
	b := []byte(key)
	for _, c := range closed {
		if c {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	ckey := string(b)
	if _, ok := seen[ckey]; ok {
		return deadEnd
	}
	slack, units, ok := s.slack(lv, closed)
	if !ok {
		seen[ckey] = struct{}{}
		return deadEnd
	}
	node, nodeCut := -1, false
	var sets []binSet
	for n := range s.infos {
		if closed[n] {
			continue
		}
		cands, fits, cut := s.binSets(lv, n, slack, units)
		if !fits || cut && len(cands) == 0 {
			// No VM left passes this node: it stays as it is, its room out of slack
			// already. Or its sets are too many to list: a node with fewer comes first.
			continue
		}
		if len(cands) == 0 {
			seen[ckey] = struct{}{}
			return deadEnd
		}
		// The fewest sets first; a node whose list was cut after the others, its count
		// being a guess.
		if node < 0 || cut != nodeCut && !cut || cut == nodeCut && len(cands) < len(sets) {
			node, sets, nodeCut = n, cands, cut
		}
	}
	if node < 0 {
		seen[ckey] = struct{}{}
		return deadEnd
	}
	closed[node] = true
	defer func() { closed[node] = false }()
	tried := 0
	for _, set := range sets {
		if tried == binSets {
			break
		}
		depth := len(s.stack)
		out := deadEnd
		if next, ok := s.pushSet(lv, node, set); ok {
			tried++
			out = s.binFill(next, closed, seen)
		}
		if out == found {
			return found
		}
		for len(s.stack) > depth {
			s.pop()
		}
		if out == exhausted {
			return exhausted
		}
	}
	seen[ckey] = struct{}{}
	return deadEnd
}

// slack is, per capacity, how much of the open nodes' room the VMs left leave unused (each
// node counted at most at its room and at what the VMs feasible on it need, as bounded
// counts), and the unit of each capacity (the mean demand of the VMs left). ok is false when
// the VMs left need more than that.
func (s *search) slack(lv *level, closed []bool) (slack, units []float64, ok bool) {
	s.work += len(s.infos)
	wanted := make([]float64, len(s.infos))
	slack, units = make([]float64, len(s.caps)), make([]float64, len(s.caps))
	for k, cp := range s.caps {
		clear(wanted)
		need, left := 0.0, 0
		for ci, c := range s.classes {
			if c.left == 0 {
				continue
			}
			d := float64(c.left) * cp.Demand(c.rep)
			need += d
			left += c.left
			for _, n := range lv.feasible[ci] {
				wanted[n] += d
			}
		}
		have := 0.0
		for n, w := range wanted {
			if w > 0 && !closed[n] {
				have += min(w, max(0, cp.Room(s.infos[n])))
			}
		}
		slack[k] = have*(1+1e-12) + 1e-6 - need
		if slack[k] < 0 {
			return nil, nil, false
		}
		units[k] = 1
		if need > 0 {
			units[k] = need / float64(left)
		}
	}
	return slack, units, true
}

// binSets lists the maximal sets of VMs left that fit node n by every capacity and leave no
// more room than slack allows, fullest first; fits is false when no class left passes n at
// all, cut true when the listing stopped after binSteps sets visited. A class is a candidate where the level finds it feasible; the
// members' other checks come as pushSet places them.
func (s *search) binSets(lv *level, n int, slack, units []float64) (sets []binSet, fits, cut bool) {
	var cands []int
	for ci, c := range s.classes {
		if c.left > 0 && slices.Contains(lv.feasible[ci], n) {
			cands = append(cands, ci)
		}
	}
	s.work += 1 + len(cands)
	if len(cands) == 0 {
		return nil, false, false
	}
	ni := s.infos[n]
	room := make([]float64, len(s.caps))
	// usable is what the node may take of each capacity: its room, at most what its
	// candidates need (as slack counts it); rest[j][k] what candidates j.. need together.
	usable := make([]float64, len(s.caps))
	rest := make([][]float64, len(cands)+1)
	for j := range rest {
		rest[j] = make([]float64, len(s.caps))
	}
	for j := len(cands) - 1; j >= 0; j-- {
		c := s.classes[cands[j]]
		for k, cp := range s.caps {
			rest[j][k] = rest[j+1][k] + float64(c.left)*cp.Demand(c.rep)
		}
	}
	for k, cp := range s.caps {
		room[k] = max(0, cp.Room(ni))
		usable[k] = min(room[k], rest[0][k])
	}
	count := make([]int, len(s.classes))
	steps := 0
	// walk visits each set once, as combinations: taken is the set so far, whose members
	// come from candidates before j, and more of candidate j.
	var walk func(j int, taken []float64)
	walk = func(j int, taken []float64) {
		steps++
		// Even every candidate from j on leaves more waste than slack allows.
		for k := range s.caps {
			if usable[k]-taken[k]-rest[j][k] > slack[k] {
				return
			}
		}
		maximal := true
		next := make([]float64, len(s.caps))
		for i := j; i < len(cands) && steps <= binSteps; i++ {
			ci := cands[i]
			c := s.classes[ci]
			if count[ci] == c.left || !s.fitsRoom(c.rep, room, taken) {
				continue
			}
			maximal = false
			for k, cp := range s.caps {
				next[k] = taken[k] + cp.Demand(c.rep)
			}
			count[ci]++
			walk(i, slices.Clone(next))
			count[ci]--
		}
		if !maximal || steps > binSteps {
			return
		}
		// Maximal: no candidate before j with a member left out fits either.
		for _, ci := range cands[:j] {
			if c := s.classes[ci]; count[ci] < c.left && s.fitsRoom(c.rep, room, taken) {
				return
			}
		}
		waste := 0.0
		for k := range s.caps {
			if usable[k]-taken[k] > slack[k] {
				return
			}
			waste += (usable[k] - taken[k]) / units[k]
		}
		sets = append(sets, binSet{count: slices.Clone(count), waste: waste})
	}
	walk(0, make([]float64, len(s.caps)))
	s.work += steps / 8
	slices.SortStableFunc(sets, func(a, b binSet) int { return cmp.Compare(a.waste, b.waste) })
	return sets, true, steps > binSteps
}

// fitsRoom reports whether one more VM of r fits room beside taken, by every capacity.
func (s *search) fitsRoom(r *Request, room, taken []float64) bool {
	for k, cp := range s.caps {
		if taken[k]+cp.Demand(r) > room[k]*(1+1e-12)+1e-6 {
			return false
		}
	}
	return true
}

// pushSet places set on node n, one VM at a time, each only where the level finds its class
// feasible then, and returns the level after the last; ok is false (with the VMs pushed so
// far left on the stack) when one does not pass or the branch ends.
func (s *search) pushSet(lv *level, n int, set binSet) (*level, bool) {
	for ci, m := range set.count {
		for range m {
			if !slices.Contains(lv.feasible[ci], n) {
				return lv, false
			}
			s.push(ci, n)
			if s.loose && !s.settledHold() {
				return lv, false
			}
			next, ok := s.advance(lv)
			if !ok {
				return lv, false
			}
			lv = next
		}
	}
	return lv, true
}

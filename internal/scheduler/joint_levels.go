package scheduler

import (
	"cmp"
	"slices"
	"strings"
)

// level is what the search knows of each class at one depth of its branch: the nodes its
// probe passes, with the pre-filter state and the probe they were checked with (nil for a
// class with no member left).
type level struct {
	feasible [][]int
	states   []*CycleState
	probes   []*Request
}

// interactions lists, per class, the classes whose placement can change its verdict on a
// node other than the one they land on: those its required terms or DoNotSchedule spreads
// count, those whose required anti-affinity counts it (their records keep it out), and those
// sharing a tag with it (ProxLB's tag groups). Any other placement changes only its verdict
// on the node it lands on, so the class's pre-filter state stays valid and only that node
// needs checking again.
func (s *search) interactions() [][]bool {
	out := make([][]bool, len(s.classes))
	for a, ca := range s.classes {
		out[a] = make([]bool, len(s.classes))
		for b, cb := range s.classes {
			out[a][b] = counts(ca.rep, cb.rep.Tags) || recordsAgainst(cb.rep, ca.rep.Tags) || shareTag(ca.rep.Tags, cb.rep.Tags)
		}
	}
	return out
}

// counts reports whether a required term or DoNotSchedule spread of r counts a VM carrying
// tags.
func counts(r *Request, tags []string) bool {
	for _, terms := range [][]VMGroupTerm{r.VMAffinity, r.VMAntiAffinity} {
		for _, t := range terms {
			if t.Weight == 0 && t.Group().Selects(tags) {
				return true
			}
		}
	}
	return slices.ContainsFunc(r.TopologySpread, func(c SpreadConstraint) bool {
		return c.WhenUnsatisfiable == "DoNotSchedule" && c.Group().Selects(tags)
	})
}

// recordsAgainst reports whether a required anti-affinity of r keeps out a VM carrying tags.
func recordsAgainst(r *Request, tags []string) bool {
	return slices.ContainsFunc(r.VMAntiAffinity, func(t VMGroupTerm) bool { return t.Weight == 0 && t.Group().Selects(tags) })
}

func shareTag(a, b []string) bool {
	return slices.ContainsFunc(a, func(t string) bool {
		return slices.ContainsFunc(b, func(u string) bool { return strings.EqualFold(t, u) })
	})
}

// touches reports whether the placement st can change class ci's verdict beyond st's node:
// a class it interacts with, or disks on a shared storage, which every node's free space
// counts.
func (s *search) touches(ci int, st step) bool {
	if s.inter[ci][st.class] {
		return true
	}
	if s.classes[ci].rep.DiskBytes == 0 || st.guest.DiskBytes == 0 {
		return false
	}
	return slices.ContainsFunc(s.infos[st.node].Node.Storages, func(x Storage) bool { return x.Name == st.guest.Storage && x.Shared })
}

// advance is the level after the branch's last placement, from its parent's (nil: the
// root, where every class is checked on every node). A class the placement touches is
// pre-filtered again and checked on the nodes it passed before (the probes only lose nodes);
// any other keeps its state and loses at most the node the placement took. ok is false when
// a class with members left passes no node.
func (s *search) advance(parent *level) (lv *level, ok bool) {
	lv = &level{feasible: make([][]int, len(s.classes)), states: make([]*CycleState, len(s.classes)), probes: make([]*Request, len(s.classes))}
	var last *step
	if parent != nil && len(s.stack) > 0 {
		last = &s.stack[len(s.stack)-1]
	}
	for ci, c := range s.classes {
		if c.left == 0 {
			continue
		}
		probe := s.probe(c)
		if last == nil || parent.states[ci] == nil || parent.probes[ci] != probe || s.touches(ci, *last) {
			var within []int
			if parent != nil {
				within = parent.feasible[ci]
			}
			lv.feasible[ci], lv.states[ci] = s.feasible(c, within)
		} else {
			lv.feasible[ci], lv.states[ci] = parent.feasible[ci], parent.states[ci]
			if i := slices.Index(lv.feasible[ci], last.node); i >= 0 {
				s.work++
				if !s.passes(lv.states[ci], probe, s.infos[last.node]) {
					lv.feasible[ci] = slices.Delete(slices.Clone(lv.feasible[ci]), i, i+1)
				}
			}
		}
		lv.probes[ci] = probe
		if len(lv.feasible[ci]) == 0 {
			return lv, false
		}
	}
	return lv, s.bounded(lv)
}

// capacities lists the capacity filters of the set's profile when every class runs it (a set
// of several profiles may count capacities each its own way: no bound then).
func (s *search) capacities() []CapacityPlugin {
	p := s.p.of(s.classes[0].rep)
	for _, c := range s.classes {
		if s.p.of(c.rep) != p {
			return nil
		}
	}
	var caps []CapacityPlugin
	for _, f := range p.filters {
		if c, ok := f.(CapacityPlugin); ok {
			caps = append(caps, c)
		}
	}
	return caps
}

// bounded checks, per capacity, that the VMs left to place need no more than the nodes they
// may still use can give: each node at most its room, and at most what the VMs feasible on it
// need. Tight sets fail it as soon as a branch strands room that no VM left can use, long
// before a VM runs out of nodes.
func (s *search) bounded(lv *level) bool {
	if len(s.caps) == 0 {
		return true
	}
	s.work += len(s.infos)
	wanted := make([]float64, len(s.infos))
	for _, cp := range s.caps {
		clear(wanted)
		need := 0.0
		for ci, c := range s.classes {
			if c.left == 0 {
				continue
			}
			d := float64(c.left) * cp.Demand(c.rep)
			need += d
			for _, n := range lv.feasible[ci] {
				wanted[n] += d
			}
		}
		have := 0.0
		for n, w := range wanted {
			if w > 0 {
				have += min(w, max(0, cp.Room(s.infos[n])))
			}
		}
		if need > have*(1+1e-12)+1e-6 {
			return false
		}
	}
	return true
}

// order ranks class ci's feasible nodes for the branch: for a class whose probe leaves terms
// out, the nodes its whole request passes now first (those terms are best met as Schedule
// would meet them); then the tightest fit first, the node on which the fewest classes with
// members left still fit once it takes the VM (best fit: a node left with room it cannot
// use is what strands a later VM), blurred by each restart its own way; ties by node.
func (s *search) order(ci int, lv *level) []int {
	at := slices.Clone(lv.feasible[ci])
	c := s.classes[ci]
	first := map[int]bool{}
	if lv.probes[ci] != c.rep {
		s.work += s.prefilterCost + len(at)
		full := NewCycleStateOver(s.infos)
		r := s.member(c)
		if s.p.preFilter(full, r, s.infos) == nil {
			for _, n := range at {
				first[n] = s.passes(full, r, s.infos[n])
			}
		}
		if s.narrow {
			at = slices.DeleteFunc(at, func(n int) bool { return !first[n] })
		}
	}
	room := s.leftover(ci, at, lv)
	if s.restart > 0 {
		// Each restart blurs the fit a little, its own way, so that it tries other branches
		// first among near equals; the same restart always blurs alike.
		for _, n := range at {
			room[n] += noise(uint64(s.restart), uint64(n), uint64(ci)) * restartBlur
		}
	}
	slices.SortStableFunc(at, func(a, b int) int {
		switch {
		case first[a] != first[b]:
			if first[a] {
				return -1
			}
			return 1
		case room[a] != room[b]:
			return cmp.Compare(room[a], room[b])
		}
		return a - b
	})
	return at
}

// leftover is what each node of at keeps once it takes class ci's next VM, the less the
// better a fit: with capacities, their room left in units of the mean demand of the VMs left
// to place, summed; without, how many VMs left still fit there.
func (s *search) leftover(ci int, at []int, lv *level) map[int]float64 {
	room := make(map[int]float64, len(at))
	c := s.classes[ci]
	if len(s.caps) > 0 {
		for _, cp := range s.caps {
			need, left := 0.0, 0
			for _, other := range s.classes {
				need += float64(other.left) * cp.Demand(other.rep)
				left += other.left
			}
			if need == 0 {
				continue
			}
			unit := need / float64(left)
			for _, n := range at {
				s.work++
				room[n] += (cp.Room(s.infos[n]) - cp.Demand(c.rep)) / unit
			}
		}
		return room
	}
	for _, n := range at {
		s.push(ci, n)
		for cj, other := range s.classes {
			if other.left > 0 && lv.states[cj] != nil && slices.Contains(lv.feasible[cj], n) {
				s.work++
				if s.passes(lv.states[cj], lv.probes[cj], s.infos[n]) {
					room[n] += float64(other.left)
				}
			}
		}
		s.pop()
	}
	return room
}

// restartBlur is how far a restart may move a node's fit, in the units of leftover.
const restartBlur = 0.5

// noise is a number in [0, 1) fixed by its arguments (splitmix64).
func noise(a, b, c uint64) float64 {
	x := a*0x9E3779B97F4A7C15 ^ b*0xBF58476D1CE4E5B9 ^ c*0x94D049BB133111EB
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}

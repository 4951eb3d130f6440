package scheduler

import (
	"slices"
	"sort"
)

// IDSet is the set of VMIDs in use: every qemu and lxc guest, reservations and ids handed out
// earlier in the same decision. It is kept sorted, so that the lowest free id of a range costs
// a binary search plus a walk over the used ids at its start, not one lookup per id.
type IDSet struct {
	sorted []int
}

// NewIDSet returns the set of the given ids; duplicates are fine.
func NewIDSet(ids ...int) IDSet {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	return IDSet{sorted: slices.Compact(sorted)}
}

// Has reports whether id is taken.
func (s IDSet) Has(id int) bool {
	_, found := slices.BinarySearch(s.sorted, id)
	return found
}

// LowestFree returns the lowest id in [lo, hi] that is not taken. Taken ids are distinct and
// sorted, so sorted[i]-i stays constant along a run of consecutive ids and grows after a gap:
// the end of the run starting at lo is found by binary search too.
func (s IDSet) LowestFree(lo, hi int) (int, bool) {
	k := sort.SearchInts(s.sorted, lo)
	if k == len(s.sorted) || s.sorted[k] != lo {
		return lo, lo <= hi
	}
	rest := s.sorted[k:]
	run := sort.Search(len(rest), func(i int) bool { return rest[i]-i != lo })
	id := lo + run
	return id, id <= hi
}

// AllTaken reports whether every id in [lo, hi] is taken.
func (s IDSet) AllTaken(lo, hi int) bool {
	return sort.SearchInts(s.sorted, hi+1)-sort.SearchInts(s.sorted, lo) == hi-lo+1
}

func (s IDSet) clone() IDSet { return IDSet{sorted: slices.Clone(s.sorted)} }

func (s *IDSet) add(id int) {
	i, found := slices.BinarySearch(s.sorted, id)
	if !found {
		s.sorted = slices.Insert(s.sorted, i, id)
	}
}

func usedIDs(snap *Snapshot) IDSet {
	ids := make([]int, 0, len(snap.Guests)+len(snap.Reservations))
	for _, g := range snap.Guests {
		ids = append(ids, g.VMID)
	}
	for _, r := range snap.Reservations {
		ids = append(ids, r.VMID)
	}
	slices.Sort(ids)
	return IDSet{sorted: slices.Compact(ids)}
}

// defaultUpper is PVE's upper bound (exclusive) for /cluster/nextid when next-id is unset.
const defaultUpper = 1000000

// nextFreeID is the id PVE's /cluster/nextid would give: the lowest free id in the datacenter
// bounds, [100, 1000000) by default.
func nextFreeID(bounds *IDBounds, used IDSet) (int, error) {
	lower, upper := MinVMID, defaultUpper
	if bounds != nil {
		if bounds.Lower > lower {
			lower = bounds.Lower
		}
		if bounds.Upper > 0 {
			upper = bounds.Upper
		}
	}
	if upper > MaxVMID+1 {
		upper = MaxVMID + 1
	}
	if id, ok := used.LowestFree(lower, upper-1); ok {
		return id, nil
	}
	return 0, &UnschedulableError{Message: "no free vmid in datacenter next-id range [" + itoa(lower) + ", " + itoa(upper) + ")"}
}

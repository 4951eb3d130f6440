package scheduler

// IDSet is the set of VMIDs in use: every qemu and lxc guest, reservations and ids handed out
// earlier in the same decision.
type IDSet map[int]struct{}

// Has reports whether id is taken.
func (s IDSet) Has(id int) bool {
	_, ok := s[id]
	return ok
}

func (s IDSet) add(id int) { s[id] = struct{}{} }

func usedIDs(snap *Snapshot) IDSet {
	used := make(IDSet, len(snap.Guests)+len(snap.Reservations))
	for _, g := range snap.Guests {
		used.add(g.VMID)
	}
	for _, r := range snap.Reservations {
		used.add(r.VMID)
	}
	return used
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
	for id := lower; id < upper; id++ {
		if !used.Has(id) {
			return id, nil
		}
	}
	return 0, &UnschedulableError{Message: "no free vmid in datacenter next-id range [" + itoa(lower) + ", " + itoa(upper) + ")"}
}

package changeset

import (
	"maps"
	"slices"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// idTaken tells whether a guest or reservation of snap holds vmid.
func idTaken(snap scheduler.Snapshot, vmid int) bool {
	return slices.ContainsFunc(snap.Guests, func(g scheduler.Guest) bool { return g.VMID == vmid }) ||
		slices.ContainsFunc(snap.Reservations, func(r scheduler.Reservation) bool { return r.VMID == vmid })
}

// withOtherPicks adds the picks of VMs that are not members: a new VM fed by a data source
// (node and vmid from its pick) is that pick, counted once.
func (c *Set) withOtherPicks(snap scheduler.Snapshot) scheduler.Snapshot {
	return c.withPicks(snap, slices.Collect(maps.Keys(c.Members))...)
}

// withPicks adds the picks, except those of the names given.
func (c *Set) withPicks(snap scheduler.Snapshot, except ...string) scheduler.Snapshot {
	if len(c.Picks) == 0 {
		return snap
	}
	skip := map[string]bool{}
	for _, n := range except {
		skip[n] = true
	}
	res := append([]scheduler.Reservation(nil), snap.Reservations...)
	for _, name := range slices.Sorted(maps.Keys(c.Picks)) {
		if !skip[name] {
			res = append(res, c.Picks[name])
		}
	}
	snap.Reservations = res
	return snap
}

// withPlanned adds the plan's placements of the VMs this process has not decided and is not
// deciding now (planhints): the room the plan promised them.
func (c *Set) withPlanned(snap scheduler.Snapshot) scheduler.Snapshot {
	res := slices.Clip(snap.Reservations)
	for _, r := range c.planned {
		if !c.arrived[r.Name] && c.Members[r.Name] == nil {
			res = append(res, r)
		}
	}
	snap.Reservations = res
	return snap
}

// withTentative adds the other members' tentative placements as reservations.
func (c *Set) withTentative(snap scheduler.Snapshot, except string) scheduler.Snapshot {
	res := append([]scheduler.Reservation(nil), snap.Reservations...)
	for _, name := range slices.Sorted(maps.Keys(c.Members)) {
		m := c.Members[name]
		if name == except || m.Tentative == nil {
			continue
		}
		res = append(res, m.Tentative.Reservation(&m.Req))
	}
	snap.Reservations = res
	return snap
}

// withSizes gives the existing guests their planned sizes (a copy of the guest list).
func (c *Set) withSizes(snap *scheduler.Snapshot) {
	if len(c.sizes) == 0 {
		return
	}
	guests := append([]scheduler.Guest(nil), snap.Guests...)
	for i := range guests {
		if s, ok := c.sizes[guests[i].VMID]; ok {
			guests[i].CPUs, guests[i].MaxMem = s.CPUs, s.Memory
			if s.disk > guests[i].DiskBytes {
				guests[i].DiskBytes = s.disk
			}
		}
	}
	snap.Guests = guests
}

// sorted returns the members in name order, as requests and the set's profile (each request
// decided by its own): the joint search is deterministic for a set, whatever order Terraform
// planned it in. planTime leaves out the VMs the members replace.
func (c *Set) sorted(snap scheduler.Snapshot, planTime bool) ([]scheduler.Request, *scheduler.Profile, scheduler.Snapshot) {
	names := slices.Sorted(maps.Keys(c.Members))
	reqs := make([]scheduler.Request, len(names))
	byName := make(map[string]*scheduler.Profile, len(names))
	for i, n := range names {
		m := c.Members[n]
		reqs[i], byName[n] = m.Req, m.Profile
		if planTime {
			snap = without(snap, m.Replaces)
		}
	}
	return reqs, scheduler.SetProfile(c.Members[names[0]].Profile, byName), snap
}

// without is snap without the guest vmid (0: unchanged): a replaced VM's capacity is its
// replacement's.
func without(snap scheduler.Snapshot, vmid int) scheduler.Snapshot {
	if vmid == 0 {
		return snap
	}
	guests := make([]scheduler.Guest, 0, len(snap.Guests))
	for _, g := range snap.Guests {
		if g.VMID != vmid {
			guests = append(guests, g)
		}
	}
	snap.Guests = guests
	return snap
}

// Pending adds to snap the placements of this process's creates not created yet that snap
// lacks (by name): the joint decision's for the members decided with another (batch), their
// tentative ones, and the plan's for those not decided (withPlanned); the decided ones are the
// ledger's. A VM's HA rules count its group's members with them, so that the first VMs of a
// count are not written with rules the next refresh finds changed.
func (c *Set) Pending(snap scheduler.Snapshot) scheduler.Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending(snap)
}

// pending is Pending under the lock.
func (c *Set) pending(snap scheduler.Snapshot) scheduler.Snapshot {
	known := map[string]bool{}
	for _, g := range snap.Guests {
		known[g.Name] = true
	}
	for _, r := range snap.Reservations {
		known[r.Name] = true
	}
	var more []scheduler.Reservation
	add := func(r scheduler.Reservation) {
		if !known[r.Name] {
			known[r.Name] = true
			more = append(more, r)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Members)) {
		m := c.Members[name]
		if p, ok := c.batch[name]; ok {
			add(p.Reservation(&m.Req))
		} else if m.Tentative != nil {
			add(m.Tentative.Reservation(&m.Req))
		}
	}
	for _, r := range c.withPlanned(scheduler.Snapshot{}).Reservations {
		add(r)
	}
	snap.Reservations = append(slices.Clip(snap.Reservations), more...)
	return snap
}

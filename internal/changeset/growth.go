package changeset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Reading notes that the existing VM vmid is being read (refreshed): its plan follows.
func (c *Set) Reading(vmid int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refreshed[vmid] = true
	c.readAny = true
}

// Planning notes that the existing VM vmid is planned, or will not be (gone from the state,
// its read failed).
func (c *Set) Planning(vmid int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.refreshed, vmid)
}

// Grow records the size an existing VM has after the plan and returns the snapshot with every
// planned size of the process and the tentative placements of the plan's new VMs: a node's
// totals after all the plan's changes on it. A VM that grows waits until no other growth has
// been planned for quietFor: Terraform plans the instances of a plan within milliseconds of
// each other, so the totals its check and warning show are those after the plan, not after the
// VMs that happened to be planned before it; and it waits for the plans of the VMs this process
// has read and not planned yet (Terraform refreshes each just before planning it), which a
// loaded machine spaces further apart, at most firstBurstMax. The new VMs planned before the growth are placed
// again beside it; the error says that they no longer fit together.
func (c *Set) Grow(ctx context.Context, snap scheduler.Snapshot, vmid int, size PlannedSize) (scheduler.Snapshot, error) {
	c.mu.Lock()
	delete(c.refreshed, vmid)
	grows := false
	if size.CPUs > 0 && size.Memory > 0 {
		if grows = growsFrom(snap, vmid, size); grows {
			c.lastGrowth = c.Clock.Now()
		}
		size.grows = grows
		c.sizes[vmid] = size
	}
	c.mu.Unlock()
	if grows {
		c.awaitPlanned(ctx, func() time.Time { return c.lastGrowth })
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.withSizes(&snap)
	var err error
	if grows && !c.decided && c.allPlaced() {
		err = c.placeAgain(ctx, snap, true)
	}
	return c.withTentative(snap, ""), err
}

// GrowthNote ends a growth warning on node: which of the plan's VMs that grow there its figures
// (from snap, grow's snapshot) count. Terraform plans at most -parallelism VMs at once, and a VM waits only for those it can
// know of (grow), so beyond that a VM of the node planned later raises the figures and warns
// with its own.
func (c *Set) GrowthNote(snap scheduler.Snapshot, node string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var vms []string
	for _, vmid := range slices.Sorted(maps.Keys(c.sizes)) {
		s := c.sizes[vmid]
		i := slices.IndexFunc(snap.Guests, func(g scheduler.Guest) bool { return g.VMID == vmid })
		// Counted in snap (grow's), not planned since: the guest there has its planned size.
		if s.Node != node || !s.grows || i < 0 || snap.Guests[i].CPUs != s.CPUs || snap.Guests[i].MaxMem != s.Memory {
			continue
		}
		vm := strconv.Itoa(vmid)
		if name := snap.Guests[i].Name; name != "" {
			vm += " (" + name + ")"
		}
		vms = append(vms, vm)
	}
	if len(vms) == 0 {
		return ""
	}
	of := "VM"
	if len(vms) > 1 {
		of = "VMs"
	}
	return fmt.Sprintf("The figures count the growth this plan has planned so far on %s, of %s %s; of more VMs than Terraform's -parallelism (default 10), "+
		"one of %s planned later raises them and warns with its own.", node, of, strings.Join(vms, ", "), node)
}

// hold tells whether every member's tentative placement passes the hard filters on view
// beside the other members' tentative placements.
func (c *Set) hold(view scheduler.Snapshot) bool {
	for name, m := range c.Members {
		if len(m.Profile.CheckNode(c.withTentative(view, name), m.Req, m.Tentative.Node, 0)) > 0 {
			return false
		}
	}
	return true
}

// BesideGrowth is the set's error as the plan of a VM that grows reports it: the plan's new
// VMs, placed before the growth was known, no longer fit beside it.
func BesideGrowth(err error, name string) error {
	return Reworded(err, func(ue *scheduler.UnschedulableError) string {
		return fmt.Sprintf("%q grows in this plan, and beside its new size the plan's new VMs no longer fit together; below, why %q does not.\n\n%s", name, ue.Request, ue.Message)
	})
}

// Reworded is err with the message of its UnschedulableError (a SetError's too) rewritten.
func Reworded(err error, message func(*scheduler.UnschedulableError) string) error {
	var ue *scheduler.UnschedulableError
	if !errors.As(err, &ue) {
		return err
	}
	u := *ue
	u.Message = message(ue)
	var se *scheduler.SetError
	if errors.As(err, &se) {
		copied := *se
		copied.UnschedulableError = &u
		return &copied
	}
	return &u
}

// allPlaced tells whether the plan's new VMs have a tentative placement each: none has failed
// its plan, which then reports the set's error already.
func (c *Set) allPlaced() bool {
	for _, m := range c.Members {
		if m.Tentative == nil {
			return false
		}
	}
	return len(c.Members) > 0
}

// placeAgain places the plan's new VMs again jointly beside the picks and the planned sizes
// (snap carries neither) and keeps the result as their tentative placements; unlessHeld leaves
// them where they are when every tentative placement still holds there.
func (c *Set) placeAgain(ctx context.Context, snap scheduler.Snapshot, unlessHeld bool) error {
	base := c.withOtherPicks(snap)
	c.withSizes(&base)
	reqs, profile, view := c.sorted(base, true)
	if unlessHeld && c.hold(view) {
		return nil
	}
	d, err := profile.ScheduleSet(view, reqs, scheduler.Options{})
	if err != nil {
		return err
	}
	c.tentative(ctx, d)
	return nil
}

// growsFrom tells whether size is larger than the guest vmid is in snap in any dimension.
func growsFrom(snap scheduler.Snapshot, vmid int, size PlannedSize) bool {
	if len(size.Added) > 0 {
		return true
	}
	for _, g := range snap.Guests {
		// A row without figures (its node offline: status unknown) says nothing of a growth.
		if g.VMID == vmid && (g.CPUs > 0 || g.MaxMem > 0) {
			return size.CPUs > g.CPUs || size.Memory > g.MaxMem || size.disk > g.DiskBytes
		}
	}
	return false
}

// StorageShort says, for each storage the disks of the existing VM vmid grow on, when the
// plan's disk growth there (of every VM of the plan on that storage) and the new VMs' disks of
// snap (grow's snapshot: their tentative placements, picks and creates in flight) exceed its
// free space.
func (c *Set) StorageShort(snap scheduler.Snapshot, vmid int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	own := c.sizes[vmid]
	var reasons []string
	for _, name := range slices.Sorted(maps.Keys(own.Added)) {
		i := slices.IndexFunc(snap.Nodes, func(n scheduler.Node) bool { return n.Name == own.Node })
		if i < 0 {
			continue
		}
		j := slices.IndexFunc(snap.Nodes[i].Storages, func(s scheduler.Storage) bool { return s.Name == name })
		if j < 0 {
			continue
		}
		row := snap.Nodes[i].Storages[j]
		here := func(node string) bool { return row.Shared || node == own.Node }
		var grown, fresh uint64
		for _, s := range c.sizes {
			if here(s.Node) {
				grown += s.Added[name]
			}
		}
		for _, r := range snap.Reservations {
			if r.Storage == name && here(r.Node) {
				fresh += r.DiskBytes
			}
		}
		free := row.Total - min(row.Used, row.Total)
		if grown+fresh <= free {
			continue
		}
		reason := fmt.Sprintf("StorageCapacity: %s has %s GiB free, the plan's disks grow by %s GiB there", name, scheduler.FormatGiB(free), scheduler.FormatGiB(grown))
		if fresh > 0 {
			reason += fmt.Sprintf(" and its new VMs need %s GiB", scheduler.FormatGiB(fresh))
		}
		reasons = append(reasons, reason)
	}
	return reasons
}

// SizeOf is a request's size as an existing guest shows it.
func SizeOf(r scheduler.Request) PlannedSize {
	return PlannedSize{CPUs: float64(r.Cores * max(r.Sockets, 1)), Memory: uint64(r.MemoryMiB) * scheduler.MiB, disk: r.DiskBytes}
}

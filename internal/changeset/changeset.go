package changeset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/planhints"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/reservations"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// BurstWindow is how long a placement data source waits for the plan's other reads, so that
// they are decided together: Terraform reads them within milliseconds of each other. A
// variable so that the package's tests, which may run on a loaded machine, can wait longer.
var BurstWindow = 50 * time.Millisecond

// PlanQuiet is how long a VM that grows (a new VM the set refuses: refusedQuiet times it)
// waits for the plan's other VMs (none planned for that long), so that its check sees the
// whole plan: Terraform plans them within milliseconds of each other. A variable so that the package's tests, which
// may run on a loaded machine, can give the plan's VMs more time.
var PlanQuiet = 50 * time.Millisecond

// refusedQuiet is how many times quietFor a refused new VM waits for the plan's others: its
// plan fails anyway (or, at apply, only its own create), so it can wait longer than a growth
// for a line that counts the whole set, however far apart a loaded machine spaces the plans;
// at most firstBurstMax.
const refusedQuiet = 5

// firstBurstQuiet and firstBurstMax bound the wait of the apply's first creates: they wait
// until no create has been planned for firstBurstQuiet, so that a slow walk (a loaded
// machine) still brings the whole first wave into one decision, and at most firstBurstMax.
const (
	firstBurstQuiet = 100 * time.Millisecond
	firstBurstMax   = time.Second
)

// Set is what this provider process knows of its plan's change set: the new VMs planned
// and not yet decided, with their tentative placements; the picks of the placement data
// sources; and the planned sizes of existing VMs. Every plan-time check and every create
// decision of the process reads it, so that the set is placed together (all or nothing) and
// no two picks of one plan share a VMID or capacity.
type Set struct {
	mu sync.Mutex
	// Members are the new VMs by name: planned in this process and not yet decided.
	Members map[string]*Member
	// Ledger holds the creates this process decided (at apply), which a plan-time check of
	// the set's other VMs counts: the view may not show them yet. view is the process's
	// shared cluster view (nil in unit tests: the snapshot given is used).
	ledger *reservations.Ledger
	View   func(context.Context) (scheduler.Snapshot, error)
	// Picks are the placement data sources' answers for VMs that do not exist yet, by name.
	Picks map[string]scheduler.Reservation
	// sizes are the planned sizes of existing VMs that grow in place, by VMID.
	sizes map[int]PlannedSize
	// reads are the placement data sources read and not decided yet (changeset_reads.go).
	reads []*dataRead
	// lastArrival is when the last member was planned; decided is set by the first create's
	// decision.
	lastArrival time.Time
	decided     bool
	// lastGrowth is when an existing VM that grows was last planned; quietFor is how long a
	// growth or a refused VM waits for the plan's others (planQuiet).
	lastGrowth time.Time
	QuietFor   time.Duration
	// refreshed are the existing VMs this process has begun to read and not planned yet: in a
	// plan Terraform refreshes each VM just before planning it, so a VM that grows waits for
	// them (reading, planning).
	refreshed map[int]bool
	// reported are the set refusals this process has reported in full, by the VM explained
	// and its explanation (addSetError).
	reported map[string]bool
	// hints keep the plan's placements for its apply (nil: none); planned is what the first
	// create's decision found of them, and arrived the members decided since, whose room
	// the plan no longer needs to hold.
	hints   *planhints.Store
	planned []scheduler.Reservation
	arrived map[string]bool
	// noPlan is set by the first create's decision when it found no placements of its plan:
	// the creates beyond the first wave are then decided as they come.
	noPlan bool
	// hintIDs are the unpinned members' VMIDs in the hints: negative, and the same for a name
	// whatever its place, since a hint must hold room, not an id another guest may have
	// taken since (the apply chooses its own). A pinned member keeps its VMID. picksKept is false while the hints lack a pick.
	hintIDs   map[string]int
	picksKept bool
	// batch holds what the apply's last joint decision gave the members not decided yet.
	batch map[string]scheduler.Placement
	// Warn logs what the set cannot do and works around (nil: nothing is logged); the
	// provider gives it Terraform's log.
	Warn func(ctx context.Context, msg string, err error)
}

// Member is one new VM of the change set.
type Member struct {
	Profile *scheduler.Profile
	Req     scheduler.Request
	// Replaces is the VMID of the VM this one replaces (destroy, then create): its capacity
	// is this member's at plan time, not the set's.
	Replaces int
	// Tentative is where the member would go beside the others; nil when it does not fit.
	Tentative *scheduler.Placement
}

// PlannedSize is an existing VM's size after the plan.
type PlannedSize struct {
	CPUs   float64
	Memory uint64
	disk   uint64
	// Node is where the VM is; added the bytes its disks take in addition, by storage.
	Node  string
	Added map[string]uint64
	// grows: larger than the VM is in some dimension.
	grows bool
}

func New(hints *planhints.Store, ledger *reservations.Ledger) *Set {
	return &Set{ledger: ledger, Members: map[string]*Member{}, Picks: map[string]scheduler.Reservation{}, sizes: map[int]PlannedSize{},
		hints: hints, arrived: map[string]bool{}, hintIDs: map[string]int{}, QuietFor: PlanQuiet, batch: map[string]scheduler.Placement{},
		refreshed: map[int]bool{}, reported: map[string]bool{}}
}

// Plan checks a new VM of the plan together with the other new VMs planned so far. It places
// the VM beside the others' tentative placements; when it does not fit there, it places the
// whole set again jointly. An error means the set cannot be placed: it names the VM that
// does not fit and how many of the set can be placed together.
func (c *Set) Plan(ctx context.Context, snap scheduler.Snapshot, m Member) error {
	err := c.place(ctx, c.withDecided(ctx, snap), &m)
	var ue *scheduler.UnschedulableError
	if !errors.As(err, &ue) {
		return err
	}
	// Terraform plans the set's VMs within milliseconds of each other, in no fixed order, and a
	// refusal depends on the set: a VM planned later may be what this one needs (the peer of a
	// required vm_affinity), and the set's line counts them all. So a refused VM waits until
	// none has arrived for refusedQuiet times quietFor, and the whole set is placed again.
	c.quiet(ctx, refusedQuiet*c.QuietFor, func() (time.Time, bool) { return c.lastArrival, false })
	snap = c.withDecided(ctx, snap) // with the creates the apply decided while this VM waited
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.placeAgain(ctx, snap, false)
}

// withDecided returns the current view (snap, when there is none to read) with the creates
// this process has decided that it may not show yet: at apply, Terraform plans each create
// again just before it, beside the creates of the others. The ledger drops a create once a
// view read after it shows the guest, so the view is read again here, not taken from before.
func (c *Set) withDecided(ctx context.Context, snap scheduler.Snapshot) scheduler.Snapshot {
	if c.View != nil {
		if current, err := c.View(ctx); err == nil {
			snap = current
		}
	}
	if c.ledger != nil {
		c.ledger.AddTo(&snap)
	}
	return snap
}

// place is plan's first attempt, with the members planned so far.
func (c *Set) place(ctx context.Context, snap scheduler.Snapshot, m *Member) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastArrival = time.Now()
	c.Members[m.Req.Name] = m
	base := c.withOtherPicks(snap)
	c.withSizes(&base)
	alone := c.withTentative(base, m.Req.Name)
	if d, err := m.Profile.Schedule(without(alone, m.Replaces), []scheduler.Request{m.Req}, scheduler.Options{}); err == nil {
		m.Tentative = &d.Placements[0]
		c.keepHints(ctx, m.Req.Name)
		return nil
	}
	reqs, profile, view := c.sorted(base, true)
	d, err := profile.ScheduleSet(view, reqs, scheduler.Options{})
	if err != nil {
		m.Tentative = nil
		return err
	}
	c.tentative(ctx, d)
	return nil
}

// tentative takes a joint placement of every member as their tentative placements.
func (c *Set) tentative(ctx context.Context, d scheduler.Decision) {
	names := make([]string, len(d.Placements))
	for i, p := range d.Placements {
		c.Members[p.Name].Tentative = &d.Placements[i]
		names[i] = p.Name
	}
	c.keepHints(ctx, names...)
}

// keepHints records for the apply (planhints) the tentative placements of the members named
// and the picks not recorded yet. A process that has decided a create is an apply's: its plans
// are its creates', one wave at a time, and are not kept.
func (c *Set) keepHints(ctx context.Context, names ...string) {
	if c.hints == nil || c.decided {
		return
	}
	var set []scheduler.Reservation
	if !c.picksKept {
		for _, name := range slices.Sorted(maps.Keys(c.Picks)) {
			set = append(set, c.Picks[name])
		}
	}
	for _, name := range names {
		m := c.Members[name]
		if m == nil || m.Tentative == nil {
			continue
		}
		r := m.Tentative.Reservation(&m.Req)
		// A pinned VMID is the member's own (often a data source's pick fed to it): the apply's
		// other creates must not take it.
		if m.Req.VMID == 0 {
			id, ok := c.hintIDs[name]
			if !ok {
				id = -1 - len(c.hintIDs)
				c.hintIDs[name] = id
			}
			r.VMID = id
		}
		set = append(set, r)
	}
	if err := c.hints.Put(set...); errors.Is(err, planhints.ErrNoCopy) {
		c.logWarning(ctx, "cannot copy the plan's placements to the user's cache", err)
	} else if err != nil {
		c.logWarning(ctx, "cannot keep the plan's placements for its apply; the apply decides without them", err)
		return
	}
	c.picksKept = true
}

// logWarning logs a warning through warn, when set.
func (c *Set) logWarning(ctx context.Context, msg string, err error) {
	if c.Warn != nil {
		c.Warn(ctx, msg, err)
	}
}

// Decide is a create's decision at apply: the new VM is placed jointly with the members of
// the set not decided yet (the snapshot carries the decided ones as reservations), beside the
// room its plan gave the set's creates still to come (planhints), and takes its own
// placement. When that room no longer holds, the members are placed without it; when the set
// no longer fits (the cluster changed since the plan), the VM is placed alone, so that what
// fits is still created.
func (c *Set) Decide(snap scheduler.Snapshot, m Member) (scheduler.Placement, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Members[m.Req.Name] = &m
	// Decided: from here the ledger holds it (a retry decides it again).
	defer delete(c.Members, m.Req.Name)
	if !c.decided && c.hints != nil {
		c.hints.Drop()
		c.planned = c.hints.Load(slices.Collect(maps.Keys(c.Members)))
	}
	if !c.decided {
		c.noPlan = len(c.planned) == 0
	}
	c.decided = true
	c.arrived[m.Req.Name] = true
	base := c.withOtherPicks(snap)
	// The growth the apply re-planned counts as the plan counted it (grow).
	c.withSizes(&base)
	// At apply a replaced VM is gone already, or still counts (create_before_destroy).
	reqs, profile, view := c.sorted(base, false)
	// First beside the room the plan gave the set's creates still to come, then without it.
	views := []scheduler.Snapshot{view}
	if planned := c.withPlanned(view); len(planned.Reservations) > len(view.Reservations) {
		views = []scheduler.Snapshot{planned, view}
	}
	// The place an earlier create's joint decision gave this one, while it still holds: a set
	// decided together stays as decided (a required vm_affinity on a VM created after it).
	if p, ok := c.batch[m.Req.Name]; ok {
		delete(c.batch, m.Req.Name) // a retry (its VMID taken meanwhile) decides afresh
		if !idTaken(views[0], p.VMID) && len(m.Profile.CheckNode(views[0], m.Req, p.Node, 0)) == 0 {
			return p, nil
		}
	}
	for _, v := range views {
		if d, err := profile.ScheduleSet(v, reqs, scheduler.Options{}); err == nil {
			var own scheduler.Placement
			for _, p := range d.Placements {
				if p.Name == m.Req.Name {
					own = p
				} else {
					c.batch[p.Name] = p
				}
			}
			return own, nil
		}
	}
	d, err := m.Profile.Schedule(base, []scheduler.Request{m.Req}, scheduler.Options{})
	if err != nil {
		return scheduler.Placement{}, err
	}
	return d.Placements[0], nil
}

// idTaken tells whether a guest or reservation of snap holds vmid.
func idTaken(snap scheduler.Snapshot, vmid int) bool {
	return slices.ContainsFunc(snap.Guests, func(g scheduler.Guest) bool { return g.VMID == vmid }) ||
		slices.ContainsFunc(snap.Reservations, func(r scheduler.Reservation) bool { return r.VMID == vmid })
}

// Done forgets a member whose create has been decided (the ledger holds it from then on) or
// has ended.
func (c *Set) Done(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.Members, name)
}

// Settle waits before a create decides, so that the apply's first wave of creates, planned
// together, is decided together and beside the growth planned with them: until the process has
// decided a create, it waits until no create or growth has been planned for firstBurstQuiet (at
// most firstBurstMax). Later creates arrive one by one as earlier ones end, so waiting would
// only slow them.
func (c *Set) Settle(ctx context.Context) {
	c.quiet(ctx, firstBurstQuiet, func() (time.Time, bool) {
		if c.lastGrowth.After(c.lastArrival) {
			return c.lastGrowth, c.decided
		}
		return c.lastArrival, c.decided
	})
}

// quiet waits until last() is quiet long ago (at most firstBurstMax), or until it says to stop
// waiting; last is called under the lock.
func (c *Set) quiet(ctx context.Context, quiet time.Duration, last func() (time.Time, bool)) {
	start := time.Now()
	for {
		c.mu.Lock()
		at, stop := last()
		c.mu.Unlock()
		wait := time.Until(at.Add(quiet))
		if rest := firstBurstMax - time.Since(start); wait > rest {
			wait = rest
		}
		if stop || wait <= 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// Reading notes that the existing VM vmid is being read (refreshed): its plan follows.
func (c *Set) Reading(vmid int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refreshed[vmid] = true
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
			c.lastGrowth = time.Now()
		}
		size.grows = grows
		c.sizes[vmid] = size
	}
	c.mu.Unlock()
	if grows {
		c.quiet(ctx, c.QuietFor, func() (time.Time, bool) {
			if len(c.refreshed) > 0 {
				return time.Now(), false // a VM read is planned next
			}
			return c.lastGrowth, false
		})
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

// PlanStops begins every refusal's hint that may come from a plan (not the apply's hint, once
// this process has created VMs). Terraform plans each create again at apply, just before it,
// and a provider cannot tell that plan from terraform plan's: the hint says what holds in
// each, since at apply the creates of the VMs that still fit go on while this one is refused.
const PlanStops = "If this is terraform plan, or the plan step of terraform apply, nothing has been created. "

// What a refused placement can place fewer of: a qemuscheduler_vm's new VMs, or the names a
// qemuscheduler_placement data source places.
const (
	ReduceNewVMs = "the plan's new VMs (count, for_each)"
	ReduceNames  = "the names the plan's qemuscheduler_placement data sources place (their names, or their count)"
	ReduceEither = "the plan's new VMs (count, for_each) or the names of its qemuscheduler_placement data sources"
)

// DestroyHint is what a refused set adds, reduce saying what to place fewer of, since
// terraform destroy plans the configuration first and a provider cannot tell that plan from
// any other.
func DestroyHint(reduce string) string {
	return PlanStops + "Reduce " + reduce + " or make room, then plan again. " + Replanned + " " + DestroyAnyway
}

// AloneHint replaces destroyHint when the VM fits on no node even alone.
const AloneHint = PlanStops + Replanned + " " + DestroyAnyway

// Replanned is the part of a refusal for the apply: Terraform plans each create again just
// before it, and that plan cannot be told from the first one either.
const Replanned = "If this is terraform apply of a plan that passed, the cluster changed since that plan: the VMs that still fit are created (they stay in the state), the others are not."

// ApplyHint replaces destroyHint in an apply that has created VMs already: the cluster changed
// since its plan.
func ApplyHint(reduce string) string {
	return "The cluster changed since the plan: the VMs this apply created so far stay in the state, and the rest are not created. " +
		"Make room or reduce " + reduce + ", then apply again; or " + DestroyRefreshFalse + " to remove what was created."
}

// NoPlanHint replaces applyHint in an apply that found no placements of its plan: its creates
// beyond the first wave were decided as they came, so an earlier one may have taken the room
// the plan gave this one, whether or not the cluster changed.
func NoPlanHint(reduce string) string {
	return "This apply found no placements kept by its plan (a saved plan applied on another machine, or after " + planhints.DirEnv + " changed), " +
		"so its creates beyond the first wave were decided as they came and an earlier one may have taken the room the plan gave this VM; " +
		"or the cluster changed since the plan. The VMs this apply created so far stay in the state: apply again, which places the rest beside " +
		"them if they fit; else make room or reduce " + reduce + ", or " + DestroyRefreshFalse + " and apply again keeping the plan's " +
		"placements: set " + planhints.DirEnv + " to a directory kept with the plan file for both commands, or apply with -parallelism at least " +
		"the number of new VMs."
}

// ReportedBefore tells whether the set's refusal err (a SetError) was reported before, and
// marks it reported: every new VM the set refuses fails its plan with the set's explanation,
// and the first is reported in full, the others point at it (addSetError).
func (c *Set) ReportedBefore(err error) bool {
	var ue *scheduler.UnschedulableError
	var se *scheduler.SetError
	if !errors.As(err, &se) || !errors.As(err, &ue) {
		return false
	}
	key := ue.Request + "\x00" + ue.Message
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := c.reported[key]
	c.reported[key] = true
	return seen
}

// Hint is the line a refused placement ends with, reduce (reduceNewVMs, reduceNames) saying
// what to place fewer of: applyHint once this process has decided a create (noPlanHint when it
// found no placements of its plan), destroyHint before.
func (c *Set) Hint(reduce string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.decided && c.noPlan:
		return NoPlanHint(reduce)
	case c.decided:
		return ApplyHint(reduce)
	}
	return DestroyHint(reduce)
}

// DestroyAnyway ends every plan-time error that the cluster's state (not the configuration's
// syntax) causes: terraform destroy plans the configuration first, and a provider cannot tell
// that plan from any other.
const DestroyAnyway = "If this is terraform destroy, which plans the configuration first, run " + DestroyRefreshFalse + "."

// DestroyRefreshFalse is the command that destroys without planning the configuration, the one
// place that names it: the provider cannot tell whether Terraform or OpenTofu runs it.
const DestroyRefreshFalse = "terraform destroy -refresh=false (tofu destroy -refresh=false under OpenTofu)"

// TaintedPredecessor is the VM a new VM with a pinned VMID replaces when Terraform plans it as
// a plain create: a tainted VM's replacement comes with no prior state or private data, so the
// guest already holding the pinned VMID under the same name is taken as that VM, destroyed
// before its replacement is created. Any other guest of the VMID is not (0): the VMID is taken.
func TaintedPredecessor(snap scheduler.Snapshot, r scheduler.Request) int {
	if r.VMID == 0 {
		return 0
	}
	for _, g := range snap.Guests {
		if g.VMID == r.VMID && g.Name == r.Name && !g.Template && g.Type == scheduler.GuestQEMU {
			return g.VMID
		}
	}
	return 0
}

// SizeOf is a request's size as an existing guest shows it.
func SizeOf(r scheduler.Request) PlannedSize {
	return PlannedSize{CPUs: float64(r.Cores * max(r.Sockets, 1)), Memory: uint64(r.MemoryMiB) * scheduler.MiB, disk: r.DiskBytes}
}

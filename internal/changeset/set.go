package changeset

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/planhints"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/reservations"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
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
	// readAny says this process has read a VM: it plans (an apply reads none). ruleChanges are
	// the plan's VMs planned so far that may alter their peers' HA rules, lastPlanned when a
	// VM was last planned (rules.go).
	readAny     bool
	ruleChanges []RuleChange
	lastPlanned time.Time
	// reported are the set refusals this process has reported in full, by the VM explained
	// and its explanation (addSetError).
	reported map[string]bool
	// reporter is the refused new VM of the plan that waits to report the set's refusal (""
	// none); setReported is set once one has.
	reporter    string
	setReported bool
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
	// Clock times the set's waits (wait.go): the wall clock unless a test sets another.
	Clock Clock
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
		refreshed: map[int]bool{}, reported: map[string]bool{}, Clock: wallClock{}}
}

// Plan checks a new VM of the plan together with the other new VMs planned so far. It places
// the VM beside the others' tentative placements; when it does not fit there, it places the
// whole set again jointly. An error means the set cannot be placed: it names the VM that
// does not fit and how many of the set can be placed together. In a plan, one refused VM
// reports the set's refusal, once: the others refused while it waits, or after it reported,
// return nil (the one error fails the whole plan), so that a count = 200 that cannot fit
// shows one error with one count, and only one joint search runs per wait.
func (c *Set) Plan(ctx context.Context, snap scheduler.Snapshot, m Member) error {
	err := c.place(ctx, c.withDecided(ctx, snap), &m)
	var ue *scheduler.UnschedulableError
	if !errors.As(err, &ue) {
		return err
	}
	c.mu.Lock()
	if !c.decided && (c.reporter != "" || c.setReported) {
		c.mu.Unlock()
		return nil
	}
	reporter := !c.decided
	if reporter {
		c.reporter = m.Req.Name
	}
	c.mu.Unlock()
	// Terraform plans the set's VMs within milliseconds of each other, in no fixed order, and a
	// refusal depends on the set: a VM planned later may be what this one needs (the peer of a
	// required vm_affinity), and the set's line counts them all. So a refused VM waits until
	// none has arrived for refusedQuiet times quietFor, and the whole set is placed again.
	longest := firstBurstMax
	if reporter {
		longest = reporterMax
	}
	c.quietAtMost(ctx, refusedQuiet*c.QuietFor, longest, func() (time.Time, bool) { return c.lastArrival, false })
	snap = c.withDecided(ctx, snap) // with the creates the apply decided while this VM waited
	c.mu.Lock()
	defer c.mu.Unlock()
	err = c.placeAgain(ctx, snap, false)
	if reporter {
		c.reporter, c.setReported = "", err != nil
	}
	return err
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
	c.lastArrival = c.Clock.Now()
	c.Members[m.Req.Name] = m
	base := c.withOtherPicks(snap)
	c.withSizes(&base)
	alone := c.withTentative(base, m.Req.Name)
	if d, err := m.Profile.Schedule(without(alone, m.Replaces), []scheduler.Request{m.Req}, scheduler.Options{}); err == nil {
		m.Tentative = &d.Placements[0]
		c.keepHints(ctx, m.Req.Name)
		return nil
	}
	if !c.decided && (c.reporter != "" || c.setReported) {
		// The set is refused already, or will be placed again whole once the plan's VMs
		// stop arriving: a joint search per arrival would only repeat it.
		m.Tentative = nil
		return &scheduler.UnschedulableError{Request: m.Req.Name}
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

// Done forgets a member whose create has been decided (the ledger holds it from then on) or
// has ended.
func (c *Set) Done(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.Members, name)
}

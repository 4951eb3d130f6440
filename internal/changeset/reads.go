package changeset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// dataRead is one placement data source's read: its requests, decided with the plan's other
// reads of the same moment.
type dataRead struct {
	reqs    []scheduler.Request
	profile *scheduler.Profile
	arrived time.Time
	done    bool
	d       scheduler.Decision
	err     error
}

// Read decides a placement data source's requests. Terraform reads a plan's data sources in
// parallel and in no fixed order, so a read waits burstWindow for the others of the moment and
// the first to wake decides them all together, in name order: their answers then do not
// depend on the order they were read in (no output that changes from one plan to the next),
// and none takes another's VMID or capacity. A later read sees the earlier ones' picks.
// Names that already exist are kept where they are (sticky) and pick nothing.
func (c *Set) Read(ctx context.Context, snap scheduler.Snapshot, profile *scheduler.Profile, reqs []scheduler.Request) (scheduler.Decision, error) {
	r := &dataRead{reqs: reqs, profile: profile, arrived: c.Clock.Now()}
	c.mu.Lock()
	c.reads = append(c.reads, r)
	c.mu.Unlock()
	select {
	case <-ctx.Done():
	case <-c.Clock.After(BurstWindow):
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !r.done {
		c.decideReads(ctx, snap)
	}
	return r.d, r.err
}

// decideReads decides every pending read: together when they can all be placed and their
// names are distinct, else one after the other in name order, each seeing the picks before it.
// The plan's new VMs planned before the reads are then placed again beside the picks; when
// they no longer fit, the reads fail, so that the plan as a whole does.
func (c *Set) decideReads(ctx context.Context, snap scheduler.Snapshot) {
	batch := c.reads
	c.reads = nil
	defer c.refit(ctx, snap, batch)
	sort.SliceStable(batch, func(i, j int) bool { return batch[i].reqs[0].Name < batch[j].reqs[0].Name })
	var all []scheduler.Request
	byName := map[string]*scheduler.Profile{}
	distinct := true
	for _, r := range batch {
		for _, q := range r.reqs {
			if byName[q.Name] != nil {
				distinct = false
			}
			byName[q.Name] = r.profile
			all = append(all, q)
		}
	}
	if distinct && len(batch) > 1 {
		view := c.withPicks(snap, slices.Sorted(maps.Keys(byName))...)
		if d, err := scheduler.SetProfile(batch[0].profile, byName).ScheduleSet(view, all, scheduler.Options{Sticky: true}); err == nil {
			for _, r := range batch {
				r.d.Placements, d.Placements = d.Placements[:len(r.reqs)], d.Placements[len(r.reqs):]
				r.done = true
				c.pick(r.reqs, r.d)
			}
			return
		}
	}
	for _, r := range batch {
		names := make([]string, len(r.reqs))
		for i, q := range r.reqs {
			names[i] = q.Name
		}
		r.d, r.err = r.profile.ScheduleSet(c.withPicks(snap, names...), r.reqs, scheduler.Options{Sticky: true})
		r.done = true
		if r.err == nil {
			c.pick(r.reqs, r.d)
		}
	}
}

// refit places the plan's new VMs again beside the picks of the reads of batch, which did not
// see them (a pick is a decision another provider applies; a new VM's tentative placement is
// not), and keeps the result for the apply. An apply's reads (deferred by depends_on) refit
// nothing: its creates are decided beside the picks anyway.
func (c *Set) refit(ctx context.Context, snap scheduler.Snapshot, batch []*dataRead) {
	if len(c.Members) == 0 || c.decided {
		return
	}
	if err := c.placeAgain(ctx, snap, false); err != nil {
		switch joint := c.repick(ctx, snap, batch); {
		case joint == nil:
			return
		case !errors.Is(joint, errNoRepick):
			// The set of picks and new VMs explains better than the new VMs beside fixed
			// picks: there a new VM "fits on no node even without the others" when the
			// picks take its room.
			err = joint
		}
		var ue *scheduler.UnschedulableError
		err = besidePicks(err, errors.As(err, &ue) && c.Members[ue.Request] != nil)
		for _, r := range batch {
			if r.err == nil {
				r.d, r.err = scheduler.Decision{}, err
			}
		}
	}
}

// errNoRepick is repick's answer when it does not place the reads again.
var errNoRepick = errors.New("the reads are not placed again")

// repick places the reads of batch again, together with the plan's new VMs, when those no
// longer fit beside the picks the reads made alone: a set of picks and new VMs that fits must
// not be refused for the order of its decisions (two 4 GiB names spread over two 8 GiB nodes
// left no room for a 6 GiB VM). The reads' answers are not given yet, so they may still change;
// the reads come first, so their VMIDs are those they would take alone. It keeps the joint
// placement (picks and tentative placements), or returns why there is none. Reads that failed,
// or whose names an existing guest or a new VM carries, are left as they are (errNoRepick).
func (c *Set) repick(ctx context.Context, snap scheduler.Snapshot, batch []*dataRead) error {
	var reqs []scheduler.Request
	byName := map[string]*scheduler.Profile{}
	for _, r := range batch {
		if r.err != nil {
			return errNoRepick
		}
		for _, q := range r.reqs {
			byName[q.Name] = r.profile
			reqs = append(reqs, q)
		}
	}
	for _, g := range snap.Guests {
		if byName[g.Name] != nil {
			return errNoRepick
		}
	}
	reads := len(reqs)
	members := slices.Sorted(maps.Keys(c.Members))
	for _, name := range members {
		m := c.Members[name]
		if byName[name] != nil {
			return errNoRepick
		}
		byName[name] = m.Profile
		reqs = append(reqs, m.Req)
		snap = without(snap, m.Replaces)
	}
	view := c.withPicks(snap, slices.Collect(maps.Keys(byName))...)
	c.withSizes(&view)
	d, err := scheduler.SetProfile(batch[0].profile, byName).ScheduleSet(view, reqs, scheduler.Options{})
	if err != nil {
		return err
	}
	picked := d.Placements[:reads]
	for _, r := range batch {
		r.d, r.err = scheduler.Decision{Placements: picked[:len(r.reqs)]}, nil
		picked = picked[len(r.reqs):]
		c.pick(r.reqs, r.d)
	}
	c.tentative(ctx, scheduler.Decision{Placements: d.Placements[reads:]})
	return nil
}

// besidePicks is the set's error as a placement data source reports it: the plan's new VMs,
// placed before the read, and the picks do not fit together; newVM says whether the VM the
// error explains is one of the new VMs or one of the names.
func besidePicks(err error, newVM bool) error {
	what := "a name of the plan's qemuscheduler_placement data sources"
	if newVM {
		what = "a new VM of the plan"
	}
	return PickSetError{Reworded(err, func(ue *scheduler.UnschedulableError) string {
		return fmt.Sprintf("The plan's new VMs (qemuscheduler_vm) and the picks of its qemuscheduler_placement data sources are placed together, all or nothing, "+
			"and beside this read's picks they do not all fit; below, why %q, %s, does not.\n\n%s", ue.Request, what, ue.Message)
	})}
}

// PickSetError marks besidePicks' errors: fewer new VMs or fewer names would help.
type PickSetError struct{ error }

func (e PickSetError) Unwrap() error { return e.error }

// pick records a read's answers for VMs that do not exist yet (a read again replaces its own),
// so that the plan's other picks and new VMs do not take their VMIDs or capacity.
func (c *Set) pick(reqs []scheduler.Request, d scheduler.Decision) {
	for i, p := range d.Placements {
		delete(c.Picks, p.Name)
		if !p.Existing {
			c.Picks[p.Name] = p.Reservation(&reqs[i])
		}
	}
	c.picksKept = false
}

// ReadReduce is what a refused read says to place fewer of: the data sources' names, or,
// when the plan's new VMs and the picks do not fit together (besidePicks), either.
func ReadReduce(err error) string {
	if errors.As(err, new(PickSetError)) {
		return ReduceEither
	}
	return ReduceNames
}

package changeset

import (
	"context"
	"time"
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

// reporterMax bounds the wait of the plan's refused VM that reports the set's refusal: the
// others refused return at once, so the plan's VMs keep arriving as fast as Terraform plans
// them (a count = 200 takes seconds), and the report counts them all once they stop.
const reporterMax = 30 * time.Second

// firstBurstQuiet and firstBurstMax bound the wait of the apply's first creates: they wait
// until no create has been planned for firstBurstQuiet, so that a slow walk (a loaded
// machine) still brings the whole first wave into one decision, and at most firstBurstMax.
const (
	firstBurstQuiet = 100 * time.Millisecond
	firstBurstMax   = time.Second
)

// Clock is where the set reads the time and waits: the wall clock in the provider, a clock a
// test moves by hand in the tests of the windows above, which then need no sleeps.
type Clock interface {
	Now() time.Time
	// After is time.After on this clock.
	After(d time.Duration) <-chan time.Time
}

// wallClock is the real time.
type wallClock struct{}

func (wallClock) Now() time.Time                         { return time.Now() }
func (wallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

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

// awaitPlanned waits for the plan's other VMs: until none this process has read is still to be
// planned (Terraform refreshes each just before planning it) and last() is QuietFor ago, at most
// firstBurstMax; last is called under the lock.
func (c *Set) awaitPlanned(ctx context.Context, last func() time.Time) {
	c.quiet(ctx, c.QuietFor, func() (time.Time, bool) {
		if len(c.refreshed) > 0 {
			return c.Clock.Now(), false // a VM read is planned next
		}
		return last(), false
	})
}

// quiet waits until last() is quiet long ago (at most firstBurstMax), or until it says to stop
// waiting; last is called under the lock.
func (c *Set) quiet(ctx context.Context, quiet time.Duration, last func() (time.Time, bool)) {
	c.quietAtMost(ctx, quiet, firstBurstMax, last)
}

// quietAtMost is quiet waiting at most longest.
func (c *Set) quietAtMost(ctx context.Context, quiet, longest time.Duration, last func() (time.Time, bool)) {
	start := c.Clock.Now()
	for {
		c.mu.Lock()
		at, stop := last()
		c.mu.Unlock()
		now := c.Clock.Now()
		wait := at.Add(quiet).Sub(now)
		if rest := longest - now.Sub(start); wait > rest {
			wait = rest
		}
		if stop || wait <= 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-c.Clock.After(wait):
		}
	}
}

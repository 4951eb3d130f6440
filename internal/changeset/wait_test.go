package changeset

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// manualClock is a Clock that moves only when a test advances it, so that the set's waiting
// windows are tested without sleeping. Every After is announced on waits: a test knows that a
// goroutine waits, and for how long, before it moves the clock.
type manualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []manualTimer
	waits  chan time.Duration
}

type manualTimer struct {
	at time.Time
	ch chan time.Time
}

func newManualClock() *manualClock {
	return &manualClock{now: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), waits: make(chan time.Duration, 64)}
}

func (m *manualClock) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

func (m *manualClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	m.mu.Lock()
	if d <= 0 {
		ch <- m.now
	} else {
		m.timers = append(m.timers, manualTimer{at: m.now.Add(d), ch: ch})
	}
	m.mu.Unlock()
	m.waits <- d
	return ch
}

// advance moves the clock by d and fires the timers due; it returns how many fired.
func (m *manualClock) advance(d time.Duration) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = m.now.Add(d)
	fired := 0
	kept := m.timers[:0]
	for _, t := range m.timers {
		if t.at.After(m.now) {
			kept = append(kept, t)
			continue
		}
		t.ch <- m.now
		fired++
	}
	m.timers = kept
	return fired
}

// nextWait is the next wait a goroutine begins; the test fails when none begins within a
// minute (a goroutine that returned instead, or never got there).
func (m *manualClock) nextWait(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-m.waits:
		return d
	case <-time.After(time.Minute):
		t.Fatal("no goroutine began to wait")
		return 0
	}
}

// run moves the clock in steps until n goroutines have sent on done: after each step, every
// goroutine woken either waits again or ends, so the clock moves only while all of them wait.
func (m *manualClock) run(t *testing.T, step time.Duration, done <-chan struct{}, n int) {
	t.Helper()
	for n > 0 {
		for woken := m.advance(step); woken > 0; woken-- {
			select {
			case <-m.waits:
			case <-done:
				n--
			case <-time.After(time.Minute):
				t.Fatal("a goroutine woken neither waited again nor ended")
			}
		}
	}
}

// fourGiB is a member of one vCPU and 4 GiB.
func fourGiB(t *testing.T, name string) Member {
	return Member{Profile: registryProfile(t), Req: memReq(name, 4096)}
}

// oneNode is a cluster of one online 8 GiB node with 100 GiB of local-lvm.
func oneNode() scheduler.Snapshot {
	return scheduler.Snapshot{Nodes: []scheduler.Node{twoSmallNodes().Nodes[0]}}
}

// A refused VM waits refusedQuiet times QuietFor after the plan's last new VM, and each new VM
// planned meanwhile starts that window again: the VM that reports the plan's refusal waits
// past firstBurstMax while they come (at most reporterMax), so that it counts them all.
func TestRefusedPlanWaitsForThePlansVMs(t *testing.T) {
	clk := newManualClock()
	c := New(nil, nil)
	c.Clock = clk
	c.QuietFor = 190 * time.Millisecond
	snap, ctx := oneNode(), context.Background()
	for _, n := range []string{"a", "b"} { // 3 GiB each: c's 4 GiB do not fit beside them
		if err := c.Plan(ctx, snap, Member{Profile: registryProfile(t), Req: memReq(n, 3072)}); err != nil {
			t.Fatal(err)
		}
	}
	refused := make(chan error, 1)
	go func() { refused <- c.Plan(ctx, snap, fourGiB(t, "c")) }()
	if d := clk.nextWait(t); d != refusedQuiet*c.QuietFor {
		t.Fatalf("the refused VM waits %v, want %v", d, refusedQuiet*c.QuietFor)
	}
	// A new VM every 150 ms (tiny: it fits, and waits for nothing) keeps the window open.
	for i := 1; i <= 6; i++ {
		clk.advance(150 * time.Millisecond)
		if err := c.Plan(ctx, snap, Member{Profile: registryProfile(t), Req: memReq("tiny-"+string(rune('0'+i)), 1)}); err != nil {
			t.Fatal(err)
		}
	}
	clk.advance(50 * time.Millisecond) // 950 ms: the first window ends, the last VM came at 900
	if d := clk.nextWait(t); d != refusedQuiet*c.QuietFor-50*time.Millisecond {
		t.Fatalf("after 950 ms the refused VM waits %v more, want %v (past firstBurstMax)", d, refusedQuiet*c.QuietFor-50*time.Millisecond)
	}
	select {
	case err := <-refused:
		t.Fatalf("the refused VM's plan returned while the plan's VMs came: %v", err)
	default:
	}
	clk.advance(refusedQuiet*c.QuietFor - 50*time.Millisecond)
	if err := <-refused; err == nil || !strings.Contains(err.Error(), "only 8 of the plan's 9 new VMs can be placed together") {
		t.Errorf("the refusal: %v, want it to count the 9 new VMs", err)
	}
}

// The apply's first creates wait until no create has been planned for firstBurstQuiet; once
// a create has been decided, the later ones do not wait.
func TestSettleWaitsForTheFirstWave(t *testing.T) {
	clk := newManualClock()
	c := New(nil, nil)
	c.Clock = clk
	snap, ctx := twoSmallNodes(), context.Background()
	if err := c.Plan(ctx, snap, fourGiB(t, "a")); err != nil {
		t.Fatal(err)
	}
	settled := make(chan struct{})
	go func() { c.Settle(ctx); close(settled) }()
	if d := clk.nextWait(t); d != firstBurstQuiet {
		t.Fatalf("the first create waits %v, want firstBurstQuiet %v", d, firstBurstQuiet)
	}
	clk.advance(60 * time.Millisecond)
	if err := c.Plan(ctx, snap, fourGiB(t, "b")); err != nil {
		t.Fatal(err)
	}
	clk.advance(40 * time.Millisecond)
	if d := clk.nextWait(t); d != 60*time.Millisecond {
		t.Fatalf("after b was planned at 60 ms, the first create waits %v more, want 60ms", d)
	}
	clk.advance(60 * time.Millisecond)
	<-settled
	if _, err := c.Decide(snap, fourGiB(t, "a")); err != nil {
		t.Fatal(err)
	}
	c.Settle(ctx) // returns at once: would block forever on the manual clock otherwise
	select {
	case d := <-clk.waits:
		t.Errorf("a create after the first decision waited %v", d)
	default:
	}
}

// Reads of the plan's placement data sources within BurstWindow of each other are decided
// together, in name order, whatever order Terraform read them in: "web-b", read first, does
// not take the lower VMID from "web-a", read 20 ms later.
func TestReadsWithinBurstWindowDecidedTogether(t *testing.T) {
	clk := newManualClock()
	c := New(nil, nil)
	c.Clock = clk
	snap, p, ctx := twoSmallNodes(), registryProfile(t), context.Background()
	type answer struct {
		d   scheduler.Decision
		err error
	}
	read := func(name string) chan answer {
		ch := make(chan answer, 1)
		go func() {
			d, err := c.Read(ctx, snap, p, []scheduler.Request{memReq(name, 1024)})
			ch <- answer{d, err}
		}()
		if w := clk.nextWait(t); w != BurstWindow {
			t.Fatalf("read %s waits %v, want BurstWindow %v", name, w, BurstWindow)
		}
		return ch
	}
	b := read("web-b")
	clk.advance(20 * time.Millisecond)
	a := read("web-a")
	clk.advance(BurstWindow - 20*time.Millisecond)
	gotB := <-b
	select {
	case <-a:
		t.Fatal("web-a's read returned before its own window ended")
	default:
	}
	clk.advance(20 * time.Millisecond)
	gotA := <-a
	if gotA.err != nil || gotB.err != nil {
		t.Fatalf("reads: %v, %v", gotA.err, gotB.err)
	}
	if va, vb := gotA.d.Placements[0].VMID, gotB.d.Placements[0].VMID; va >= vb {
		t.Errorf("web-a got VMID %d, web-b %d: decided in the order read, not together in name order", va, vb)
	}
}

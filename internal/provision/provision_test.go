package provision

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/reservations"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// fakeCluster is a cluster of online nodes whose guests the loop creates; createErr, when
// set, decides the outcome of each create (nil = create as asked).
type fakeCluster struct {
	mu        sync.Mutex
	nodes     []string
	guests    map[int]fakeGuest
	creates   []scheduler.Placement
	createErr func(p scheduler.Placement, n int) error
	fresh     []bool // the fresh argument of each decision's Snapshot
	nodeViews int
}

type fakeGuest struct {
	node, name, lock string
	tags             []string
	running          bool
}

var errNotFound = fmt.Errorf("guest: %w", proxmox.ErrNotFound)

func newFake(nodes ...string) *fakeCluster {
	return &fakeCluster{nodes: nodes, guests: map[int]fakeGuest{}}
}

func (f *fakeCluster) Snapshot(_ context.Context, fresh bool) (scheduler.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fresh = append(f.fresh, fresh)
	var snap scheduler.Snapshot
	for _, n := range f.nodes {
		snap.Nodes = append(snap.Nodes, scheduler.Node{Name: n, Online: true, MaxCPU: 8, MaxMem: 16 << 30})
	}
	for id, g := range f.guests {
		status := "stopped"
		if g.running {
			status = "running"
		}
		snap.Guests = append(snap.Guests, scheduler.Guest{VMID: id, Node: g.node, Name: g.name, Type: scheduler.GuestQEMU, Status: status,
			Lock: g.lock, Tags: g.tags, Pending: proxmox.Pending(g.lock, g.tags), CPUs: 1, MaxMem: 512 << 20})
	}
	return snap, nil
}

// NodeView is always read now.
func (f *fakeCluster) NodeView(ctx context.Context, _ string) (scheduler.Snapshot, error) {
	snap, err := f.Snapshot(ctx, true)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fresh = f.fresh[:len(f.fresh)-1]
	f.nodeViews++
	return snap, err
}

func (f *fakeCluster) Create(_ context.Context, p scheduler.Placement) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.creates = append(f.creates, p)
	if f.createErr != nil {
		if err := f.createErr(p, len(f.creates)); err != nil {
			return err
		}
	}
	if _, taken := f.guests[p.VMID]; taken {
		return fmt.Errorf("create VM %d: %w", p.VMID, proxmox.ErrAlreadyExists)
	}
	f.guests[p.VMID] = fakeGuest{node: p.Node, name: p.Name, tags: []string{proxmox.ClaimTag}}
	return nil
}

func (f *fakeCluster) Confirm(_ context.Context, p scheduler.Placement) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.guests[p.VMID]
	g.tags = []string{proxmox.PendingTag}
	f.guests[p.VMID] = g
	return nil
}

func (f *fakeCluster) Delete(_ context.Context, _ string, vmid int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.guests, vmid)
	return nil
}

func (f *fakeCluster) Find(_ context.Context, vmid int) (Guest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, ok := f.guests[vmid]
	if !ok {
		return Guest{}, errNotFound
	}
	return Guest{Node: g.node, Name: g.name, Lock: g.lock}, nil
}

// lowestFree places on the first online node and takes the lowest id that no guest or
// reservation uses: the scheduler's default rule, without its scores.
func lowestFree(req scheduler.Request) func(scheduler.Snapshot) (scheduler.Placement, error) {
	return func(snap scheduler.Snapshot) (scheduler.Placement, error) {
		used := map[int]bool{}
		for _, g := range snap.Guests {
			used[g.VMID] = true
		}
		for _, r := range snap.Reservations {
			used[r.VMID] = true
		}
		id := req.VMID
		for id == 0 || (req.VMID == 0 && used[id]) {
			if id == 0 {
				id = scheduler.MinVMID
			} else {
				id++
			}
		}
		for _, n := range snap.Nodes {
			if n.Online && (req.Node == "" || req.Node == n.Name) {
				return scheduler.Placement{Name: req.Name, Node: n.Name, VMID: id}, nil
			}
		}
		return scheduler.Placement{}, &scheduler.UnschedulableError{Request: req.Name, Message: "0 nodes are available"}
	}
}

func provisioner(f *fakeCluster, ledger *reservations.Ledger, req scheduler.Request, setup func(scheduler.Placement) error) *Provisioner {
	if req.Cores == 0 {
		req.Cores, req.Sockets, req.MemoryMiB = 1, 1, 512
	}
	return &Provisioner{Client: f, Ledger: ledger, Request: req, Decide: lowestFree(req), MaxAttempts: 5,
		Sleep: func(context.Context, time.Duration) bool { return true },
		Setup: func(_ context.Context, p scheduler.Placement) error {
			if setup == nil {
				return nil
			}
			return setup(p)
		}}
}

// inFlight lists the ledger's reservations as the next decision would see them.
func inFlight(t *testing.T, l *reservations.Ledger) []scheduler.Reservation {
	t.Helper()
	var seen []scheduler.Reservation
	_, err := l.Decide(context.Background(), func(context.Context) (scheduler.Snapshot, error) { return scheduler.Snapshot{}, nil },
		func(s scheduler.Snapshot) (scheduler.Reservation, error) {
			seen = s.Reservations
			return scheduler.Reservation{}, errors.New("only looking")
		})
	if err == nil {
		t.Fatal("the looking decision reserved something")
	}
	return seen
}

func TestRunCreatesSetsUpAndReleases(t *testing.T) {
	f := newFake("pve1")
	ledger := reservations.New()
	var setUp []int
	res, err := provisioner(f, ledger, scheduler.Request{Name: "web"}, func(p scheduler.Placement) error {
		setUp = append(setUp, p.VMID)
		if r := inFlight(t, ledger); len(r) != 1 || r[0].VMID != p.VMID {
			return fmt.Errorf("during setup the ledger holds %v, want the reservation of %d", r, p.VMID)
		}
		return nil
	}).Run(context.Background())
	if err != nil || !res.Created || res.Placement.VMID != 100 || res.Attempts != 1 {
		t.Fatalf("Run = %+v, %v; want VM 100 created at the first attempt", res, err)
	}
	if len(setUp) != 1 || setUp[0] != 100 {
		t.Errorf("set up %v, want [100]", setUp)
	}
	if r := inFlight(t, ledger); len(r) != 0 {
		t.Errorf("after Run the ledger still holds %v", r)
	}
	// A first decision may use a view shared with other decisions.
	if !reflect.DeepEqual(f.fresh, []bool{false}) {
		t.Errorf("decisions asked fresh views %v, want [false]", f.fresh)
	}
}

func TestRunDecidesAgainWhenTheIDIsTaken(t *testing.T) {
	f := newFake("pve1")
	// An outsider creates 100 and 101 between our snapshot and our create.
	f.createErr = func(p scheduler.Placement, n int) error {
		if n <= 2 {
			f.guests[p.VMID] = fakeGuest{node: "pve1", name: "outsider"}
		}
		return nil
	}
	ledger := reservations.New()
	res, err := provisioner(f, ledger, scheduler.Request{Name: "web"}, nil).Run(context.Background())
	if err != nil || res.Placement.VMID < 102 || res.Attempts != 3 {
		t.Fatalf("Run = %+v, %v; want a VM above 101 at the third attempt", res, err)
	}
	// After collisions the id is spread over the free ones, the same way every time.
	if want := 102 + skipFor("web", 3, 2); res.Placement.VMID != want {
		t.Errorf("third attempt took %d, want %d (102 plus the name's offset)", res.Placement.VMID, want)
	}
	if g := f.guests[100]; g.name != "outsider" {
		t.Errorf("the outsider's VM 100 was touched: %+v", g)
	}
	// "Already exists" proved the view out of date: the decisions after it read the cluster now.
	if !reflect.DeepEqual(f.fresh, []bool{false, true, true}) {
		t.Errorf("decisions asked fresh views %v, want [false true true]", f.fresh)
	}
}

func TestRunGivesUpAfterMaxAttempts(t *testing.T) {
	f := newFake("pve1")
	f.createErr = func(p scheduler.Placement, _ int) error {
		f.guests[p.VMID] = fakeGuest{node: "pve1", name: "outsider"}
		return nil
	}
	res, err := provisioner(f, reservations.New(), scheduler.Request{Name: "web"}, nil).Run(context.Background())
	if !errors.Is(err, proxmox.ErrAlreadyExists) || res.Created || res.Attempts != 5 || len(f.creates) != 5 {
		t.Fatalf("Run = %+v, %v after %d creates; want already exists after 5 attempts", res, err, len(f.creates))
	}
}

func TestRunPinnedVMIDIsNotRetried(t *testing.T) {
	f := newFake("pve1")
	f.guests[300] = fakeGuest{node: "pve1", name: "other"}
	res, err := provisioner(f, reservations.New(), scheduler.Request{Name: "web", VMID: 300}, nil).Run(context.Background())
	if !errors.Is(err, proxmox.ErrAlreadyExists) || res.Created || res.Attempts != 1 {
		t.Fatalf("Run = %+v, %v; want one attempt failing with already exists", res, err)
	}
}

func TestRunAvoidsANodeThatAnsweredOffline(t *testing.T) {
	offline := fmt.Errorf("create: %w", proxmox.ErrNodeOffline)
	for _, tc := range []struct {
		name      string
		clone     bool
		pin       string
		wantNode  string
		wantError bool
	}{
		{name: "from scratch", wantNode: "pve2"},
		{name: "clone: the 595 may come from the source's node", clone: true, wantError: true},
		{name: "pinned node", pin: "pve1", wantError: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake("pve1", "pve2")
			f.createErr = func(p scheduler.Placement, _ int) error {
				if p.Node == "pve1" {
					return offline
				}
				return nil
			}
			ledger := reservations.New()
			p := provisioner(f, ledger, scheduler.Request{Name: "web", Node: tc.pin}, nil)
			p.Clone = tc.clone
			res, err := p.Run(context.Background())
			if tc.wantError {
				if !errors.Is(err, proxmox.ErrNodeOffline) || res.Created {
					t.Fatalf("Run = %+v, %v; want the offline error, nothing created", res, err)
				}
			} else if err != nil || res.Placement.Node != tc.wantNode || res.Placement.VMID != 100 {
				t.Fatalf("Run = %+v, %v; want VM 100 on %s", res, err, tc.wantNode)
			}
			if r := inFlight(t, ledger); len(r) != 0 {
				t.Errorf("the ledger still holds %v", r)
			}
		})
	}
}

func TestRunFailureReleasesTheReservation(t *testing.T) {
	f := newFake("pve1")
	f.createErr = func(scheduler.Placement, int) error { return errors.New("clone failed: storage full") }
	ledger := reservations.New()
	res, err := provisioner(f, ledger, scheduler.Request{Name: "web"}, nil).Run(context.Background())
	if err == nil || res.Created || len(f.guests) != 0 {
		t.Fatalf("Run = %+v, %v with guests %v; want a failure leaving nothing", res, err, f.guests)
	}
	if r := inFlight(t, ledger); len(r) != 0 {
		t.Errorf("the ledger still holds %v", r)
	}
}

func TestRunTimeoutWithTheGuestPresentReportsItCreated(t *testing.T) {
	f := newFake("pve1")
	f.createErr = func(p scheduler.Placement, _ int) error {
		f.guests[p.VMID] = fakeGuest{node: "pve1", lock: "create"} // PVE goes on building it
		return fmt.Errorf("create VM %d: %w", p.VMID, context.DeadlineExceeded)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := provisioner(f, reservations.New(), scheduler.Request{Name: "web"}, nil)
	p.Sleep = func(context.Context, time.Duration) bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.guests[100] = fakeGuest{node: "pve1", name: "web"} // the create ends
		return true
	}
	res, err := p.Run(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !res.Created || res.Placement.VMID != 100 {
		t.Fatalf("Run = %+v, %v; want VM 100 reported created with the timeout", res, err)
	}
}

// Whatever happens once a create was sent, the loop finds out whether the guest exists
// before deciding anything else.
func TestRunUncertainCreateLooksFirst(t *testing.T) {
	proxy500 := &proxmox.APIError{Op: "create VM", Status: 500, Message: "Internal Server Error"}
	lost := fmt.Errorf("create VM: %w", proxmox.ErrTransient)
	offline := fmt.Errorf("create VM: %w", proxmox.ErrNodeOffline)
	unknown := fmt.Errorf("create VM: %w", proxmox.ErrTaskUnknown)
	for _, tc := range []struct {
		name         string
		err          error
		created      bool // the first create made its guest before failing
		clone        bool
		wantVMID     int
		wantAttempts int
		wantErr      bool
	}{
		{name: "500 replacing the answer, guest made", err: proxy500, created: true, wantVMID: 100, wantAttempts: 1},
		{name: "lost answer, guest made", err: lost, created: true, wantVMID: 100, wantAttempts: 1},
		{name: "task status unreadable, guest made", err: unknown, created: true, wantVMID: 100, wantAttempts: 1},
		{name: "595 on a clone, guest made", err: offline, created: true, clone: true, wantVMID: 100, wantAttempts: 1},
		{name: "500, nothing made: decided again", err: proxy500, wantVMID: 100, wantAttempts: 2},
		{name: "595 on a clone, nothing made: decided again", err: offline, clone: true, wantVMID: 100, wantAttempts: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake("pve1")
			f.createErr = func(p scheduler.Placement, n int) error {
				if n > 1 {
					return nil
				}
				if tc.created {
					f.guests[p.VMID] = fakeGuest{node: p.Node, name: p.Name, tags: []string{proxmox.ClaimTag}}
				}
				return tc.err
			}
			ledger := reservations.New()
			var setUp []int
			p := provisioner(f, ledger, scheduler.Request{Name: "web"}, func(pl scheduler.Placement) error {
				setUp = append(setUp, pl.VMID)
				return nil
			})
			p.Clone = tc.clone
			res, err := p.Run(context.Background())
			if err != nil || !res.Created || res.Placement.VMID != tc.wantVMID || res.Attempts != tc.wantAttempts {
				t.Fatalf("Run = %+v, %v; want VM %d created after %d attempts", res, err, tc.wantVMID, tc.wantAttempts)
			}
			if len(f.guests) != 1 || len(setUp) != 1 {
				t.Errorf("guests %v, set up %v: want exactly one VM, set up once", f.guests, setUp)
			}
			if r := inFlight(t, ledger); len(r) != 0 {
				t.Errorf("the ledger still holds %v", r)
			}
		})
	}
}

func TestRunUncertainCreateGivesUp(t *testing.T) {
	f := newFake("pve1")
	f.createErr = func(scheduler.Placement, int) error {
		return &proxmox.APIError{Op: "create VM", Status: 500, Message: "Internal Server Error"}
	}
	res, err := provisioner(f, reservations.New(), scheduler.Request{Name: "web"}, nil).Run(context.Background())
	if err == nil || res.Created || res.Attempts != 1+unsureRetries || len(f.guests) != 0 {
		t.Fatalf("Run = %+v, %v; want a failure after %d attempts, nothing made", res, err, 1+unsureRetries)
	}
}

func TestRunUncertainCreateWithSomeoneElsesGuestDecidesAgain(t *testing.T) {
	f := newFake("pve1")
	f.createErr = func(p scheduler.Placement, n int) error {
		if n == 1 {
			f.guests[p.VMID] = fakeGuest{node: "pve1", name: "outsider"}
			return fmt.Errorf("create: %w", proxmox.ErrTransient)
		}
		return nil
	}
	res, err := provisioner(f, reservations.New(), scheduler.Request{Name: "web"}, nil).Run(context.Background())
	if err != nil || res.Placement.VMID <= 100 || f.guests[100].name != "outsider" {
		t.Fatalf("Run = %+v, %v; want a VM above the outsider's 100", res, err)
	}
}

func TestRunGuestStillLockedIsKeptAsTainted(t *testing.T) {
	f := newFake("pve1")
	f.createErr = func(p scheduler.Placement, _ int) error {
		f.guests[p.VMID] = fakeGuest{node: "pve1", lock: "clone"}
		return fmt.Errorf("clone: %w", proxmox.ErrTaskUnknown)
	}
	p := provisioner(f, reservations.New(), scheduler.Request{Name: "web"}, nil)
	waits := 0
	p.Sleep = func(context.Context, time.Duration) bool { waits++; return waits < 3 }
	res, err := p.Run(context.Background())
	if err == nil || !res.Created || res.Placement.Node != "pve1" || !strings.Contains(err.Error(), "still locked (clone)") {
		t.Fatalf("Run = %+v, %v; want VM 100 kept with an error about its lock", res, err)
	}
}

func TestRunSetupFailureKeepsTheGuest(t *testing.T) {
	f := newFake("pve1")
	res, err := provisioner(f, reservations.New(), scheduler.Request{Name: "web"}, func(scheduler.Placement) error {
		return errors.New("start failed")
	}).Run(context.Background())
	if err == nil || !res.Created || res.Placement.VMID != 100 {
		t.Fatalf("Run = %+v, %v; want VM 100 created with the setup error", res, err)
	}
}

func TestRunDecisionErrorCreatesNothing(t *testing.T) {
	f := newFake() // no nodes
	res, err := provisioner(f, reservations.New(), scheduler.Request{Name: "web"}, nil).Run(context.Background())
	var ue *scheduler.UnschedulableError
	if !errors.As(err, &ue) || res.Created || res.Placement.VMID != 0 || len(f.creates) != 0 {
		t.Fatalf("Run = %+v, %v; want the scheduling error and no create", res, err)
	}
}

// Concurrent runs of one process share the ledger: each takes its own id.
func TestRunConcurrentRunsTakeDistinctIDs(t *testing.T) {
	f := newFake("pve1", "pve2")
	ledger := reservations.New()
	const n = 20
	ids := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := provisioner(f, ledger, scheduler.Request{Name: fmt.Sprintf("web-%d", i)}, nil).Run(context.Background())
			if err != nil {
				t.Error(err)
			}
			ids <- res.Placement.VMID
		}()
	}
	wg.Wait()
	close(ids)
	seen := map[int]bool{}
	for id := range ids {
		if seen[id] {
			t.Errorf("vmid %d given twice", id)
		}
		seen[id] = true
	}
	if len(seen) != n || len(f.creates) != n {
		t.Errorf("%d distinct ids from %d creates, want %d each", len(seen), len(f.creates), n)
	}
}

func TestSkipAndBackoffBounds(t *testing.T) {
	if skipFor("web-1", 1, 0) != 0 || skipFor("web-1", 7, 0) != 0 {
		t.Error("an attempt without collision skips ids: the first choice must stay the lowest free id")
	}
	spread := map[int]bool{}
	for i := range 50 {
		k := skipFor(fmt.Sprintf("web-%d", i), 2, 1)
		if k < 0 || k >= 8 {
			t.Fatalf("skip %d outside [0, 8) after one collision", k)
		}
		if k != skipFor(fmt.Sprintf("web-%d", i), 2, 1) {
			t.Fatal("skip is not deterministic")
		}
		spread[k] = true
	}
	if len(spread) < 4 {
		t.Errorf("50 names use only skips %v: collisions would repeat", spread)
	}
	for attempt := 2; attempt < 70; attempt++ {
		ceiling := time.Second
		if attempt < 8 {
			ceiling = 25 * time.Millisecond << (attempt - 2)
		}
		for range 20 {
			if d := backoff(attempt); d <= 0 || d > ceiling {
				t.Fatalf("backoff(%d) = %v, want in (0, %v]", attempt, d, ceiling)
			}
		}
	}
}

// Two processes decided on the same snapshot for a node with room for one guest: whatever
// order their creates and checks happen in, exactly one stays.
func TestClaimYoungerBacksOff(t *testing.T) {
	// room: one guest of one vCPU fits pve1 besides the others counted.
	check := func(snap scheduler.Snapshot, node string, vmid int) []string {
		used := 0.0
		for _, g := range snap.Guests {
			if g.Node == node && g.VMID != vmid && g.CountsForCapacity() {
				used += g.CPUs
			}
		}
		for _, r := range snap.Reservations {
			if r.Node == node && r.VMID != vmid {
				used += float64(r.VCPUs)
			}
		}
		if used+1 > 1 {
			return []string{fmt.Sprintf("CPU: %v+1 > 1", used)}
		}
		return nil
	}
	for _, tc := range []struct {
		name string
		// other is the concurrent claim's state when this one checks.
		other    fakeGuest
		otherID  int
		wantStay bool
	}{
		{name: "older claim, unconfirmed: this one backs off", other: fakeGuest{node: "pve1", name: "b", tags: []string{proxmox.ClaimTag}}, otherID: 99},
		{name: "older claim still locked: this one backs off", other: fakeGuest{node: "pve1", lock: "create"}, otherID: 99},
		{name: "younger claim, unconfirmed: this one stays", other: fakeGuest{node: "pve1", name: "b", tags: []string{proxmox.ClaimTag}}, otherID: 200, wantStay: true},
		{name: "younger claim already confirmed: this one backs off", other: fakeGuest{node: "pve1", name: "b", tags: []string{proxmox.PendingTag}}, otherID: 200},
		{name: "younger guest running: this one backs off", other: fakeGuest{node: "pve1", name: "b", running: true}, otherID: 200},
		{name: "older stopped guest without mark does not count", other: fakeGuest{node: "pve1", name: "b"}, otherID: 99, wantStay: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake("pve1", "pve2")
			f.guests[tc.otherID] = tc.other
			p := provisioner(f, reservations.New(), scheduler.Request{Name: "web"}, nil)
			// Both decided on the snapshot before the other claim existed: pve1, vmid 100.
			decided := false
			p.Decide = func(snap scheduler.Snapshot) (scheduler.Placement, error) {
				if !decided {
					decided = true
					return scheduler.Placement{Name: "web", Node: "pve1", VMID: 100}, nil
				}
				return scheduler.Placement{Name: "web", Node: "pve2", VMID: 101}, nil
			}
			p.Check = check
			res, err := p.Run(context.Background())
			if err != nil || !res.Created {
				t.Fatalf("Run = %+v, %v", res, err)
			}
			stayed := res.Placement.Node == "pve1"
			if stayed != tc.wantStay {
				t.Fatalf("ended on %s (attempts %d); want staying on pve1 = %v", res.Placement.Node, res.Attempts, tc.wantStay)
			}
			if _, left := f.guests[100]; left != stayed {
				t.Errorf("guest 100 left behind = %v after moving = %v", left, !stayed)
			}
			if g := f.guests[res.Placement.VMID]; len(g.tags) != 1 || g.tags[0] != proxmox.PendingTag {
				t.Errorf("the kept guest carries %v, want the pending mark only", g.tags)
			}
			// Both rounds read the node, not the whole cluster.
			if tc.wantStay && (f.nodeViews != 2 || len(f.fresh) != 1) {
				t.Errorf("%d node views and %d decision snapshots, want 2 and 1", f.nodeViews, len(f.fresh))
			}
		})
	}
}

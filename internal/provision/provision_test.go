package provision

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

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
	snapshots int
}

type fakeGuest struct {
	node, name, lock string
}

var errNotFound = fmt.Errorf("guest: %w", proxmox.ErrNotFound)

func newFake(nodes ...string) *fakeCluster {
	return &fakeCluster{nodes: nodes, guests: map[int]fakeGuest{}}
}

func (f *fakeCluster) Snapshot(context.Context) (scheduler.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snapshots++
	var snap scheduler.Snapshot
	for _, n := range f.nodes {
		snap.Nodes = append(snap.Nodes, scheduler.Node{Name: n, Online: true, MaxCPU: 8, MaxMem: 16 << 30})
	}
	for id, g := range f.guests {
		snap.Guests = append(snap.Guests, scheduler.Guest{VMID: id, Node: g.node, Name: g.name, Type: scheduler.GuestQEMU, Status: "stopped", Lock: g.lock})
	}
	return snap, nil
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
	f.guests[p.VMID] = fakeGuest{node: p.Node, name: p.Name}
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
	if err != nil || res.Placement.VMID != 102 || res.Attempts != 3 {
		t.Fatalf("Run = %+v, %v; want VM 102 at the third attempt", res, err)
	}
	if g := f.guests[100]; g.name != "outsider" {
		t.Errorf("the outsider's VM 100 was touched: %+v", g)
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
	res, err := provisioner(f, reservations.New(), scheduler.Request{Name: "web"}, nil).Run(context.Background())
	if !errors.Is(err, context.DeadlineExceeded) || !res.Created || res.Placement.VMID != 100 {
		t.Fatalf("Run = %+v, %v; want VM 100 reported created with the timeout", res, err)
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

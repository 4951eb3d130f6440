package reservations

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/plugins"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// decideLowest picks the lowest id the snapshot's guests and reservations leave free.
func decideLowest(snap scheduler.Snapshot) (scheduler.Reservation, error) {
	used := map[int]bool{}
	for _, g := range snap.Guests {
		used[g.VMID] = true
	}
	for _, r := range snap.Reservations {
		used[r.VMID] = true
	}
	for id := 100; ; id++ {
		if !used[id] {
			return scheduler.Reservation{VMID: id, Node: "pve1", VCPUs: 2, MemoryMiB: 512}, nil
		}
	}
}

func snapshotOf(guests ...int) func(context.Context) (scheduler.Snapshot, error) {
	return func(context.Context) (scheduler.Snapshot, error) {
		var s scheduler.Snapshot
		for _, id := range guests {
			s.Guests = append(s.Guests, scheduler.Guest{VMID: id, Node: "pve1", Type: scheduler.GuestQEMU})
		}
		return s, nil
	}
}

// snapshotAt is an empty cluster read at t.
func snapshotAt(t time.Time) func(context.Context) (scheduler.Snapshot, error) {
	return func(context.Context) (scheduler.Snapshot, error) { return scheduler.Snapshot{ReadAt: t}, nil }
}

// reservedIDs returns the ids a decision would be shown as reserved, sorted.
func reservedIDs(t *testing.T, l *Ledger, snapshot func(context.Context) (scheduler.Snapshot, error)) []int {
	t.Helper()
	var ids []int
	_, err := l.Decide(context.Background(), snapshot, func(s scheduler.Snapshot) (scheduler.Reservation, error) {
		for _, r := range s.Reservations {
			ids = append(ids, r.VMID)
		}
		return scheduler.Reservation{}, errors.New("only looking")
	})
	if err == nil {
		t.Fatal("the probe decision should fail")
	}
	sort.Ints(ids)
	return ids
}

func TestConcurrentDecisionsAreSerialisedAndTakeDistinctIDs(t *testing.T) {
	l := New()
	var inside, maxInside atomic.Int32
	snapshot := func(context.Context) (scheduler.Snapshot, error) {
		n := inside.Add(1)
		for {
			m := maxInside.Load()
			if n <= m || maxInside.CompareAndSwap(m, n) {
				break
			}
		}
		return scheduler.Snapshot{}, nil
	}
	decide := func(s scheduler.Snapshot) (scheduler.Reservation, error) {
		defer inside.Add(-1)
		return decideLowest(s)
	}
	var mu sync.Mutex
	seen := map[int]bool{}
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := l.Decide(context.Background(), snapshot, decide)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if seen[r.VMID] {
				t.Errorf("vmid %d handed out twice", r.VMID)
			}
			seen[r.VMID] = true
		}()
	}
	wg.Wait()
	if len(seen) != 50 {
		t.Fatalf("%d distinct ids, want 50", len(seen))
	}
	if maxInside.Load() != 1 {
		t.Fatalf("%d decisions ran at once; the ledger must serialise snapshot+decide", maxInside.Load())
	}
}

func TestDecisionSeesInFlightCapacityAndKeepsSnapshotReservations(t *testing.T) {
	l := New()
	ctx := context.Background()
	first, err := l.Decide(ctx, snapshotOf(), decideLowest)
	if err != nil {
		t.Fatal(err)
	}
	backing := make([]scheduler.Reservation, 1, 4)
	backing[0] = scheduler.Reservation{VMID: 900, Node: "pve2"}
	withOwn := func(context.Context) (scheduler.Snapshot, error) {
		return scheduler.Snapshot{Reservations: backing[:1]}, nil
	}
	var got []scheduler.Reservation
	_, err = l.Decide(ctx, withOwn, func(s scheduler.Snapshot) (scheduler.Reservation, error) {
		got = s.Reservations
		return decideLowest(s)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []scheduler.Reservation{{VMID: 900, Node: "pve2"}, first}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decision saw reservations %+v, want %+v (in-flight ones keep their node and size)", got, want)
	}
	if !reflect.DeepEqual(backing[:2][1], scheduler.Reservation{}) {
		t.Fatalf("the snapshot's own reservation slice was written to: %+v", backing[:2])
	}
}

func TestReleaseAndMarkUsed(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// act runs on a ledger that has just reserved id 100.
		act        func(l *Ledger)
		snapshot   func(context.Context) (scheduler.Snapshot, error)
		wantShown  []int // reservations the next decision sees
		wantNextID int
	}{
		{name: "in flight", act: func(*Ledger) {}, snapshot: snapshotOf(), wantShown: []int{100}, wantNextID: 101},
		{name: "released after a failed create", act: func(l *Ledger) { l.Release(100) }, snapshot: snapshotOf(), wantShown: nil, wantNextID: 100},
		{name: "marked used, snapshot lags", act: func(l *Ledger) { l.MarkUsed(100) }, snapshot: snapshotOf(), wantShown: []int{100}, wantNextID: 101},
		{name: "marked used, snapshot shows the guest", act: func(l *Ledger) { l.MarkUsed(100) }, snapshot: snapshotOf(100), wantShown: nil, wantNextID: 101},
		{name: "release of an unknown id", act: func(l *Ledger) { l.Release(555) }, snapshot: snapshotOf(), wantShown: []int{100}, wantNextID: 101},
		// A snapshot shared between decisions may predate the create: the guest is not in it.
		{name: "released, snapshot read before", act: func(l *Ledger) { l.Release(100) }, snapshot: snapshotAt(time.Now().Add(-time.Second)),
			wantShown: []int{100}, wantNextID: 101},
		{name: "released, snapshot read after", act: func(l *Ledger) { l.Release(100) }, snapshot: snapshotAt(time.Now().Add(time.Second)),
			wantShown: nil, wantNextID: 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New()
			if r, err := l.Decide(ctx, snapshotOf(), decideLowest); err != nil || r.VMID != 100 {
				t.Fatalf("first decision = %v, %v", r, err)
			}
			tt.act(l)
			if got := reservedIDs(t, l, tt.snapshot); !reflect.DeepEqual(got, tt.wantShown) {
				t.Fatalf("reservations shown = %v, want %v", got, tt.wantShown)
			}
			r, err := l.Decide(ctx, tt.snapshot, decideLowest)
			if err != nil || r.VMID != tt.wantNextID {
				t.Fatalf("next decision = %d, %v; want %d", r.VMID, err, tt.wantNextID)
			}
		})
	}
}

func TestUsedIDTakesNoCapacityAndIsForgottenOnceSeen(t *testing.T) {
	l := New()
	ctx := context.Background()
	l.MarkUsed(300)
	var shown []scheduler.Reservation
	looking := errors.New("only looking")
	if _, err := l.Decide(ctx, snapshotOf(), func(s scheduler.Snapshot) (scheduler.Reservation, error) {
		shown = s.Reservations
		return scheduler.Reservation{}, looking
	}); !errors.Is(err, looking) {
		t.Fatalf("Decide returned %v, want the decision's own error", err)
	}
	if want := []scheduler.Reservation{{VMID: 300}}; !reflect.DeepEqual(shown, want) {
		t.Fatalf("used id shown as %+v, want %+v (an id only, no node or size)", shown, want)
	}
	// The snapshot shows guest 300 once: the ledger forgets it, so when the guest is deleted
	// later its id is free again.
	reservedIDs(t, l, snapshotOf(300))
	if got := reservedIDs(t, l, snapshotOf()); got != nil {
		t.Fatalf("id 300 still reserved after its guest appeared and went: %v", got)
	}
}

func TestDecideErrorsReserveNothing(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name     string
		snapshot func(context.Context) (scheduler.Snapshot, error)
		decide   func(scheduler.Snapshot) (scheduler.Reservation, error)
	}{
		{"snapshot fails", func(context.Context) (scheduler.Snapshot, error) { return scheduler.Snapshot{}, boom }, decideLowest},
		{"decision fails", snapshotOf(), func(scheduler.Snapshot) (scheduler.Reservation, error) { return scheduler.Reservation{VMID: 100}, boom }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New()
			if _, err := l.Decide(context.Background(), tt.snapshot, tt.decide); !errors.Is(err, boom) {
				t.Fatalf("error = %v, want %v", err, boom)
			}
			if got := reservedIDs(t, l, snapshotOf()); got != nil {
				t.Fatalf("a failed decision left reservations: %v", got)
			}
		})
	}
}

// An in-flight reservation reaches the next decision with its name and tags, so the scheduler
// lists it as an assumed guest of its groups: a second VM with required anti-affinity on the
// same tag avoids the first one's node before PVE shows the first guest.
func TestInFlightReservationKeepsNameAndTagsForGroups(t *testing.T) {
	l := New()
	ctx := context.Background()
	nodes := func(context.Context) (scheduler.Snapshot, error) {
		return scheduler.Snapshot{Nodes: []scheduler.Node{
			{Name: "pve1", Online: true, MaxCPU: 8, MaxMem: 8 << 30, Storages: []scheduler.Storage{{Name: "local", Content: []string{"images"}, Active: true, Total: 1 << 40}}},
			{Name: "pve2", Online: true, MaxCPU: 8, MaxMem: 8 << 30, Storages: []scheduler.Storage{{Name: "local", Content: []string{"images"}, Active: true, Total: 1 << 40}}},
		}}, nil
	}
	profile, err := plugins.NewProfile(scheduler.PluginConfig{})
	if err != nil {
		t.Fatal(err)
	}
	decide := func(name string) func(scheduler.Snapshot) (scheduler.Reservation, error) {
		return func(s scheduler.Snapshot) (scheduler.Reservation, error) {
			req := scheduler.Request{Name: name, Cores: 1, Sockets: 1, MemoryMiB: 512, Tags: []string{"web"},
				VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: []string{"web"}, TopologyKey: "node"}}}
			d, err := profile.Schedule(s, []scheduler.Request{req}, scheduler.Options{})
			if err != nil {
				return scheduler.Reservation{}, err
			}
			p := d.Placements[0]
			return scheduler.Reservation{VMID: p.VMID, Node: p.Node, Name: name, VCPUs: 1, MemoryMiB: 512, Tags: req.Tags}, nil
		}
	}
	first, err := l.Decide(ctx, nodes, decide("web-1"))
	if err != nil {
		t.Fatal(err)
	}
	var seen []scheduler.Reservation
	second, err := l.Decide(ctx, nodes, func(s scheduler.Snapshot) (scheduler.Reservation, error) {
		seen = s.Reservations
		return decide("web-2")(s)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0].Name != "web-1" || !reflect.DeepEqual(seen[0].Tags, []string{"web"}) || !seen[0].Creating {
		t.Fatalf("the second decision saw %+v, want web-1's reservation with its tags, marked as a create under way", seen)
	}
	if second.Node == first.Node {
		t.Fatalf("both web VMs on %s: the in-flight one was not a member of its group", first.Node)
	}
	if _, err := l.Decide(ctx, nodes, decide("web-3")); err == nil || !strings.Contains(err.Error(), "2 node(s) already run a guest tagged [web]") {
		t.Fatalf("a third web VM on two nodes: err = %v", err)
	}
}

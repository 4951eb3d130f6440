package reservations

import (
	"context"
	"errors"
	"sync"
	"testing"

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
			return scheduler.Reservation{VMID: id, Node: "pve1", VCPUs: 1, MemoryMiB: 512}, nil
		}
	}
}

func emptySnapshot(context.Context) (scheduler.Snapshot, error) { return scheduler.Snapshot{}, nil }

func TestConcurrentDecisionsTakeDistinctIDs(t *testing.T) {
	l := New()
	var mu sync.Mutex
	seen := map[int]bool{}
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := l.Decide(context.Background(), emptySnapshot, decideLowest)
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
}

func TestReleaseAndMarkTaken(t *testing.T) {
	l := New()
	ctx := context.Background()
	first, _ := l.Decide(ctx, emptySnapshot, decideLowest)
	l.Release(first.VMID)
	again, _ := l.Decide(ctx, emptySnapshot, decideLowest)
	if again.VMID != first.VMID {
		t.Fatalf("released id %d not reused: got %d", first.VMID, again.VMID)
	}
	l.MarkTaken(again.VMID)
	next, _ := l.Decide(ctx, emptySnapshot, decideLowest)
	if next.VMID == again.VMID {
		t.Fatalf("id %d marked taken was handed out again", again.VMID)
	}
}

func TestDecideErrorsReserveNothing(t *testing.T) {
	l := New()
	boom := errors.New("boom")
	if _, err := l.Decide(context.Background(), func(context.Context) (scheduler.Snapshot, error) { return scheduler.Snapshot{}, boom }, decideLowest); !errors.Is(err, boom) {
		t.Fatalf("snapshot error: %v", err)
	}
	if _, err := l.Decide(context.Background(), emptySnapshot, func(scheduler.Snapshot) (scheduler.Reservation, error) { return scheduler.Reservation{}, boom }); !errors.Is(err, boom) {
		t.Fatalf("decide error: %v", err)
	}
	if len(l.pending()) != 0 {
		t.Fatalf("failed decisions left reservations: %v", l.pending())
	}
}

// Package reservations keeps the placements this provider process has decided but not yet
// created, so that concurrent creates (count = 20, parallelism 10) take distinct VMIDs and
// spread by capacity before PVE shows their guests.
package reservations

import (
	"context"
	"sync"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Ledger is a provider-wide, mutex-guarded set of in-flight placements.
type Ledger struct {
	mu       sync.Mutex
	inFlight map[int]scheduler.Reservation
	// released are in-flight reservations whose create has ended, with when: they go once a
	// snapshot read after that shows the outcome.
	released map[int]time.Time
	// used are ids PVE said exist although our snapshot did not show them yet.
	used map[int]struct{}
}

// New returns an empty ledger.
func New() *Ledger {
	return &Ledger{inFlight: map[int]scheduler.Reservation{}, released: map[int]time.Time{}, used: map[int]struct{}{}}
}

// Decide runs one decision under the ledger's lock: read a snapshot (which may be a recent
// one shared with other decisions), add the in-flight reservations and the ids known used,
// decide, and reserve the result before unlocking. The lock covers only this: no PVE task
// runs under it, so creates proceed in parallel.
func (l *Ledger) Decide(ctx context.Context, snapshot func(context.Context) (scheduler.Snapshot, error),
	decide func(scheduler.Snapshot) (scheduler.Reservation, error)) (scheduler.Reservation, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	snap, err := snapshot(ctx)
	if err != nil {
		return scheduler.Reservation{}, err
	}
	for id, at := range l.released {
		if snap.ReadAt.IsZero() || snap.ReadAt.After(at) {
			delete(l.inFlight, id)
			delete(l.released, id)
		}
	}
	// An id the snapshot shows as a guest needs no entry of ours any more; should that guest
	// be deleted later, the id is free again.
	for _, g := range snap.Guests {
		delete(l.used, g.VMID)
	}
	l.addTo(&snap)
	r, err := decide(snap)
	if err != nil {
		return scheduler.Reservation{}, err
	}
	r.Creating = true
	l.inFlight[r.VMID] = r
	return r, nil
}

// AddTo adds the in-flight reservations and the ids known used to a snapshot read outside
// Decide, such as the look again after a create.
func (l *Ledger) AddTo(snap *scheduler.Snapshot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addTo(snap)
}

// addTo adds the reservations to a copy of snap's list, whole: a reservation whose guest the
// snapshot lists already stands for it in the scheduler, which counts the two once and gives
// the guest the reservation's tags. Caller holds l.mu.
func (l *Ledger) addTo(snap *scheduler.Snapshot) {
	out := append(make([]scheduler.Reservation, 0, len(snap.Reservations)+len(l.inFlight)+len(l.used)), snap.Reservations...)
	for _, r := range l.inFlight {
		out = append(out, r)
	}
	for id := range l.used {
		if _, ok := l.inFlight[id]; !ok {
			out = append(out, scheduler.Reservation{VMID: id})
		}
	}
	snap.Reservations = out
}

// Release ends a reservation: its guest now exists, or its create failed. Decisions on a
// snapshot read before now still see it (a snapshot read without a time counts as read now),
// so that a snapshot shared between decisions never hides a guest this process made.
func (l *Ledger) Release(vmid int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.inFlight[vmid]; ok {
		l.released[vmid] = time.Now()
	}
}

// MarkUsed ends the reservation of vmid because PVE refused it as already existing, and keeps
// the id out of later decisions until a snapshot shows its guest.
func (l *Ledger) MarkUsed(vmid int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.inFlight, vmid)
	delete(l.released, vmid)
	l.used[vmid] = struct{}{}
}

// Package reservations keeps the placements this provider process has decided but not yet
// created, so that concurrent creates (count = 20, parallelism 10) take distinct VMIDs and
// spread by capacity before PVE shows their guests.
package reservations

import (
	"context"
	"sync"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Ledger is a provider-wide, mutex-guarded set of in-flight placements.
type Ledger struct {
	mu       sync.Mutex
	inFlight map[int]scheduler.Reservation
	// taken are ids PVE said exist although our snapshot did not show them yet.
	taken map[int]struct{}
}

// New returns an empty ledger.
func New() *Ledger {
	return &Ledger{inFlight: map[int]scheduler.Reservation{}, taken: map[int]struct{}{}}
}

// Decide runs one decision under the ledger's lock: read a fresh snapshot, add the in-flight
// reservations and the ids known taken, decide, and reserve the result before unlocking.
// The lock covers only this: no PVE task runs under it.
func (l *Ledger) Decide(ctx context.Context, snapshot func(context.Context) (scheduler.Snapshot, error),
	decide func(scheduler.Snapshot) (scheduler.Reservation, error)) (scheduler.Reservation, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	snap, err := snapshot(ctx)
	if err != nil {
		return scheduler.Reservation{}, err
	}
	snap.Reservations = append(append([]scheduler.Reservation(nil), snap.Reservations...), l.pending()...)
	r, err := decide(snap)
	if err != nil {
		return scheduler.Reservation{}, err
	}
	l.inFlight[r.VMID] = r
	return r, nil
}

// pending lists in-flight reservations and taken ids (as zero-size reservations). Caller
// holds l.mu.
func (l *Ledger) pending() []scheduler.Reservation {
	out := make([]scheduler.Reservation, 0, len(l.inFlight)+len(l.taken))
	for _, r := range l.inFlight {
		out = append(out, r)
	}
	for id := range l.taken {
		if _, ok := l.inFlight[id]; !ok {
			out = append(out, scheduler.Reservation{VMID: id})
		}
	}
	return out
}

// Release ends a reservation: the guest now exists (PVE shows it) or its create failed.
func (l *Ledger) Release(vmid int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.inFlight, vmid)
}

// MarkTaken records that PVE refused vmid as already existing, so the next decision avoids it
// even if the snapshot does not show it yet.
func (l *Ledger) MarkTaken(vmid int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.inFlight, vmid)
	l.taken[vmid] = struct{}{}
}

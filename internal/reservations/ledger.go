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
	// used are ids PVE said exist although our snapshot did not show them yet.
	used map[int]struct{}
}

// New returns an empty ledger.
func New() *Ledger {
	return &Ledger{inFlight: map[int]scheduler.Reservation{}, used: map[int]struct{}{}}
}

// Decide runs one decision under the ledger's lock: read a fresh snapshot, add the in-flight
// reservations and the ids known used, decide, and reserve the result before unlocking.
// The lock covers only this: no PVE task runs under it, so creates proceed in parallel.
func (l *Ledger) Decide(ctx context.Context, snapshot func(context.Context) (scheduler.Snapshot, error),
	decide func(scheduler.Snapshot) (scheduler.Reservation, error)) (scheduler.Reservation, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	snap, err := snapshot(ctx)
	if err != nil {
		return scheduler.Reservation{}, err
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

// addTo adds the reservations to a copy of snap's list. A reservation whose guest the
// snapshot already counts (running, or pending: being created, or marked) adds only its id,
// lest the guest count twice. Caller holds l.mu.
func (l *Ledger) addTo(snap *scheduler.Snapshot) {
	counted := map[int]bool{}
	for i := range snap.Guests {
		if g := &snap.Guests[i]; g.CountsForCapacity() {
			counted[g.VMID] = true
		}
	}
	out := append(make([]scheduler.Reservation, 0, len(snap.Reservations)+len(l.inFlight)+len(l.used)), snap.Reservations...)
	for _, r := range l.inFlight {
		if counted[r.VMID] {
			r = scheduler.Reservation{VMID: r.VMID}
		}
		out = append(out, r)
	}
	for id := range l.used {
		if _, ok := l.inFlight[id]; !ok {
			out = append(out, scheduler.Reservation{VMID: id})
		}
	}
	snap.Reservations = out
}

// Release ends a reservation: the guest now exists (PVE shows it) or its create failed.
func (l *Ledger) Release(vmid int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.inFlight, vmid)
}

// MarkUsed ends the reservation of vmid because PVE refused it as already existing, and keeps
// the id out of later decisions until a snapshot shows its guest.
func (l *Ledger) MarkUsed(vmid int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.inFlight, vmid)
	l.used[vmid] = struct{}{}
}

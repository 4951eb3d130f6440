package scheduler

import (
	"fmt"
	"testing"
)

// A reservation whose guest the snapshot lists already and that guest are listed once, with
// the reservation's tags. A guest that counts (running, pending) keeps its own size and live
// figures; one that does not yet (a clone just made) is the reservation, assumed.
func TestReservationAndItsListedGuestCountOnce(t *testing.T) {
	res := func(vmid int) Reservation {
		return Reservation{VMID: vmid, Node: "pve1", Name: fmt.Sprint("vm", vmid), VCPUs: 4, MemoryMiB: 1024, Tags: []string{"web"}}
	}
	snap := Snapshot{
		Nodes: []Node{{Name: "pve1", Online: true, MaxCPU: 8, MaxMem: 64 * GiB}},
		Guests: []Guest{
			{VMID: 100, Node: "pve1", Status: "stopped", Pending: true, CPUs: 2, MaxMem: 2 * GiB, Tags: []string{"qemuscheduler-pending"}},
			{VMID: 101, Node: "pve1", Status: "running", CPUs: 2, MaxMem: 2 * GiB, Tags: []string{"web"}},
			{VMID: 102, Node: "pve1", Status: "stopped", CPUs: 2, MaxMem: 2 * GiB, Tags: []string{"template"}},
		},
		Reservations: []Reservation{res(100), res(101), res(102), res(103), {VMID: 104}},
	}
	n := NodeInfos(&snap)[0]
	var got []string
	for _, g := range n.Guests {
		got = append(got, fmt.Sprintf("%d %v assumed=%v", g.VMID, g.Tags, g.Assumed))
	}
	want := "[100 [web] assumed=false 101 [web] assumed=false 102 [web] assumed=true 103 [web] assumed=true]"
	if fmt.Sprint(got) != want {
		t.Errorf("guests %v\nwant   %s", got, want)
	}
	// 100 and 101 by their own size, 102 and 103 by the reservation's; live figures rise by
	// the guests about to run: the assumed ones and the pending 100, not the running 101.
	if n.AllocCPU != 2+2+4+4 || n.AllocMem != 2*GiB+2*GiB+2*GiB || n.Mem != 2*GiB+2*GiB {
		t.Errorf("AllocCPU %v, AllocMem %v, Mem %v", n.AllocCPU, n.AllocMem, n.Mem)
	}
	if snap.Guests[0].Tags[0] != "qemuscheduler-pending" {
		t.Error("the snapshot's guest was changed")
	}
}

// A guest being migrated counts on its source, where PVE lists it, and on its target, which
// it is about to fill (as PVE's HA manager counts a moving service on both); a check of that
// guest in place leaves it out of both. The target's copy is marked as arriving.
func TestMigratingGuestCountsOnItsTargetToo(t *testing.T) {
	snap := Snapshot{
		Nodes:  testNodes("n1", "n2", "n3"),
		Guests: []Guest{{VMID: 100, Node: "n1", Status: "running", CPUs: 2, MaxMem: 4 * GiB, Lock: "migrate", MigratingTo: "n2"}},
	}
	v := newView(&snap)
	alloc := func() string {
		var out []string
		for _, ni := range v.infos {
			arriving := 0
			for _, g := range ni.Guests {
				if g.Arriving() {
					arriving++
				}
			}
			out = append(out, fmt.Sprintf("%s:%v/%d/%d/%d", ni.Node.Name, ni.AllocCPU, ni.AllocMem/GiB, len(ni.Guests), arriving))
		}
		return fmt.Sprint(out)
	}
	if got, want := alloc(), "[n1:2/4/1/0 n2:2/4/1/1 n3:0/0/0/0]"; got != want {
		t.Fatalf("node vCPUs/GiB/guests/arriving = %s, want %s", got, want)
	}
	restore := v.without(&snap.Guests[0])
	if got, want := alloc(), "[n1:0/0/0/0 n2:0/0/0/0 n3:0/0/0/0]"; got != want {
		t.Errorf("with the guest left out = %s, want %s", got, want)
	}
	restore()
	if got, want := alloc(), "[n1:2/4/1/0 n2:2/4/1/1 n3:0/0/0/0]"; got != want {
		t.Errorf("put back = %s, want %s", got, want)
	}
}

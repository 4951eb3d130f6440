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

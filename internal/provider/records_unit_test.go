package provider

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

const vmConfigReads = "GET /nodes/{node}/qemu/{vmid}/config"

// Only guests carrying the record mark have their config read, each once per process; a
// malformed record warns once; a record in the Notes of an unmarked guest is not looked for.
func TestGuestRecordsReadOnce(t *testing.T) {
	c := equalCluster()
	record := "qemu-scheduler/record: v1\nqemu-scheduler/vm-anti-affinity: tags=cp\n"
	c.Guests = []pvesim.GuestSpec{
		{VMID: 101, Node: "pve1", Name: "cp-1", Status: "running", Config: map[string]string{"tags": "cp;qemuscheduler-record", "description": "notes\n\n" + record}},
		{VMID: 102, Node: "pve2", Name: "bad", Status: "running", Config: map[string]string{"tags": "qemuscheduler-record", "description": "qemu-scheduler/record: v1\nqemu-scheduler/vm-affinity: weight=3\n"}},
		{VMID: 103, Node: "pve3", Name: "plain", Status: "running", Config: map[string]string{"tags": "cp", "description": record}},
	}
	sim := pvesim.NewTestServer(t, c)
	client := simClient(t, sim)
	data := &config.Data{Client: client, Nodes: config.NewNodePolicy(nil, nil), MaxAge: time.Hour}
	data.Records = config.NewGuestRecords(client, data.Nodes.Queue)
	for i := range 3 {
		snap, err := data.SnapshotSince(context.Background(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		byID := map[int]*scheduler.Recorded{}
		for _, g := range snap.Guests {
			byID[g.VMID] = g.Recorded
		}
		if r := byID[101]; r == nil || len(r.Policy.VMAntiAffinity) != 1 || r.Policy.VMAntiAffinity[0].Tags[0] != "cp" {
			t.Fatalf("snapshot %d: cp-1's record = %+v", i, r)
		}
		if byID[102] == nil || byID[103] != nil {
			t.Errorf("snapshot %d: bad's record %+v (want an empty one), plain's %+v (want none: it is not marked)", i, byID[102], byID[103])
		}
		warnings := data.Nodes.Warnings()
		switch {
		case i == 0 && (len(warnings) != 1 || !strings.Contains(warnings[0].Detail(), `VM 102 (bad), placement record line 2`)):
			t.Errorf("first snapshot: warnings %v, want one naming VM 102 and its line", warnings)
		case i > 0 && len(warnings) != 0:
			t.Errorf("snapshot %d warned again: %v", i, warnings)
		}
	}
	if n := sim.Requests(vmConfigReads); n != 2 {
		t.Errorf("%d config reads for 3 snapshots, want 2 (the two marked guests, once each)", n)
	}
	if !data.Records.Readable(101) || !data.Records.Readable(102) || data.Records.Readable(103) {
		t.Errorf("readable: 101 %v, 102 %v, 103 %v; want the two marked guests read, 103 not", data.Records.Readable(101), data.Records.Readable(102), data.Records.Readable(103))
	}
	// A VM this process deleted is forgotten: a guest taking its VMID is read anew.
	data.Records.Forget(101)
	if _, err := data.SnapshotSince(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := sim.Requests(vmConfigReads); n != 3 {
		t.Errorf("%d config reads after forgetting 101, want 3", n)
	}
}

// Without VM.Audit the records are not read: one warning lists the VMs; a guest of an offline
// node is not read (nor warned about) until a view shows its node online.
func TestGuestRecordsForbiddenAndOffline(t *testing.T) {
	c := equalCluster()
	c.Nodes[2].Offline = true
	marked := map[string]string{"tags": "qemuscheduler-record", "description": "qemu-scheduler/record: v1\nqemu-scheduler/vm-anti-affinity: tags=a\n"}
	c.Guests = []pvesim.GuestSpec{
		{VMID: 101, Node: "pve1", Name: "a", Config: marked},
		{VMID: 102, Node: "pve2", Name: "b", Config: marked},
		{VMID: 103, Node: "pve3", Name: "c", Config: marked},
	}
	sim := pvesim.NewTestServer(t, c)
	sim.Forbid(vmConfigReads, "/vms/{vmid}", "VM.Audit")
	client := simClient(t, sim)
	data := &config.Data{Client: client, Nodes: config.NewNodePolicy(nil, nil), MaxAge: time.Hour}
	data.Records = config.NewGuestRecords(client, data.Nodes.Queue)
	if _, err := data.SnapshotSince(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	w := data.Nodes.Warnings()
	if len(w) != 1 || !strings.Contains(w[0].Detail(), "configs of 2 VM(s) carrying the qemuscheduler-record mark (PVE needs VM.Audit on them): 101 (a), 102 (b)") {
		t.Errorf("warnings %v, want one listing 101 and 102", w)
	}
	if n := sim.Requests(vmConfigReads); n != 2 {
		t.Errorf("%d config reads, want 2 (103's node is offline)", n)
	}
	// Unread Notes are not a missing record: a plan must not rewrite what it could not see.
	for _, vmid := range []int{101, 102, 103} {
		if data.Records.Readable(vmid) {
			t.Errorf("VM %d's Notes count as read", vmid)
		}
	}
}

// A guest carrying the record mark whose Notes hold no record (a header written in capitals or
// without its colon) is a warning naming the VM and the header, not a silently ignored policy.
func TestGuestRecordsMarkWithoutRecord(t *testing.T) {
	c := equalCluster()
	c.Guests = []pvesim.GuestSpec{
		{VMID: 101, Node: "pve1", Name: "cp-1", Config: map[string]string{"tags": "cp;qemuscheduler-record",
			"description": "control plane\nQemu-Scheduler/Record: v1\nqemu-scheduler/vm-anti-affinity: tags=cp\n"}},
	}
	sim := pvesim.NewTestServer(t, c)
	client := simClient(t, sim)
	data := &config.Data{Client: client, Nodes: config.NewNodePolicy(nil, nil), MaxAge: time.Hour}
	data.Records = config.NewGuestRecords(client, data.Nodes.Queue)
	snap, err := data.SnapshotSince(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if r := snap.Guests[0].Recorded; r != nil {
		t.Errorf("record %+v, want none", r)
	}
	w := data.Nodes.Warnings()
	if len(w) != 1 || !strings.Contains(w[0].Detail(), `VM 101 (cp-1) carries the qemuscheduler-record mark, but its Notes hold no placement record`) ||
		!strings.Contains(w[0].Detail(), `"qemu-scheduler/record: v1"`) {
		t.Errorf("warnings %v, want one naming VM 101 and the record's first line", w)
	}
}

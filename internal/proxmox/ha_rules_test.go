package proxmox_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

func TestHARules(t *testing.T) {
	c := pvesim.Cluster{
		Nodes:  []pvesim.NodeSpec{{Name: "pve1", CPUs: 4, MemoryGiB: 8}, {Name: "pve2", CPUs: 4, MemoryGiB: 8}},
		Guests: []pvesim.GuestSpec{{VMID: 100, Node: "pve1"}, {VMID: 101, Node: "pve2"}},
		HARules: []pvesim.HARuleSpec{
			{Rule: "pin", Type: "node-affinity", Resources: []string{"vm:100"}, Nodes: []string{"pve2:2", "pve1"}, Strict: true},
			{Rule: "apart", Type: "resource-affinity", Affinity: "negative", Resources: []string{"vm:100", "ct:101"}, Disable: true},
		},
	}
	rules, err := newClient(t, pvesim.NewTestServer(t, c)).HARules(context.Background())
	want := []scheduler.HARule{
		{Name: "pin", Type: "node-affinity", VMIDs: []int{100}, Nodes: []string{"pve1", "pve2"}, Priorities: map[string]int{"pve2": 2}, Strict: true},
		{Name: "apart", Type: "resource-affinity", VMIDs: []int{101, 100}, CTs: []int{101}, Affinity: "negative", Disabled: true},
	}
	if err != nil || !reflect.DeepEqual(rules, want) {
		t.Fatalf("rules %+v, %v\nwant %+v", rules, err, want)
	}
	c.HARules = nil // PVE 8: no such method, no rules
	if rules, err := newClient(t, pvesim.NewTestServer(t, c)).HARules(context.Background()); err != nil || len(rules) != 0 {
		t.Fatalf("PVE 8: rules %v, %v; want none", rules, err)
	}
}

// TestHARuleWrites: create, update with the digest, delete; a write that lost a race is
// ErrHARuleConflict, so the caller reads again.
func TestHARuleWrites(t *testing.T) {
	ctx := context.Background()
	c := pvesim.Cluster{
		Nodes:   []pvesim.NodeSpec{{Name: "pve1", CPUs: 4, MemoryGiB: 8}, {Name: "pve2", CPUs: 4, MemoryGiB: 8}},
		Guests:  []pvesim.GuestSpec{{VMID: 100, Node: "pve1"}, {VMID: 101, Node: "pve2"}},
		HARules: []pvesim.HARuleSpec{},
	}
	client := newClient(t, pvesim.NewTestServer(t, c))
	for _, vmid := range []int{100, 101} {
		if err := client.AddHAResource(ctx, vmid, proxmox.HASettings{State: "started", MaxRestart: -1, MaxRelocate: -1}); err != nil {
			t.Fatal(err)
		}
	}
	apart := scheduler.HARule{Name: "qemuscheduler-apart-web", Type: scheduler.HAResourceAffinity, Affinity: scheduler.HANegative, VMIDs: []int{100, 101}, Comment: "web"}
	if err := client.CreateHARule(ctx, apart); err != nil {
		t.Fatal(err)
	}
	if err := client.CreateHARule(ctx, apart); !errors.Is(err, proxmox.ErrHARuleConflict) {
		t.Fatalf("second create: %v, want a conflict", err)
	}
	set, err := client.ReadHARules(ctx)
	if err != nil || !set.Supported || set.Digest == "" || len(set.Rules) != 1 || set.Rules[0].Comment != "web" {
		t.Fatalf("read %+v, %v", set, err)
	}
	pin := scheduler.HARule{Name: "qemuscheduler-vm-100", Type: scheduler.HANodeAffinity, VMIDs: []int{100}, Nodes: []string{"pve1"}, Strict: true}
	if err := client.CreateHARule(ctx, pin); err != nil {
		t.Fatal(err)
	}
	pin.Nodes, pin.Priorities = []string{"pve1", "pve2"}, map[string]int{"pve1": 3, "pve2": 3} // one class: 100 is in apart
	if err := client.UpdateHARule(ctx, pin, set.Digest); !errors.Is(err, proxmox.ErrHARuleConflict) {
		t.Fatalf("update with a stale digest: %v, want a conflict", err)
	}
	fresh, err := client.ReadHARules(ctx)
	if err == nil {
		err = client.UpdateHARule(ctx, pin, fresh.Digest)
	}
	if err != nil {
		t.Fatal(err)
	}
	rules, err := client.HARules(ctx)
	if err != nil || len(rules) != 2 || !reflect.DeepEqual(rules[1].Nodes, []string{"pve1", "pve2"}) || !rules[1].Strict ||
		!reflect.DeepEqual(rules[1].Priorities, map[string]int{"pve1": 3, "pve2": 3}) {
		t.Fatalf("after the update: %+v, %v", rules, err)
	}
	for i := 0; i < 2; i++ { // a rule already gone is fine
		if err := client.DeleteHARule(ctx, pin.Name); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.UpdateHARule(ctx, pin, fresh.Digest); !errors.Is(err, proxmox.ErrHARuleConflict) {
		t.Fatalf("update of a deleted rule: %v, want a conflict", err)
	}
}

// TestHAMoves: the services the HA manager is moving, with their targets, from one read of
// the manager status; none before HA runs and once the moves are done.
func TestHAMoves(t *testing.T) {
	ctx := context.Background()
	c := pvesim.Cluster{HARules: []pvesim.HARuleSpec{},
		Storages: []pvesim.StorageSpec{{Name: "ceph", Content: []string{"images"}, Shared: true, SizeGiB: 100}}}
	for _, n := range []string{"pve1", "pve2"} {
		c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: n, CPUs: 4, MemoryGiB: 8})
	}
	c.Guests = []pvesim.GuestSpec{{VMID: 100, Node: "pve1", Status: "running"}, {VMID: 101, Node: "pve2", Status: "running"}}
	sim := pvesim.NewTestServer(t, c)
	client := newClient(t, sim)
	if moves, err := client.HAMoves(ctx); err != nil || len(moves) != 0 {
		t.Fatalf("before HA runs: %v, %v", moves, err)
	}
	for _, vmid := range []int{100, 101} {
		if err := client.AddHAResource(ctx, vmid, proxmox.HASettings{State: "started", MaxRestart: -1, MaxRelocate: -1}); err != nil {
			t.Fatal(err)
		}
	}
	sim.HoldTasks()
	if err := sim.SetNodeHAState("pve1", "maintenance"); err != nil {
		t.Fatal(err)
	}
	before := sim.Requests("GET /cluster/ha/status/manager_status")
	moves, err := client.HAMoves(ctx)
	if err != nil || !reflect.DeepEqual(moves, map[int]string{100: "pve2"}) {
		t.Fatalf("during maintenance: %v, %v; want vm 100 moving to pve2", moves, err)
	}
	if n := sim.Requests("GET /cluster/ha/status/manager_status") - before; n != 1 {
		t.Errorf("%d requests, want one", n)
	}
	sim.ReleaseTasks()
	if moves, err := client.HAMoves(ctx); err != nil || len(moves) != 0 {
		t.Fatalf("after the move: %v, %v", moves, err)
	}
}

// A move next to a service in negative affinity is refused by the HA manager, which PVE 9's
// migrate answer says (blocking-resources): an error at once, naming the blocker, instead of
// waiting for a move that never comes.
func TestMigrateHABlocked(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := pvesim.Cluster{HARules: []pvesim.HARuleSpec{}}
	for _, n := range []string{"pve1", "pve2"} {
		c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: n, CPUs: 4, MemoryGiB: 8})
	}
	c.Guests = []pvesim.GuestSpec{{VMID: 100, Node: "pve1", Status: "running"}, {VMID: 101, Node: "pve2", Status: "running"}}
	sim := pvesim.NewTestServer(t, c)
	client := newClient(t, sim)
	for _, vmid := range []int{100, 101} {
		if err := client.AddHAResource(ctx, vmid, proxmox.HASettings{State: "started", MaxRestart: -1, MaxRelocate: -1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.CreateHARule(ctx, scheduler.HARule{Name: "apart", Type: scheduler.HAResourceAffinity, Affinity: scheduler.HANegative, VMIDs: []int{100, 101}}); err != nil {
		t.Fatal(err)
	}
	err := client.MigrateHA(ctx, 100, "pve2")
	if err == nil || !strings.Contains(err.Error(), "migrate VM 100 to pve2 through the HA manager: the HA manager refuses the move, blocked by vm:101 (resource-affinity) (running on or being moved to pve2)") {
		t.Fatalf("move next to a negative peer: %v", err)
	}
	if g := sim.MustGuest(t, 100); g.Node != "pve1" {
		t.Errorf("vm 100 moved to %s", g.Node)
	}
}

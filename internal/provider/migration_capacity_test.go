package provider

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/plugins"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// A VM being migrated is listed on its source until the migration ends (PVE moves the config
// last), yet it will weigh on its target: a VM placed meanwhile must not take the room the
// migrating VM is about to fill. pve1 runs VM 100 (12 GiB), which is migrating to pve2 (empty,
// 16 GiB): a new 12 GiB VM fits neither node once the migration is counted on both, as PVE's
// HA manager counts a moving service on its source and its target (get_used_service_nodes).
func TestCreateDuringAMigrationDoesNotOverfillItsTarget(t *testing.T) {
	sim := pvesim.NewTestServer(t, pvesim.Cluster{
		Nodes:    []pvesim.NodeSpec{{Name: "pve1", CPUs: 8, MemoryGiB: 16}, {Name: "pve2", CPUs: 8, MemoryGiB: 16}},
		Storages: []pvesim.StorageSpec{{Name: "ceph", Type: "rbd", Content: []string{"images"}, Shared: true, SizeGiB: 1000}},
		Guests:   []pvesim.GuestSpec{{VMID: 100, Node: "pve1", Name: "big", Status: "running", Cores: 2, MemoryMiB: 12 * 1024}},
	})
	client := simClient(t, sim)
	sim.HoldTasks("qmigrate")
	migrated := make(chan error, 1)
	go func() { migrated <- client.MigrateVM(context.Background(), "pve1", 100, "pve2", true) }()
	deadline := time.Now().Add(10 * time.Second)
	for sim.MustGuest(t, 100).Lock != "migrate" {
		if time.Now().After(deadline) {
			t.Fatal("the migration of VM 100 did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	data := &providerData{client: client, nodes: newNodePolicy(nil, nil)}
	snap, err := data.snapshotSince(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p, err := plugins.NewProfile(scheduler.PluginConfig{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Schedule(snap, []scheduler.Request{{Name: "db", Cores: 2, Sockets: 1, MemoryMiB: 12 * 1024}}, scheduler.Options{})
	if err == nil {
		t.Errorf("a 12 GiB VM placed on %s while VM 100 (12 GiB) migrates from pve1 to pve2, 16 GiB each: one of them ends overfilled", d.Placements[0].Node)
	} else if !strings.Contains(err.Error(), "0/2 nodes are available: 2 node(s) exceeded memory overcommit ratio 1") {
		t.Errorf("refusal %q, want both nodes over their memory (VM 100 on its source and its target)", err)
	}
	// The look again at the source node after a create (nodeView: its guest list read anew)
	// keeps the migration's target.
	view, err := data.nodeView(context.Background(), "pve1")
	if err != nil {
		t.Fatal(err)
	}
	if d, err := p.Schedule(view, []scheduler.Request{{Name: "db", Cores: 2, Sockets: 1, MemoryMiB: 12 * 1024}}, scheduler.Options{}); err == nil {
		t.Errorf("with pve1's guests read anew, a 12 GiB VM placed on %s while VM 100 migrates to pve2", d.Placements[0].Node)
	}
	sim.ReleaseTasks()
	if err := <-migrated; err != nil {
		t.Fatal(err)
	}
}

package provider

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/plugins"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// heldMigration serves two 16 GiB nodes, pve1 running VM 100 (12 GiB), and starts VM 100's
// migration to pve2, held under way (locked "migrate") until sim.ReleaseTasks; migrated
// gives MigrateVM's answer.
func heldMigration(t *testing.T) (*pvesim.Server, *proxmox.Client, <-chan error) {
	t.Helper()
	sim := pvesim.NewTestServer(t, pvesim.Cluster{
		Nodes:    []pvesim.NodeSpec{{Name: "pve1", CPUs: 8, MemoryGiB: 16}, {Name: "pve2", CPUs: 8, MemoryGiB: 16}},
		Storages: []pvesim.StorageSpec{{Name: "ceph", Type: "rbd", Content: []string{"images"}, Shared: true, SizeGiB: 1000}},
		Guests:   []pvesim.GuestSpec{{VMID: 100, Node: "pve1", Name: "big", Status: "running", Cores: 2, MemoryMiB: 12 * 1024}},
	})
	client := simClient(t, sim)
	sim.HoldTasks("qmigrate")
	migrated := make(chan error, 1)
	go func() { migrated <- client.MigrateVM(context.Background(), "pve1", 100, "pve2", true) }()
	deadline := time.Now().Add(time.Minute) // far beyond any load: only a migration that never starts fails
	for sim.MustGuest(t, 100).Lock != "migrate" {
		if time.Now().After(deadline) {
			t.Fatal("the migration of VM 100 did not start within a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return sim, client, migrated
}

// A VM being migrated is listed on its source until the migration ends (PVE moves the config
// last), yet it will weigh on its target: a VM placed meanwhile must not take the room the
// migrating VM is about to fill. pve1 runs VM 100 (12 GiB), which is migrating to pve2 (empty,
// 16 GiB): a new 12 GiB VM fits neither node once the migration is counted on both, as PVE's
// HA manager counts a moving service on its source and its target (get_used_service_nodes).
func TestCreateDuringAMigrationDoesNotOverfillItsTarget(t *testing.T) {
	sim, client, migrated := heldMigration(t)
	data := &config.Data{Client: client, Nodes: config.NewNodePolicy(nil, nil)}
	snap, err := data.SnapshotSince(context.Background(), time.Now())
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
	view, err := data.NodeView(context.Background(), "pve1")
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

// The shared view saw VM 100 (12 GiB) migrating from pve1 to pve2, and the migration ended
// before the look again at pve1 after a create there (nodeView): pve1's list no longer has
// the VM, which now runs on pve2. The view must count it there, not lose it: with pve2's
// 4 GiB left, a 6 and a 12 GiB VM do not fit together.
func TestNodeViewAfterAMigrationEnded(t *testing.T) {
	sim, client, migrated := heldMigration(t)
	data := &config.Data{Client: client, Nodes: config.NewNodePolicy(nil, nil), MaxAge: time.Hour}
	if snap, err := data.Snapshot(context.Background()); err != nil || !slices.ContainsFunc(snap.Guests, func(g scheduler.Guest) bool { return g.MigratingTo == "pve2" }) {
		t.Fatalf("the shared view does not see VM 100 migrating to pve2 (%v): %+v", err, snap.Guests)
	}
	sim.ReleaseTasks()
	if err := <-migrated; err != nil {
		t.Fatal(err)
	}
	view, err := data.NodeView(context.Background(), "pve1")
	if err != nil {
		t.Fatal(err)
	}
	p, err := plugins.NewProfile(scheduler.PluginConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := p.Schedule(view, []scheduler.Request{{Name: "a", Cores: 1, Sockets: 1, MemoryMiB: 6 * 1024}, {Name: "b", Cores: 1, Sockets: 1, MemoryMiB: 12 * 1024}}, scheduler.Options{}); err == nil {
		t.Errorf("VM 100 (12 GiB) left out of the view once its migration to pve2 ended: 6 and 12 GiB VMs placed on %s and %s", d.Placements[0].Node, d.Placements[1].Node)
	}
}

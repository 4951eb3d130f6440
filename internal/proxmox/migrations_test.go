package proxmox_test

import (
	"context"
	"testing"
)

// PVE lists a VM being migrated on its source, locked "migrate", until the migration's last
// step; the target is named only in the running qmigrate task's log (QemuMigrate.pm phase1's
// "starting migration of VM N to node 'X'"). The snapshot reads it for such a VM, two more
// requests per migrating guest, so that the scheduler counts the VM on its target too.
func TestSnapshotKnowsWhereAMigrationGoes(t *testing.T) {
	s, client := labClient(t)
	s.HoldTasks("qmigrate")
	migrated := make(chan error, 1)
	go func() { migrated <- client.MigrateVM(context.Background(), "pve2", 102, "pve3", true) }()
	waitFor(t, func() bool { return s.MustGuest(t, 102).Lock == "migrate" })
	if _, err := client.Snapshot(context.Background()); err != nil { // the first reads the next-id bounds too
		t.Fatal(err)
	}
	s.ResetRequests()
	snap, err := client.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range snap.Guests {
		want := ""
		if g.VMID == 102 {
			want = "pve3"
		}
		if g.MigratingTo != want {
			t.Errorf("guest %d (%s, lock %q): migrating to %q, want %q", g.VMID, g.Node, g.Lock, g.MigratingTo, want)
		}
	}
	// MigrateVM polls its task's status meanwhile, in its own goroutine: not the snapshot's.
	if n := s.TotalRequests() - s.Requests("GET /nodes/{node}/tasks/{upid}/status"); n != 3 {
		t.Errorf("a snapshot with one migration under way took %d requests, want 3: the resources, the node's running migrations of the VM and the task's log", n)
	}
	s.ReleaseTasks()
	if err := <-migrated; err != nil {
		t.Fatal(err)
	}
	s.ResetRequests()
	if _, err := client.Snapshot(context.Background()); err != nil || s.TotalRequests() != 1 {
		t.Fatalf("snapshot after the migration: %d requests, %v", s.TotalRequests(), err)
	}
}

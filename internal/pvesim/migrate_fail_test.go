package pvesim_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMigrationToAFailingNode: a migration whose target node is or goes down ends in error and
// leaves the guest where it was, as qemu-server does (pve-guest-common AbstractMigrate.pm
// migrate, qemu-server QemuMigrate.pm): the config moves to the target only in the last step
// (phase3_cleanup, move_config_to_node), so the guest stays on and is owned by its source
// node, the cleanup of the failed phase drops the migrate lock and the copies on the target.
// migrate_vm does not check that the target is up, so a target down before the worker runs
// (offline when asked, or failing while the task is held) fails prepare's ssh test, as does
// every stopped guest before phase 2: "migration aborted". A running guest whose target fails
// during the live transfer fails in phase 2 and runs on at the source: "migration problems".
func TestMigrationToAFailingNode(t *testing.T) {
	const aborted = "ERROR: migration aborted (duration 00:00:01): Can't connect to destination address using public key"
	tests := []struct {
		name, from, to string
		vmid           int
		params         url.Values
		// when the target goes down: "asked" before the request, "held" while the task is
		// held before its worker ran, "transfer" while the worker runs (a 500 ms task).
		when       string
		wantExit   string
		wantLog    string
		wantStatus string
	}{
		{"stopped, local disk", "pve3", "pve1", 103, url.Values{"target": {"pve1"}}, "held", "migration aborted", aborted, "stopped"},
		{"running, target down when asked", "pve2", "pve3", 102, url.Values{"target": {"pve3"}, "online": {"1"}}, "asked", "migration aborted", aborted, "running"},
		{"running, target fails before the worker runs", "pve2", "pve3", 102, url.Values{"target": {"pve3"}, "online": {"1"}}, "held", "migration aborted", aborted, "running"},
		{"running, target fails during the transfer", "pve2", "pve3", 102, url.Values{"target": {"pve3"}, "online": {"1"}}, "transfer", "migration problems",
			"ERROR: online migrate failure - aborting", "running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, a := lab(t)
			before := map[string]float64{tt.from: storageUsed(t, a, tt.from, "local-lvm"), tt.to: storageUsed(t, a, tt.to, "local-lvm")}
			fail := func() {
				t.Helper()
				if _, err := s.FailNode(tt.to); err != nil {
					t.Fatal(err)
				}
			}
			switch tt.when {
			case "asked":
				fail()
			case "held":
				s.HoldTasks()
			case "transfer":
				s.SetTaskDuration(500 * time.Millisecond)
			}
			upid := a.ok(a.form(http.MethodPost, "/nodes/"+tt.from+"/qemu/"+strconv.Itoa(tt.vmid)+"/migrate", tt.params)).str()
			if g := s.MustGuest(t, tt.vmid); g.Lock != "migrate" && tt.when != "asked" {
				t.Fatalf("lock %q while the migration runs, want migrate", g.Lock)
			}
			if tt.when != "asked" {
				fail()
			}
			s.ReleaseTasks()
			if exit := a.wait(upid)["exitstatus"]; exit != tt.wantExit {
				t.Errorf("task ended %v, want %q", exit, tt.wantExit)
			}
			if log := a.taskLog(upid); !strings.Contains(log, tt.wantLog) || !strings.HasSuffix(log, "\nTASK ERROR: "+tt.wantExit) {
				t.Errorf("task log %q, want %q and the task error", log, tt.wantLog)
			}
			if g := s.MustGuest(t, tt.vmid); g.Node != tt.from || g.Lock != "" || g.Status != tt.wantStatus {
				t.Errorf("after the failed migration: %s on %s, lock %q; want %s on %s, unlocked", g.Status, g.Node, g.Lock, tt.wantStatus, tt.from)
			}
			// The VM's config is still on the source: it answers there.
			a.ok(a.get("/nodes/" + tt.from + "/qemu/" + strconv.Itoa(tt.vmid) + "/config"))
			if err := s.SetNodeOnline(tt.to, true); err != nil {
				t.Fatal(err)
			}
			for node, used := range before {
				if got := storageUsed(t, a, node, "local-lvm"); got != used {
					t.Errorf("local-lvm on %s holds %v bytes after the failed migration, %v before", node, got, used)
				}
			}
		})
	}
}

// TestHAMigrationToAFailingNode: an HA migration whose target fails fails the LRM's qmigrate;
// the CRM puts the service back to started on its source node (pve-ha-manager Manager.pm
// next_state_migrate_relocate: "migration failed", state started, node unchanged) and does
// not try again, and the recovery of the failed node's own services is not disturbed by the
// move that was heading there.
func TestHAMigrationToAFailingNode(t *testing.T) {
	s, a := haCluster(t, spread()) // HA services 100..103 on pve1..pve4
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources/vm:100/migrate", url.Values{"node": {"pve2"}}))
	s.HoldTasks()
	a.get("/cluster/ha/status/current")
	if row := serviceRow(a, "vm:100"); row["state"] != "migrate" || row["node"] != "pve1" {
		t.Fatalf("vm:100 before the failure: %v, want migrating from pve1", row)
	}
	recovered, err := s.FailNode("pve2")
	if err != nil {
		t.Fatal(err)
	}
	// vm:101 ran on pve2; vm:100 is still owned by pve1 and is not pve2's to recover.
	if len(recovered) != 1 || recovered[101] == "" || recovered[101] == "pve2" {
		t.Errorf("recovered %v, want vm 101 alone, off pve2", recovered)
	}
	s.ReleaseTasks()
	for i := 0; i < 3; i++ {
		a.get("/cluster/ha/status/current")
	}
	wantOn(t, s, 100, "pve1")
	if row := serviceRow(a, "vm:100"); row["state"] != "started" || row["node"] != "pve1" || row["target"] != nil {
		t.Errorf("vm:100 after the failed migration: %v, want started on pve1", row)
	}
	// The request was used up: back online, pve2 does not draw the service.
	if err := s.SetNodeOnline("pve2", true); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		a.get("/cluster/ha/status/current")
	}
	wantOn(t, s, 100, "pve1")
}

// qemu-server's QemuMigrate.pm phase1 logs "starting migration of VM N to node 'X' (IP)"
// before it sets the migrate lock, so a migration under way names its target in its task's log, and
// the node's task list (Tasks.pm node_tasks, source=active) lists the running qmigrate task
// with the VM's id: how a client learns where a VM locked "migrate" is going.
func TestMigrationLogNamesItsTarget(t *testing.T) {
	s, a := lab(t)
	s.HoldTasks("qmigrate")
	upid := a.ok(a.form(http.MethodPost, "/nodes/pve2/qemu/102/migrate", url.Values{"target": {"pve3"}, "online": {"1"}})).str()
	running := a.ok(a.form(http.MethodGet, "/nodes/pve2/tasks", url.Values{"source": {"active"}, "vmid": {"102"}, "typefilter": {"qmigrate"}})).list()
	if len(running) != 1 || running[0]["upid"] != upid {
		t.Fatalf("active qmigrate tasks of VM 102 = %v, want %s", running, upid)
	}
	var lines []string
	for _, row := range a.ok(a.get("/nodes/pve2/tasks/" + url.PathEscape(upid) + "/log")).list() {
		lines = append(lines, row["t"].(string))
	}
	if len(lines) == 0 || !strings.Contains(strings.Join(lines, "\n"), "starting migration of VM 102 to node 'pve3' (10.0.0.13)") {
		t.Errorf("log of the running migration = %q", lines)
	}
	s.ReleaseTasks()
	if exit, _ := a.wait(upid)["exitstatus"].(string); exit != "OK" {
		t.Fatalf("migration: %s", exit)
	}
}

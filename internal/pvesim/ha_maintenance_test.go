package pvesim_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// wantOn asserts where a guest is, that it runs and that no migration holds it.
func wantOn(t *testing.T, s *pvesim.Server, vmid int, node string) {
	t.Helper()
	if g := s.MustGuest(t, vmid); g.Node != node || g.Status != "running" || g.Lock != "" {
		t.Errorf("vm %d %s on %s (lock %q), want running on %s", vmid, g.Status, g.Node, g.Lock, node)
	}
}

func setHAState(t *testing.T, s *pvesim.Server, node, state string) {
	t.Helper()
	if err := s.SetNodeHAState(node, state); err != nil {
		t.Fatal(err)
	}
}

// TestHAMaintenance: a node entering maintenance has its started HA services migrated (a
// qmigrate under lock, online) to the nodes the HA manager picks under the rules, its other
// guests stay; when maintenance ends they return to it.
func TestHAMaintenance(t *testing.T) {
	t.Run("moved off under the rules, back when it ends", func(t *testing.T) {
		// pve1 runs HA services 100 and 101 and the plain VM 105; the other nodes one HA
		// service each, so without rules vm 100 would go to pve2, the first of them.
		s, a := haCluster(t, map[int]string{100: "pve1", 101: "pve1", 102: "pve2", 103: "pve3", 104: "pve4", 105: "pve1"})
		a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:104"}}))
		a.get("/cluster/ha/status/current")
		a.ok(a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "apart", "type", "resource-affinity", "affinity", "negative", "resources", "vm:100,vm:102")))
		a.ok(a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "pin", "type", "node-affinity", "strict", "1", "nodes", "pve1,pve4", "resources", "vm:101")))
		s.HoldTasks()
		setHAState(t, s, "pve1", "maintenance")
		for _, sid := range []string{"vm:100", "vm:101"} {
			if row := serviceRow(a, sid); row["state"] != "migrate" || row["node"] != "pve1" {
				t.Errorf("%s during the migration: %v, want state migrate on pve1", sid, row)
			}
		}
		if g := s.MustGuest(t, 100); g.Lock != "migrate" || g.Status != "running" {
			t.Errorf("vm 100 during the migration: lock %q, %s; want locked migrate, running", g.Lock, g.Status)
		}
		s.ReleaseTasks()
		wantOn(t, s, 100, "pve3") // pve2 runs its negative peer
		wantOn(t, s, 101, "pve4") // its strict rule leaves pve4 only
		wantOn(t, s, 105, "pve1")

		setHAState(t, s, "pve1", "online")
		wantOn(t, s, 100, "pve1")
		wantOn(t, s, 101, "pve1")
		wantOn(t, s, 105, "pve1")
		a.get("/cluster/ha/status/current") // later rounds leave them there
		wantOn(t, s, 100, "pve1")
		if row := serviceRow(a, "vm:100"); row["state"] != "started" {
			t.Errorf("vm:100 back: %v", row)
		}
	})
	t.Run("migrations under way count as load", func(t *testing.T) {
		s, _ := haCluster(t, map[int]string{100: "pve1", 101: "pve1", 102: "pve2", 103: "pve3"})
		s.HoldTasks()
		setHAState(t, s, "pve1", "maintenance")
		s.ReleaseTasks()
		wantOn(t, s, 100, "pve4")
		wantOn(t, s, 101, "pve2") // pve4 got vm 100 while it was still migrating; pve2 comes first of the rest
	})
	t.Run("a positive peer follows", func(t *testing.T) {
		s, a := haCluster(t, map[int]string{100: "pve1", 101: "pve1", 102: "pve2", 103: "pve3"})
		a.ok(a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "together", "type", "resource-affinity", "affinity", "positive", "resources", "vm:100,vm:101")))
		setHAState(t, s, "pve1", "maintenance")
		wantOn(t, s, 100, "pve4")
		wantOn(t, s, 101, "pve4")
	})
	t.Run("no allowed node: it stays, and moves once one is allowed", func(t *testing.T) {
		s, a := haCluster(t, map[int]string{100: "pve1", 101: "pve2", 102: "pve3", 103: "pve4"})
		a.ok(a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "apart", "type", "resource-affinity", "affinity", "negative", "resources", "vm:100,vm:101,vm:102,vm:103")))
		setHAState(t, s, "pve1", "maintenance")
		if row := serviceRow(a, "vm:100"); row["state"] != "started" || row["node"] != "pve1" {
			t.Errorf("vm:100 %v, want started on pve1", row)
		}
		wantOn(t, s, 100, "pve1")
		// The CRM tries every round: without the rule, the next round moves it.
		a.ok(a.form(http.MethodDelete, "/cluster/ha/rules/apart", nil))
		a.get("/cluster/ha/status/current")
		if g := s.MustGuest(t, 100); g.Node == "pve1" {
			t.Errorf("vm 100 still on pve1 after the rule is gone")
		}
	})
	t.Run("no return while the rules forbid it, nor with failback off", func(t *testing.T) {
		s, a := haCluster(t, map[int]string{100: "pve1", 101: "pve1", 102: "pve3", 103: "pve3"})
		a.ok(a.form(http.MethodPut, "/cluster/ha/resources/vm:101", url.Values{"failback": {"0"}}))
		setHAState(t, s, "pve1", "maintenance")
		wantOn(t, s, 100, "pve2")
		wantOn(t, s, 101, "pve4")
		a.ok(a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "pin", "type", "node-affinity", "strict", "1", "nodes", "pve2", "resources", "vm:100")))
		setHAState(t, s, "pve1", "online")
		wantOn(t, s, 100, "pve2")
		wantOn(t, s, 101, "pve4")
		// It remembers its maintenance node: once the rule is gone, the next round takes it back.
		a.ok(a.form(http.MethodDelete, "/cluster/ha/rules/pin", nil))
		a.get("/cluster/ha/status/current")
		wantOn(t, s, 100, "pve1")
		wantOn(t, s, 101, "pve4")
	})
	t.Run("stopped services stay", func(t *testing.T) {
		s, a := haCluster(t, map[int]string{100: "pve1"})
		a.ok(a.form(http.MethodPut, "/cluster/ha/resources/vm:100", url.Values{"state": {"stopped"}}))
		a.get("/cluster/ha/status/current")
		a.get("/cluster/ha/status/current")
		setHAState(t, s, "pve1", "maintenance")
		if g := s.MustGuest(t, 100); g.Node != "pve1" || g.Status != "stopped" {
			t.Errorf("stopped vm 100 %s on %s, want stopped on pve1", g.Status, g.Node)
		}
	})
}

// TestHAManagerServiceStatus: the manager status lists each service the CRM knows with its
// node and CRM state, and a move under way with its target (what the HA manager counts the
// service on besides its node); a stopped one is stopped, an ignored one is not listed.
func TestHAManagerServiceStatus(t *testing.T) {
	s, a := haCluster(t, map[int]string{100: "pve1", 101: "pve2", 102: "pve3", 103: "pve4"})
	a.ok(a.form(http.MethodPut, "/cluster/ha/resources/vm:102", url.Values{"state": {"stopped"}}))
	a.ok(a.form(http.MethodPut, "/cluster/ha/resources/vm:103", url.Values{"state": {"ignored"}}))
	a.get("/cluster/ha/status/current")
	a.get("/cluster/ha/status/current")
	s.HoldTasks()
	setHAState(t, s, "pve1", "maintenance")
	services := func() map[string]any {
		ms, _ := a.ok(a.get("/cluster/ha/status/manager_status")).obj()["manager_status"].(map[string]any)
		out, _ := ms["service_status"].(map[string]any)
		return out
	}
	during := services()
	mig, _ := during["vm:100"].(map[string]any)
	if mig["state"] != "migrate" || mig["node"] != "pve1" || mig["target"] == nil || mig["target"] == "pve1" || mig["uid"] == "" {
		t.Errorf("vm:100 leaving pve1 for maintenance: %v, want state migrate on pve1 with a target", mig)
	}
	if st, _ := during["vm:101"].(map[string]any); st["state"] != "started" || st["node"] != "pve2" || st["target"] != nil {
		t.Errorf("vm:101: %v, want started on pve2 without a target", st)
	}
	if st, _ := during["vm:102"].(map[string]any); st["state"] != "stopped" {
		t.Errorf("vm:102: %v, want stopped", st)
	}
	if _, listed := during["vm:103"]; listed {
		t.Errorf("the ignored vm:103 is listed: %v", during)
	}
	s.ReleaseTasks()
	target, _ := mig["target"].(string)
	wantOn(t, s, 100, target)
	if st, _ := services()["vm:100"].(map[string]any); st["state"] != "started" || st["target"] != nil || st["maintenance_node"] != "pve1" {
		t.Errorf("vm:100 after the move: %v, want started, no target, maintenance node pve1", st)
	}
}

// pve-ha-manager Manager.pm update_crm_commands: `enable-node-maintenance NODE` takes effect
// only on a node the HA manager sees online; for a node in any other state (offline: unknown,
// fence) the CRM logs "crm command error - node not online" and drops the command, so the node
// keeps its state and its services stay as they are. The admin endpoint says so instead of
// putting an offline node into maintenance; a node already in maintenance stays in it.
func TestMaintenanceOfAnOfflineNodeIsIgnored(t *testing.T) {
	s, a := haCluster(t, map[int]string{100: "pve1", 101: "pve2"})
	if _, err := s.FailNode("pve2"); err != nil {
		t.Fatal(err)
	}
	recovered := s.MustGuest(t, 101).Node
	r := adminCall(a, http.MethodPost, "/pvesim/nodes/pve2/maintenance", url.Values{"enable": {"1"}})
	if r.code != http.StatusBadRequest || !strings.Contains(r.status, "crm command error - node not online: enable-node-maintenance pve2") {
		t.Errorf("maintenance of the offline pve2: %s %s", r.status, r.body)
	}
	if err := s.SetNodeHAState("pve2", "maintenance"); err == nil || !strings.Contains(err.Error(), "node not online") {
		t.Errorf("SetNodeHAState(pve2, maintenance) while pve2 is offline: %v", err)
	}
	if got := a.row("node/pve2")["hastate"]; got != "unknown" {
		t.Errorf("pve2's hastate after the refused maintenance = %v, want unknown", got)
	}
	if err := s.SetNodeOnline("pve2", true); err != nil {
		t.Fatal(err)
	}
	a.ok(adminCall(a, http.MethodPost, "/pvesim/nodes/pve2/maintenance", url.Values{"enable": {"1"}}))
	a.ok(adminCall(a, http.MethodPost, "/pvesim/nodes/pve2/maintenance", url.Values{"enable": {"1"}})) // already in it: a no-op
	if got := a.row("node/pve2")["hastate"]; got != "maintenance" {
		t.Errorf("pve2's hastate online = %v, want maintenance", got)
	}
	wantOn(t, s, 101, recovered)
}

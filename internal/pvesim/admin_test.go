package pvesim_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// adminCall sends params form-encoded to the admin endpoint (outside /api2/json).
func adminCall(a *api, method, path string, params url.Values) reply {
	a.t.Helper()
	req, err := http.NewRequest(method, a.s.URL()+path, strings.NewReader(params.Encode()))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return a.do(req)
}

// The admin endpoint acts on the running simulator: HA maintenance on and off, a node's own
// load, a node failing (its HA services recovered elsewhere by the HA manager) and coming
// back; the PVE API shows each change at once, and the guests stay.
func TestAdminEndpoint(t *testing.T) {
	s, a := lab(t)
	before := len(s.Guests())

	on := a.ok(adminCall(a, http.MethodPost, "/pvesim/nodes/pve3/maintenance", url.Values{"enable": {"1"}})).obj()
	if on["hastate"] != "maintenance" || a.row("node/pve3")["hastate"] != "maintenance" {
		t.Errorf("maintenance on: %v, row %v", on, a.row("node/pve3"))
	}
	a.ok(adminCall(a, http.MethodPost, "/pvesim/nodes/pve3/maintenance", url.Values{"enable": {"0"}}))
	if got := a.row("node/pve3")["hastate"]; got != "online" {
		t.Errorf("maintenance off: hastate %v", got)
	}

	cpu := a.row("node/pve5")["cpu"].(float64)
	a.ok(adminCall(a, http.MethodPut, "/pvesim/nodes/pve5/load", url.Values{"cpu_load": {"0.9"}}))
	if got := a.row("node/pve5")["cpu"].(float64); got != 0.9 || cpu == 0.9 {
		t.Errorf("cpu after setting the load to 0.9: %v (was %v)", got, cpu)
	}
	a.ok(adminCall(a, http.MethodPut, "/pvesim/nodes/pve5/load", url.Values{"mem_used_gib": {"32"}}))
	if row := a.row("node/pve5"); row["mem"] != 32.0*(1<<30) || row["cpu"] != 0.9 {
		t.Errorf("after setting memory only: %v", row)
	}
	if r := adminCall(a, http.MethodPut, "/pvesim/nodes/pve5/load", url.Values{"cpu_load": {"2"}}); r.code != http.StatusBadRequest {
		t.Errorf("cpu_load 2: %s", r.status)
	}

	// VM 102 on pve2 (ceph) as an HA resource, picked up by the next CRM round (any GET).
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:102"}, "state": {"started"}}))
	a.get("/cluster/ha/status/current")
	// Maintenance migrates it away and, when it ends, back.
	drained := a.ok(adminCall(a, http.MethodPost, "/pvesim/nodes/pve2/maintenance", url.Values{"enable": {"1"}})).obj()
	away, _ := drained["migrating"].(map[string]any)
	if g := s.MustGuest(t, 102); away["102"] == nil || g.Node != away["102"] {
		t.Errorf("maintenance of pve2: %v; VM 102 on %s", drained, g.Node)
	}
	returned := a.ok(adminCall(a, http.MethodPost, "/pvesim/nodes/pve2/maintenance", url.Values{"enable": {"0"}})).obj()
	if back, _ := returned["migrating"].(map[string]any); back["102"] != "pve2" || s.MustGuest(t, 102).Node != "pve2" {
		t.Errorf("end of maintenance of pve2: %v", returned)
	}
	failed := a.ok(adminCall(a, http.MethodPost, "/pvesim/nodes/pve2/fail", nil)).obj()
	moved, _ := failed["recovered"].(map[string]any)
	if failed["online"] != 0.0 || moved["102"] == nil || moved["102"] == "pve2" {
		t.Fatalf("fail pve2: %v", failed)
	}
	if g := s.MustGuest(t, 102); g.Node != moved["102"] || a.row("node/pve2")["status"] != "offline" {
		t.Errorf("VM 102 on %s, recovered to %v; pve2 %v", g.Node, moved["102"], a.row("node/pve2")["status"])
	}
	back := a.ok(adminCall(a, http.MethodPost, "/pvesim/nodes/pve2/recover", nil)).obj()
	if back["online"] != 1.0 || a.row("node/pve2")["status"] != "online" {
		t.Errorf("recover pve2: %v", back)
	}
	if after := len(s.Guests()); after != before {
		t.Errorf("%d guests after the admin actions, want %d", after, before)
	}

	if r := adminCall(a, http.MethodPost, "/pvesim/nodes/pve9/fail", nil); r.code != http.StatusBadRequest {
		t.Errorf("fail of an unknown node: %s", r.status)
	}
	if r := adminCall(a, http.MethodPost, "/pvesim/nodes/pve2/reboot", nil); r.code != http.StatusNotFound {
		t.Errorf("unknown action: %s", r.status)
	}
	a.header.Set("Authorization", "PVEAPIToken=root@pam!sim=wrong")
	if r := adminCall(a, http.MethodPost, "/pvesim/nodes/pve2/fail", nil); r.code != http.StatusUnauthorized {
		t.Errorf("wrong token: %s", r.status)
	}
}

// The admin endpoint sets the datacenter's crs, a guest's live load, and runs HA rounds: with
// the dynamic scheduler and auto-rebalance, a node made busy by its guests' load has its HA
// services migrated away one at a time, each after the hold duration (two rounds here) and a
// round for the previous move to be seen done, and the answer names the moves. PVE 8's schema
// refuses the dynamic scheduler.
func TestAdminCRS(t *testing.T) {
	_, a8 := lab(t)
	if r := adminCall(a8, http.MethodPut, "/pvesim/crs", url.Values{"crs": {"ha=dynamic"}}); r.code != http.StatusBadRequest ||
		!strings.Contains(string(r.body), "value 'dynamic' does not have a value in the enumeration 'basic, static'") {
		t.Errorf("PVE 8, crs ha=dynamic: %s %s", r.status, r.body)
	}
	s := pvesim.NewTestServer(t, pvesim.LoadTestCluster(t, "../../examples/lab/cluster.yaml"))
	a := newAPI(t, s)
	for _, sid := range []string{"vm:100", "vm:101"} {
		a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {sid}}))
	}
	// ci-runner (16 vCPUs) and db-1 (8) busy on pve1.
	a.ok(adminCall(a, http.MethodPut, "/pvesim/guests/101/load", url.Values{"cpu_cores": {"16"}, "mem_used_gib": {"16"}}))
	guest := a.ok(adminCall(a, http.MethodPut, "/pvesim/guests/100/load", url.Values{"cpu_cores": {"8"}})).obj()
	if guest["node"] != "pve1" || guest["cpu_cores"] != 8.0 {
		t.Errorf("guest load answer: %v", guest)
	}
	crs := a.ok(adminCall(a, http.MethodPut, "/pvesim/crs", url.Values{"crs": {"ha=dynamic,ha-auto-rebalance=1,ha-auto-rebalance-hold-duration=2"}})).obj()
	if crs["scheduler"] != "dynamic" || crs["crs"] != "ha=dynamic,ha-auto-rebalance=1,ha-auto-rebalance-hold-duration=2" || crs["imbalance"].(float64) <= 0.3 {
		t.Errorf("crs answer: %v, want the dynamic scheduler seeing an imbalance above 30%%", crs)
	}
	ran := a.ok(adminCall(a, http.MethodPost, "/pvesim/ha/rounds", url.Values{"rounds": {"5"}})).obj()
	moves, _ := ran["rebalanced"].([]any)
	if len(moves) != 2 || !strings.HasPrefix(moves[0].(string), "vm:100 pve1 -> ") || !strings.HasPrefix(moves[1].(string), "vm:101 pve1 -> ") {
		t.Errorf("5 rounds: %v, want vm:100, then vm:101 migrated off pve1", ran)
	}
	if s.MustGuest(t, 100).Node == "pve1" || s.MustGuest(t, 101).Node == "pve1" {
		t.Errorf("a busy service still on pve1 after %v", moves)
	}
	for _, tc := range []struct {
		path   string
		params url.Values
		want   string
	}{
		{"/pvesim/crs", url.Values{"crs": {"ha=busy"}}, "value 'busy' does not have a value in the enumeration 'basic, static, dynamic'"},
		{"/pvesim/crs", url.Values{}, "give crs"},
		{"/pvesim/ha/rounds", url.Values{"rounds": {"0"}}, "give rounds, the number of HA rounds to run (1-10000)"},
		{"/pvesim/guests/101/load", url.Values{"cpu_cores": {"17"}}, "cpu_cores 17 is above guest 101's 16 vCPUs"},
		{"/pvesim/guests/999/load", url.Values{"cpu_cores": {"1"}}, "no guest 999"},
	} {
		method := http.MethodPut
		if strings.HasSuffix(tc.path, "rounds") {
			method = http.MethodPost
		}
		if r := adminCall(a, method, tc.path, tc.params); r.code != http.StatusBadRequest || !strings.Contains(string(r.body), tc.want) {
			t.Errorf("%s %v: %s %s, want 400 with %q", tc.path, tc.params, r.status, r.body, tc.want)
		}
	}
}

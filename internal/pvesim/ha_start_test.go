package pvesim_test

import (
	"net/http"
	"net/url"
	"testing"
)

// crmRounds lets the HA manager run a few rounds (each status read is one) and its tasks end.
func crmRounds(a *api) {
	for i := 0; i < 6; i++ {
		a.get("/cluster/ha/status/current")
	}
}

// haStartFailing makes VM 102 (running on pve2, 16 CPUs; disk on shared ceph) need 24 vCPUs
// at its next start, and puts it under HA, stopped, with opts.
func haStartFailing(t *testing.T, a *api, opts url.Values) {
	t.Helper()
	a.ok(a.form(http.MethodPut, "/nodes/pve2/qemu/102/config", url.Values{"cores": {"24"}})) // pending while it runs
	opts.Set("sid", "vm:102")
	opts.Set("state", "stopped")
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", opts))
	crmRounds(a)
	a.ok(a.form(http.MethodPut, "/cluster/ha/resources/vm:102", url.Values{"state": {"started"}}))
	crmRounds(a)
}

// The HA stack's start of a service fails as vm_start fails (here: more vCPUs than the node
// has, "MAX 16 vcpus allowed per VM on this node"). The LRM retries max_restart times on the
// node (LRM.pm handle_service_exitcode), then the CRM relocates the service to a node where
// it has not failed, max_relocate times (Manager.pm next_state_started, select_service_node
// 'try-next'), and then puts it into the error state, which refuses every request but
// disabling it (Resources.pm check_service_state) and which disabling leaves
// (next_state_error). Both policies default to 1.
func TestHAStartFailureRelocates(t *testing.T) {
	s, a := lab(t) // PVE 8
	haStartFailing(t, a, url.Values{})
	// Relocated to pve1, the only node with 24 CPUs or more.
	if g := s.MustGuest(t, 102); g.Node != "pve1" || g.Status != "running" {
		t.Fatalf("vm:102 %s on %s, want running on pve1 after its failed start on pve2", g.Status, g.Node)
	}
	if row := serviceRow(a, "vm:102"); row["crm_state"] != "started" {
		t.Errorf("service row %v", row)
	}

	// A node failure: every other node has 16 CPUs. The recovery's start fails on the first
	// node (pve2: the candidates carry no HA load, so cluster order), the service is moved to
	// the next (pve3) and fails there too: error state.
	if _, err := s.FailNode("pve1"); err != nil {
		t.Fatal(err)
	}
	crmRounds(a)
	g := s.MustGuest(t, 102)
	if row := serviceRow(a, "vm:102"); row["crm_state"] != "error" || row["state"] != "error" || g.Status != "stopped" || g.Node != "pve3" {
		t.Fatalf("after recovery: vm:102 %s on %s, service %v; want stopped on pve3 in the error state", g.Status, g.Node, row)
	}
}

func TestHAStartFailureErrorState(t *testing.T) {
	s, a := lab(t)
	// A restricted group of two 16-CPU nodes: one relocation, then the error state.
	a.ok(a.form(http.MethodPost, "/cluster/ha/groups", url.Values{"group": {"small"}, "nodes": {"pve2,pve3"}, "restricted": {"1"}}))
	haStartFailing(t, a, url.Values{"group": {"small"}})
	g := s.MustGuest(t, 102)
	if row := serviceRow(a, "vm:102"); row["crm_state"] != "error" || g.Node != "pve3" || g.Status != "stopped" {
		t.Fatalf("vm:102 %s on %s, service %v; want stopped on pve3 (relocated once) in the error state", g.Status, g.Node, row)
	}
	wantError(t, a.form(http.MethodPut, "/cluster/ha/resources/vm:102", url.Values{"state": {"started"}}), 500,
		"service 'vm:102' in error state, must be disabled and fixed first")
	wantError(t, a.form(http.MethodPut, "/cluster/ha/resources/vm:102", url.Values{"comment": {"x"}}), 500,
		"service 'vm:102' in error state, must be disabled and fixed first")
	wantError(t, a.form(http.MethodPost, "/cluster/ha/resources/vm:102/migrate", url.Values{"node": {"pve2"}}), 500,
		"service 'vm:102' in error state, must be disabled and fixed first")
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve3/qemu/102/status/start", nil)); exit != "command 'ha-manager set vm:102 --state started' failed: exit code 255" {
		t.Errorf("hastart of an errored service: %s", exit)
	}
	if r := a.row("qemu/102"); r["hastate"] != "error" {
		t.Errorf("/cluster/resources hastate %v", r["hastate"])
	}

	// Disabled, it leaves the error state; fixed, it starts.
	a.ok(a.form(http.MethodPut, "/cluster/ha/resources/vm:102", url.Values{"state": {"disabled"}}))
	if row := serviceRow(a, "vm:102"); row["state"] != "clearing error flag" {
		t.Errorf("disabled, before the CRM's round: %v", row)
	}
	crmRounds(a)
	if row := serviceRow(a, "vm:102"); row["crm_state"] != "stopped" || row["request_state"] != "disabled" || row["state"] != "disabled" {
		t.Fatalf("disabled: %v; want crm_state stopped, request_state and state disabled", row)
	}
	a.ok(a.form(http.MethodPut, "/nodes/pve3/qemu/102/config", url.Values{"cores": {"8"}}))
	a.ok(a.form(http.MethodPut, "/cluster/ha/resources/vm:102", url.Values{"state": {"started"}}))
	crmRounds(a)
	if g := s.MustGuest(t, 102); g.Status != "running" || g.Node != "pve3" {
		t.Errorf("fixed and started: %s on %s", g.Status, g.Node)
	}
}

// max_relocate 0: the first failed start puts the service into the error state where it is.
func TestHAStartFailureNoRelocation(t *testing.T) {
	s, a := lab(t)
	haStartFailing(t, a, url.Values{"max_relocate": {"0"}})
	if g, row := s.MustGuest(t, 102), serviceRow(a, "vm:102"); row["crm_state"] != "error" || g.Node != "pve2" || g.Status != "stopped" {
		t.Errorf("vm:102 %s on %s, service %v; want stopped on pve2 in the error state", g.Status, g.Node, row)
	}
}

// A cicustom snippet on a node's local storage is missing on the others: recovered there, the
// service's start fails when the cloud-init drive is generated (qemu-server Cloudinit.pm,
// "can't find file"), and after its relocation fails alike it is in the error state.
func TestHARecoveryWithoutTheSnippet(t *testing.T) {
	s, a := lab(t)
	if err := s.PutSnippet("pve2", "local", "pve2-only.yaml", 100); err != nil {
		t.Fatal(err)
	}
	path := "/nodes/pve2/qemu/102"
	a.ok(a.form(http.MethodPut, path+"/config", url.Values{"ide2": {"ceph:cloudinit"}, "cicustom": {"vendor=local:snippets/pve2-only.yaml"}}))
	a.task(a.form(http.MethodPost, path+"/status/stop", nil))
	if exit := a.task(a.form(http.MethodPost, path+"/status/start", nil)); exit != "OK" {
		t.Fatalf("start on pve2, where the snippet is: %s", exit)
	}
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:102"}}))
	crmRounds(a)
	if _, err := s.FailNode("pve2"); err != nil {
		t.Fatal(err)
	}
	crmRounds(a)
	g := s.MustGuest(t, 102)
	if row := serviceRow(a, "vm:102"); row["crm_state"] != "error" || g.Status != "stopped" || g.Node == "pve2" {
		t.Fatalf("vm:102 %s on %s, service %v; want stopped off pve2 in the error state", g.Status, g.Node, row)
	}
	a.ok(a.form(http.MethodDelete, "/cluster/ha/resources/vm:102", nil))
	if exit := a.task(a.form(http.MethodPost, "/nodes/"+g.Node+"/qemu/102/status/start", nil)); exit != "can't find file 'local:snippets/pve2-only.yaml'" {
		t.Errorf("start away from the snippet: %s", exit)
	}
}

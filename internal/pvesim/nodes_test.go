package pvesim_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

func nodeFactsCluster(t *testing.T) (*pvesim.Server, *api) {
	return simOf(t, `
nodes:
  - {name: pve1, cpus: 8, memory_gib: 32, arch: x86_64, notes: "rack 4\nqemu-scheduler/labels: zone=a"}
  - {name: pve2, cpus: 8, memory_gib: 32, hastate: maintenance}
  - {name: pve3, cpus: 8, memory_gib: 32, offline: true, notes: gone}
`)
}

func TestNodeRowsHAStateAndArch(t *testing.T) {
	s, a := nodeFactsCluster(t)
	want := map[string]string{"node/pve1": "online", "node/pve2": "maintenance", "node/pve3": "unknown"}
	for id, state := range want {
		if got := a.row(id)["hastate"]; got != state {
			t.Errorf("%s hastate = %v, want %s", id, got, state)
		}
	}
	if got := a.row("node/pve1")["host-arch"]; got != "x86_64" {
		t.Errorf("pve1 host-arch = %v, want x86_64", got)
	}
	if _, has := a.row("node/pve2")["host-arch"]; has {
		t.Error("pve2 has host-arch although the cluster file gives none")
	}
	for _, n := range a.ok(a.get("/nodes")).list() {
		if _, has := n["hastate"]; has {
			t.Errorf("/nodes row %v carries hastate; only /cluster/resources does", n["node"])
		}
	}

	if err := s.SetNodeHAState("pve2", "online"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetNodeHAState("pve1", "fence"); err != nil {
		t.Fatal(err)
	}
	if a.row("node/pve2")["hastate"] != "online" || a.row("node/pve1")["hastate"] != "fence" {
		t.Errorf("after switching: pve1 %v, pve2 %v", a.row("node/pve1")["hastate"], a.row("node/pve2")["hastate"])
	}
	if err := s.SetNodeHAState("pve1", "drained"); err == nil || !strings.Contains(err.Error(), "maintenance") {
		t.Errorf("bad state: %v", err)
	}
	if err := s.SetNodeHAState("pve9", "online"); err == nil {
		t.Error("unknown node accepted")
	}
}

// Without HA, node rows have no hastate and manager_status is empty; switching one node to
// maintenance makes HA run, as the CLI's node-maintenance does.
func TestHAManagerStatus(t *testing.T) {
	s, a := lab(t)
	if _, has := a.row("node/pve1")["hastate"]; has {
		t.Error("hastate present although HA never ran")
	}
	st := a.ok(a.get("/cluster/ha/status/manager_status")).obj()
	if ms, _ := st["manager_status"].(map[string]any); len(ms) != 0 {
		t.Errorf("manager_status before HA = %v, want {}", ms)
	}
	if _, has := st["lrm_status"]; has {
		t.Error("lrm_status before HA ran")
	}
	if err := s.SetNodeHAState("pve2", "maintenance"); err != nil {
		t.Fatal(err)
	}
	st = a.ok(a.get("/cluster/ha/status/manager_status")).obj()
	ms := st["manager_status"].(map[string]any)
	ns := ms["node_status"].(map[string]any)
	if ns["pve1"] != "online" || ns["pve2"] != "maintenance" || ns["pve4"] != "unknown" {
		t.Errorf("node_status = %v", ns)
	}
	if req := ms["node_request"].(map[string]any); req["pve2"] == nil || req["pve1"] != nil {
		t.Errorf("node_request = %v, want pve2 only", req)
	}
	lrm := st["lrm_status"].(map[string]any)["pve2"].(map[string]any)
	if lrm["mode"] != "maintenance" || lrm["state"] != "maintenance" {
		t.Errorf("lrm_status pve2 = %v", lrm)
	}
	if ms["master_node"] != "pve1" {
		t.Errorf("master_node = %v", ms["master_node"])
	}
	if a.row("node/pve2")["hastate"] != "maintenance" || a.row("node/pve3")["hastate"] != "online" {
		t.Error("node rows do not follow manager_status")
	}
}

func TestNodeConfigNotes(t *testing.T) {
	s, a := nodeFactsCluster(t)
	cfg := a.ok(a.get("/nodes/pve1/config")).obj()
	if cfg["description"] != "rack 4\nqemu-scheduler/labels: zone=a\n" {
		t.Errorf("description = %q", cfg["description"])
	}
	digest, _ := cfg["digest"].(string)
	if len(digest) != 40 {
		t.Errorf("digest = %q", digest)
	}
	only := a.ok(a.form(http.MethodGet, "/nodes/pve1/config", url.Values{"property": {"description"}})).obj()
	if _, has := only["digest"]; has || only["description"] == nil {
		t.Errorf("?property=description = %v, want the description without digest", only)
	}
	if empty := a.ok(a.get("/nodes/pve2/config")).obj(); len(empty) != 0 {
		t.Errorf("node without config = %v, want {}", empty)
	}
	if r := a.get("/nodes/pve3/config"); r.code != 595 || len(r.body) != 0 {
		t.Errorf("offline node: %s %q", r.status, r.body)
	}
	if r := a.get("/nodes/pve9/config"); r.code != 500 || !strings.Contains(r.status, "hostname lookup 'pve9' failed") {
		t.Errorf("unknown node: %s", r.status)
	}
	if r := a.form(http.MethodGet, "/nodes/pve1/config", url.Values{"property": {"labels"}}); r.code != 400 || !strings.Contains(r.env.Errors["property"], "enumeration") {
		t.Errorf("bad property: %s %v", r.status, r.env.Errors)
	}

	// PUT with a stale digest fails; with the current one it writes, normalising as PVE reads
	// back (trailing blank lines dropped, one newline at the end).
	if r := a.form(http.MethodPut, "/nodes/pve1/config", url.Values{"description": {"x"}, "digest": {strings.Repeat("0", 40)}}); r.code != 500 || !strings.Contains(r.status, "detected modified configuration") {
		t.Errorf("stale digest: %s", r.status)
	}
	a.ok(a.form(http.MethodPut, "/nodes/pve1/config", url.Values{"description": {"a: b\n\nqemu-scheduler/taints: gpu:NoSchedule\n\n"}, "digest": {digest}}))
	cfg = a.ok(a.get("/nodes/pve1/config")).obj()
	if cfg["description"] != "a: b\n\nqemu-scheduler/taints: gpu:NoSchedule\n" || cfg["digest"] == digest {
		t.Errorf("after PUT: %v", cfg)
	}
	a.ok(a.form(http.MethodPut, "/nodes/pve1/config", url.Values{"delete": {"description"}, "startall-onboot-delay": {"10"}}))
	cfg = a.ok(a.get("/nodes/pve1/config")).obj()
	if _, has := cfg["description"]; has || cfg["startall-onboot-delay"] != float64(10) {
		t.Errorf("after delete: %v", cfg)
	}
	r := a.form(http.MethodPut, "/nodes/pve1/config", url.Values{"labels": {"x"}, "wakeonlan": {"nope"}, "ballooning-target": {"101"},
		"description": {strings.Repeat("x", 64*1024+1)}})
	if r.code != 400 || len(r.env.Errors) != 4 {
		t.Errorf("bad PUT: %s %v", r.status, r.env.Errors)
	}
	if r := a.form(http.MethodPut, "/nodes/pve3/config", url.Values{"description": {"x"}}); r.code != 595 {
		t.Errorf("PUT on offline node: %s", r.status)
	}

	s.Forbid("GET /nodes/{node}/config", "/", "Sys.Audit")
	for range 2 {
		if r := a.get("/nodes/pve1/config"); r.code != http.StatusForbidden || !strings.Contains(r.status, "Permission check failed (/, Sys.Audit)") {
			t.Errorf("forbidden: %s", r.status)
		}
	}
	if got := s.Requests("GET /nodes/{node}/config"); got != 10 {
		t.Errorf("counted %d node config reads, want 10", got)
	}
}

func TestParseClusterNodeFacts(t *testing.T) {
	_, err := pvesim.ParseCluster([]byte("nodes: [{name: pve1, cpus: 4, memory_gib: 8, hastate: drained}]\n"))
	if err == nil || !strings.Contains(err.Error(), `node "pve1" has hastate "drained"; use one of online, maintenance`) {
		t.Errorf("bad hastate: %v", err)
	}
	_, err = pvesim.ParseCluster([]byte("nodes: [{name: pve1, cpus: 4, memory_gib: 8, notes: " + strings.Repeat("x", 64*1024+1) + "}]\n"))
	if err == nil || !strings.Contains(err.Error(), "PVE allows 65536") {
		t.Errorf("long notes: %v", err)
	}
}

package pvesim_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

func TestFailRequests(t *testing.T) {
	s, a := lab(t)
	s.FailRequests("GET /nodes/{node}/qemu", 2, http.StatusServiceUnavailable, "Service Unavailable")
	s.FailRequests("POST /nodes/{node}/qemu", 1, http.StatusInternalServerError, "unable to create VM 150 - got timeout")
	want := []string{"503 Service Unavailable", "503 Service Unavailable", "200 OK"}
	for i, w := range want {
		if r := a.get("/nodes/pve1/qemu"); r.status != w {
			t.Errorf("request %d: %s, want %s", i+1, r.status, w)
		}
	}
	if r := a.get("/nodes/pve1/storage"); r.code != http.StatusOK {
		t.Errorf("a fault on one endpoint hit another: %s", r.status)
	}
	if r := a.form(http.MethodPost, "/nodes/pve1/qemu", url.Values{"vmid": {"150"}}); r.status != "500 unable to create VM 150 - got timeout" {
		t.Errorf("injected create failure: %s", r.status)
	}
	if _, exists := s.Guest(150); exists {
		t.Error("a failed request took effect")
	}
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve1/qemu", url.Values{"vmid": {"150"}})); exit != "OK" {
		t.Errorf("the fault outlived its count: %s", exit)
	}
}

func TestFailRate(t *testing.T) {
	for _, tt := range []struct {
		rate     float64
		min, max int
	}{{1, 100, 100}, {0.3, 15, 45}} {
		s, a := lab(t)
		s.FailRate("GET /cluster/resources", tt.rate, http.StatusServiceUnavailable, "Service Unavailable")
		failed := 0
		for range 100 {
			if a.get("/cluster/resources").code == http.StatusServiceUnavailable {
				failed++
			}
		}
		if failed < tt.min || failed > tt.max {
			t.Errorf("rate %v: %d of 100 failed, want %d..%d", tt.rate, failed, tt.min, tt.max)
		}
		if a.get("/cluster/nextid").code != http.StatusOK {
			t.Errorf("rate %v: another endpoint failed", tt.rate)
		}
	}
}

// A lost response: PVE acted, the client never heard.
func TestLoseResponses(t *testing.T) {
	s, a := lab(t)
	s.LoseResponses("POST /nodes/{node}/qemu", 1)
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/api2/json/nodes/pve1/qemu", strings.NewReader("vmid=150&name=lost"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "PVEAPIToken="+s.APIToken())
	if res, err := a.client.Do(req); err == nil {
		res.Body.Close()
		t.Fatalf("the response arrived: %s", res.Status)
	}
	if g, exists := s.Guest(150); !exists || g.Config["name"] != "lost" {
		t.Fatal("the request whose response was lost did not take effect")
	}
}

func TestFailNextTask(t *testing.T) {
	s, a := lab(t)
	s.FailNextTask("qmstart", "start failed: QEMU exited with code 1")
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve3/qemu/103/status/start", nil)); exit != "start failed: QEMU exited with code 1" {
		t.Fatalf("exit %q", exit)
	}
	if g := s.MustGuest(t, 103); g.Status != "stopped" {
		t.Fatalf("a failed start changed the VM: %s", g.Status)
	}
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve3/qemu/103/status/start", nil)); exit != "OK" {
		t.Fatalf("the second start: %q", exit)
	}
	// A failing migration releases its lock.
	s.FailNextTask("qmigrate", "migration aborted")
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve2/qemu/102/migrate", url.Values{"target": {"pve3"}, "online": {"1"}})); exit != "migration aborted" {
		t.Fatalf("exit %q", exit)
	}
	if g := s.MustGuest(t, 102); g.Node != "pve2" || g.Lock != "" {
		t.Fatalf("after a failed migration: node %s lock %q", g.Node, g.Lock)
	}
}

func TestNodeOffline(t *testing.T) {
	s, a := lab(t)
	if err := s.SetNodeOnline("pve2", false); err != nil {
		t.Fatal(err)
	}
	if r := a.get("/nodes/pve2/qemu/102/config"); r.code != 595 || len(r.body) != 0 {
		t.Fatalf("offline node: %s %q", r.status, r.body)
	}
	node := a.row("node/pve2")
	if node["status"] != "offline" || node["mem"] != nil || node["cpu"] != nil || node["maxmem"] == nil {
		t.Errorf("offline node row %v: want status offline, capacity and no live figures", node)
	}
	if vm := a.row("qemu/102"); vm["status"] != "unknown" {
		t.Errorf("guest on an offline node: %v", vm)
	}
	for _, row := range a.ok(a.get("/cluster/status")).list() {
		if row["name"] == "pve2" && row["online"] != 0.0 {
			t.Errorf("cluster status row %v", row)
		}
	}
	if err := s.SetNodeOnline("pve2", true); err != nil {
		t.Fatal(err)
	}
	a.ok(a.get("/nodes/pve2/qemu/102/config"))
	if err := s.SetNodeOnline("pve9", false); err == nil {
		t.Error("SetNodeOnline accepted an unknown node")
	}
}

func TestOutsideActors(t *testing.T) {
	s, a := lab(t)
	// A running create holds its id: the VM is listed locked, an outside actor cannot take
	// the id, and the lock ends with the task.
	s.HoldTasks()
	upid := a.ok(a.form(http.MethodPost, "/nodes/pve2/qemu", url.Values{"vmid": {"150"}, "name": {"mine"}})).str()
	if st := a.ok(a.get("/nodes/pve2/tasks/" + upid + "/status")).obj(); st["status"] != "running" || st["exitstatus"] != nil {
		t.Fatalf("held task status %v", st)
	}
	s.TakeVMID(150)
	if g := s.MustGuest(t, 150); g.Lock != "create" || g.Config["name"] != "mine" {
		t.Fatalf("guest 150 during its create: %+v", g)
	}
	if r := a.get("/cluster/nextid?vmid=150"); r.code != http.StatusBadRequest {
		t.Fatalf("an id being created is free for nextid: %s", r.status)
	}
	if row := a.row("qemu/150"); row["lock"] != "create" {
		t.Fatalf("/cluster/resources row of a VM being created: %v", row)
	}
	s.ReleaseTasks()
	if exit := a.wait(upid)["exitstatus"]; exit != "OK" {
		t.Fatalf("exit %q", exit)
	}
	if g := s.MustGuest(t, 150); g.Lock != "" || g.Config["name"] != "mine" {
		t.Fatalf("guest 150 after its create: %+v", g)
	}
	// A failed create leaves nothing behind.
	s.FailNextTask("qmcreate", "unable to create VM 151 - storage full")
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve2/qemu", url.Values{"vmid": {"151"}, "scsi0": {"local-lvm:4"}})); exit != "unable to create VM 151 - storage full" {
		t.Fatalf("exit %q", exit)
	}
	if _, exists := s.Guest(151); exists {
		t.Fatal("a failed create left VM 151")
	}

	// HA moves a VM: it answers on its new node only.
	if err := s.SetGuestNode(102, "pve3"); err != nil {
		t.Fatal(err)
	}
	a.ok(a.get("/nodes/pve3/qemu/102/config"))
	if r := a.get("/nodes/pve2/qemu/102/config"); r.code != http.StatusInternalServerError {
		t.Fatalf("the old node still serves the VM: %s", r.status)
	}
	for _, err := range []error{s.SetGuestNode(999, "pve1"), s.SetGuestNode(102, "pve9")} {
		if err == nil {
			t.Error("SetGuestNode accepted an unknown guest or node")
		}
	}

	s.DeleteGuest(102)
	if _, exists := s.Guest(102); exists {
		t.Fatal("DeleteGuest left the guest")
	}
}

// A clone holds its source's config lock: changes to the source wait, and time out.
func TestCloneHoldsSource(t *testing.T) {
	s, a := lab(t)
	s.HoldTasks()
	r := a.form(http.MethodPost, "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"300"}})
	a.ok(r)
	if r := a.form(http.MethodPost, "/nodes/pve1/qemu/9000/config", url.Values{"description": {"x"}}); r.status != "500 can't lock file '/var/lock/qemu-server/lock-9000.conf' - got timeout" {
		t.Fatalf("config write during a clone: %s", r.status)
	}
	a.ok(a.form(http.MethodPost, "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"301"}}))
	s.ReleaseTasks()
	for _, id := range []int{300, 301} {
		if _, exists := s.Guest(id); !exists {
			t.Errorf("parallel clone %d missing", id)
		}
	}
	a.task(a.form(http.MethodPost, "/nodes/pve1/qemu/9000/config", url.Values{"description": {"x"}}))
}

func TestLatencyAndRequestCounts(t *testing.T) {
	s, a := lab(t)
	a.get("/nodes/pve1/qemu/100/config")
	a.get("/nodes/pve2/qemu/102/config")
	a.get("/nodes/pve2/tasks/UPID:pve2:00000001:00000007:00000000:qmstart:102:root@pam:/status")
	a.get("/nodes/pve1/nope")
	counts := map[string]int{
		"GET /nodes/{node}/qemu/{vmid}/config":  2,
		"GET /nodes/{node}/tasks/{upid}/status": 1,
		"GET /cluster/resources":                0,
	}
	for endpoint, want := range counts {
		if got := s.Requests(endpoint); got != want {
			t.Errorf("Requests(%q) = %d, want %d", endpoint, got, want)
		}
	}
	if s.TotalRequests() != 4 {
		t.Errorf("TotalRequests = %d, want 4 (unknown paths count too)", s.TotalRequests())
	}
	s.ResetRequests()
	if s.TotalRequests() != 0 {
		t.Error("ResetRequests kept counts")
	}

	s.SetLatency(30 * time.Millisecond)
	start := time.Now()
	a.get("/version")
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Errorf("a request took %v with 30ms latency", took)
	}
}

// Faults on the polls of one task type leave other tasks' polls alone and the task running;
// a replaced answer hides a create that happened.
func TestTaskPollFaultsAndReplacedAnswers(t *testing.T) {
	s, a := lab(t, pvesim.WithTaskDuration(20*time.Millisecond))
	s.FailTaskPolls("qmcreate", 1, 2, 595, "No route to host")
	upid := a.ok(a.form(http.MethodPost, "/nodes/pve2/qemu", url.Values{"vmid": {"150"}})).str()
	start := a.ok(a.form(http.MethodPost, "/nodes/pve3/qemu/103/status/stop", nil)).str()
	a.ok(a.get("/nodes/pve3/tasks/" + start + "/status"))
	a.ok(a.get("/nodes/pve2/tasks/" + upid + "/status"))
	for range 2 {
		if r := a.get("/nodes/pve2/tasks/" + upid + "/status"); r.code != 595 || len(r.body) != 0 {
			t.Fatalf("failing poll: %s %q", r.status, r.body)
		}
	}
	if exit := a.wait(upid)["exitstatus"]; exit != "OK" {
		t.Fatalf("the create under failing polls ended %v", exit)
	}

	s.ReplaceResponses("POST /nodes/{node}/qemu", 1, 500, "Internal Server Error")
	if r := a.form(http.MethodPost, "/nodes/pve2/qemu", url.Values{"vmid": {"151"}, "name": {"hidden"}}); r.code != 500 {
		t.Fatalf("replaced answer: %s", r.status)
	}
	if g, ok := s.Guest(151); !ok || g.Config["name"] != "hidden" {
		t.Fatalf("the create behind a replaced answer did not happen: %+v", g)
	}
}

// MoveBefore moves an HA-managed guest just before the next request about it, not before a
// request about another guest; a guest the HA manager does not manage is refused.
func TestMoveBefore(t *testing.T) {
	s, a := lab(t)
	const config = "POST /nodes/{node}/qemu/{vmid}/config"
	if err := s.MoveBefore(config, 102, "pve3"); err == nil {
		t.Fatal("moved a guest that is no HA resource")
	}
	if r := a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:102"}}); r.code != http.StatusOK {
		t.Fatalf("add HA resource: %s", r.status)
	}
	a.get("/cluster/ha/status/current") // a CRM round picks it up
	if err := s.MoveBefore(config, 102, "pve3"); err != nil {
		t.Fatal(err)
	}
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve3/qemu/103/config", url.Values{"description": {"x"}})); exit != "OK" {
		t.Fatalf("write to another guest: %s", exit)
	}
	if g := s.MustGuest(t, 102); g.Node != "pve2" {
		t.Fatalf("a request about another guest moved 102 to %s", g.Node)
	}
	if r := a.form(http.MethodPost, "/nodes/pve2/qemu/102/config", url.Values{"description": {"x"}}); r.status != "500 Configuration file 'nodes/pve2/qemu-server/102.conf' does not exist" {
		t.Errorf("write after the move: %s", r.status)
	}
	if g := s.MustGuest(t, 102); g.Node != "pve3" || g.Lock != "" {
		t.Errorf("after the move: on %s, lock %q", g.Node, g.Lock)
	}
}

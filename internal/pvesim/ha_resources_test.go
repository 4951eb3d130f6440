package pvesim_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// serviceRow is the status/current row of sid, nil when it is not listed.
func serviceRow(a *api, sid string) map[string]any {
	for _, row := range a.ok(a.get("/cluster/ha/status/current")).list() {
		if row["sid"] == sid {
			return row
		}
	}
	return nil
}

// TestHAResourceLifecycle registers VM 102 (on shared storage) as an HA resource and checks
// PVE's behaviour: queued until the CRM picks it up, a migrate before that dropped, power
// and migrate calls answered with hastart/hastop/hamigrate tasks that end before anything
// moves, and delete refused without purge.
func TestHAResourceLifecycle(t *testing.T) {
	s, a := lab(t)
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:102"}, "state": {"started"}, "max_restart": {"2"}, "comment": {"web"}}))
	if r := a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"102"}}); r.status != "500 create resource failed: resource ID 'vm:102' already defined" {
		t.Errorf("second create: %s", r.status)
	}
	rows := a.ok(a.get("/cluster/ha/resources")).list()
	if len(rows) != 1 || rows[0]["sid"] != "vm:102" || rows[0]["state"] != "started" || rows[0]["max_restart"] != 2.0 || rows[0]["comment"] != "web" {
		t.Fatalf("resources %v", rows)
	}
	// That GET was a CRM round: the resource is picked up only now, so a migrate sent right
	// after creation would have been dropped. Check with a fresh resource.
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:100"}, "state": {"ignored"}}))
	if row := serviceRow(a, "vm:102"); row["crm_state"] != "started" || row["node"] != "pve2" {
		t.Fatalf("vm:102 row %v", row)
	}

	// Stop through the HA manager: the task ends at once, the VM stops two rounds later.
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve2/qemu/102/status/stop", nil)); exit != "OK" {
		t.Fatalf("hastop: %s", exit)
	}
	g := s.MustGuest(t, 102)
	if g.Status != "running" {
		t.Fatalf("VM stopped with the task; PVE's hastop only asks the HA manager")
	}
	for i := 0; i < 3; i++ {
		a.get("/cluster/ha/status/current")
	}
	if g = s.MustGuest(t, 102); g.Status != "stopped" {
		t.Fatalf("VM still %s after the HA manager ran", g.Status)
	}
	if res := a.ok(a.get("/cluster/ha/resources/vm:102")).obj(); res["state"] != "stopped" {
		t.Errorf("hastop left the requested state %v", res["state"])
	}

	// Migrate through the qemu API: a hamigrate task, the VM moves afterwards.
	upid := a.ok(a.form(http.MethodPost, "/nodes/pve2/qemu/102/migrate", url.Values{"target": {"pve3"}})).str()
	if !strings.Contains(upid, ":hamigrate:102:") {
		t.Fatalf("migrate of an HA VM started %s, want a hamigrate task", upid)
	}
	a.wait(upid)
	for i := 0; i < 3; i++ {
		a.get("/cluster/ha/status/current")
	}
	if g = s.MustGuest(t, 102); g.Node != "pve3" {
		t.Fatalf("VM on %s after hamigrate, want pve3", g.Node)
	}

	// A resource the CRM has not picked up drops a migrate.
	a.ok(a.form(http.MethodPut, "/cluster/ha/resources/vm:100", url.Values{"state": {"started"}}))
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:103"}}))
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources/vm:103/migrate", url.Values{"node": {"pve2"}}))
	for i := 0; i < 3; i++ {
		a.get("/cluster/ha/status/current")
	}
	if g = s.MustGuest(t, 103); g.Node != "pve3" {
		t.Errorf("a migrate sent before the CRM knew vm:103 moved it to %s", g.Node)
	}
	if g.Status != "running" {
		t.Errorf("vm:103 (state started by default) is %s after the CRM ran", g.Status)
	}

	// Delete: refused without purge, and purge removes the HA resource with the VM.
	a.get("/cluster/ha/status/current")
	if r := a.form(http.MethodDelete, "/nodes/pve3/qemu/102", nil); r.status != "500 unable to remove VM 102 - used in HA resources and purge parameter not set." {
		t.Fatalf("delete without purge: %s", r.status)
	}
	if exit := a.task(a.form(http.MethodDelete, "/nodes/pve3/qemu/102", url.Values{"purge": {"1"}})); exit != "OK" {
		t.Fatalf("delete: %s", exit)
	}
	if r := a.get("/cluster/ha/resources/vm:102"); r.status != "500 no such resource 'vm:102'" {
		t.Errorf("HA resource after purge: %s", r.status)
	}
	if r := a.form(http.MethodDelete, "/cluster/ha/resources/vm:102", nil); r.status != "500 cannot delete service 'vm:102', not HA managed!" {
		t.Errorf("deleting a missing resource: %s", r.status)
	}
}

// TestHAFailOver recovers HA-managed VMs as the HA manager does after a node failure, and
// refuses the recoveries PVE could not make.
func TestHAFailOver(t *testing.T) {
	s, a := lab(t)
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:102"}}))
	if err := s.FailOver(102, "pve3"); err == nil {
		t.Error("a resource the CRM has not picked up was recovered")
	}
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:103"}, "state": {"stopped"}}))
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:101"}, "state": {"ignored"}}))
	a.get("/cluster/ha/status/current") // a CRM round: both picked up
	for _, c := range []struct {
		vmid   int
		target string
	}{{100, "pve2"}, {101, "pve2"}, {102, "pve2"}, {102, "pve4"}, {102, "pve9"}, {999, "pve2"}} {
		if err := s.FailOver(c.vmid, c.target); err == nil {
			t.Errorf("VM %d recovered on %s", c.vmid, c.target)
		}
	}
	if g := s.MustGuest(t, 102); g.Node != "pve2" || g.Status != "running" {
		t.Fatalf("a refused recovery changed VM 102: %s on %s", g.Status, g.Node)
	}
	if err := s.FailOver(102, "pve3"); err != nil {
		t.Fatal(err)
	}
	if g := s.MustGuest(t, 102); g.Node != "pve3" || g.Status != "running" {
		t.Errorf("VM 102 %s on %s after its recovery, want running on pve3", g.Status, g.Node)
	}
	if r := a.get("/nodes/pve2/qemu/102/config"); r.code != 595 {
		t.Errorf("the failed node still answers: %s", r.status)
	}
	a.ok(a.get("/nodes/pve3/qemu/102/config"))
	if row := serviceRow(a, "vm:102"); row["node"] != "pve3" || row["crm_state"] != "started" {
		t.Errorf("vm:102 after its recovery: %v", row)
	}
	// Back online, the node does not get the VM back: no failback.
	if err := s.SetNodeOnline("pve2", true); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		a.get("/cluster/ha/status/current")
	}
	if g := s.MustGuest(t, 102); g.Node != "pve3" {
		t.Errorf("VM 102 went back to %s", g.Node)
	}
	// A resource requested stopped is recovered stopped.
	a.ok(a.form(http.MethodPut, "/cluster/ha/resources/vm:102", url.Values{"state": {"stopped"}}))
	for i := 0; i < 3; i++ {
		a.get("/cluster/ha/status/current")
	}
	if err := s.FailOver(102, "pve2"); err != nil {
		t.Fatal(err)
	}
	if g := s.MustGuest(t, 102); g.Node != "pve2" || g.Status != "stopped" {
		t.Errorf("stopped VM 102 %s on %s after its recovery, want stopped on pve2", g.Status, g.Node)
	}
}

func TestHAResourceRefusals(t *testing.T) {
	_, a := lab(t)
	tests := []struct {
		params url.Values
		want   string
	}{
		{url.Values{"sid": {"vm:999"}}, "500 resource 'vm:999' does not exist in cluster"},
		{url.Values{"sid": {"vm:200"}}, "500 resource 'vm:200' - guest with ID 200 is not a VM"},
		// PVE 8's wording (the lab is PVE 8), typo included.
		{url.Values{"sid": {"999"}}, "500 unable do detect SID from VMID - VM/CT 999 does not exist"},
		{url.Values{"sid": {"vm100"}}, "500 unable to parse service id 'vm100'"},
		{url.Values{"sid": {"vm:100"}, "state": {"on"}}, "400 Parameter verification failed."},
		{url.Values{"sid": {"vm:100"}, "max_restart": {"-1"}}, "400 Parameter verification failed."},
		{url.Values{"sid": {"vm:100"}, "node": {"pve1"}}, "400 Parameter verification failed."},
	}
	for _, tt := range tests {
		if r := a.form(http.MethodPost, "/cluster/ha/resources", tt.params); r.status != tt.want {
			t.Errorf("%v: %s, want %s", tt.params, r.status, tt.want)
		}
	}
	if r := a.form(http.MethodPost, "/cluster/ha/resources/vm:100/migrate", url.Values{"node": {"pve2"}}); r.status != "500 resource 'vm:100' is not HA managed" {
		t.Errorf("migrate of an unmanaged VM: %s", r.status)
	}
}

// TestAgentNetworkInterfaces follows the agent from a stopped VM to its answer: one address
// per NIC, the static one from ipconfig, a generated one for DHCP.
func TestAgentNetworkInterfaces(t *testing.T) {
	s, a := lab(t)
	path := "/nodes/pve3/qemu/103/agent/network-get-interfaces"
	if r := a.get(path); r.status != "500 VM 103 is not running" {
		t.Fatalf("stopped VM: %s", r.status)
	}
	a.ok(a.form(http.MethodPut, "/nodes/pve3/qemu/103/config", url.Values{
		"net0": {"virtio=BC:24:11:00:00:01,bridge=vmbr0"}, "net1": {"virtio=BC:24:11:00:00:02,bridge=vmbr0"},
		"ipconfig0": {"ip=192.0.2.10/24,gw=192.0.2.1"}, "ipconfig1": {"ip=dhcp"},
	}))
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve3/qemu/103/status/start", nil)); exit != "OK" {
		t.Fatalf("start: %s", exit)
	}
	if r := a.get(path); r.status != "500 No QEMU guest agent configured" {
		t.Fatalf("without agent: %s", r.status)
	}
	a.ok(a.form(http.MethodPut, "/nodes/pve3/qemu/103/config", url.Values{"agent": {"1"}}))
	a.task(a.form(http.MethodPost, "/nodes/pve3/qemu/103/status/reboot", nil))
	if r := a.get(path); r.status != "500 QEMU guest agent is not running" {
		t.Fatalf("first call after start: %s", r.status)
	}
	res := a.ok(a.get(path)).obj()["result"].([]any)
	want := map[string][]string{"lo": {"127.0.0.1", "::1"}, "eth0": {"192.0.2.10", "fe80::be24:11ff:fe00:1"}, "eth1": {"10.11.0.103", "fe80::be24:11ff:fe00:2"}}
	if len(res) != 3 {
		t.Fatalf("interfaces %v", res)
	}
	for _, it := range res {
		iface := it.(map[string]any)
		var got []string
		for _, addr := range iface["ip-addresses"].([]any) {
			got = append(got, addr.(map[string]any)["ip-address"].(string))
		}
		if strings.Join(got, " ") != strings.Join(want[iface["name"].(string)], " ") {
			t.Errorf("%s: addresses %v, want %v", iface["name"], got, want[iface["name"].(string)])
		}
	}
	s.BreakAgent(103)
	if r := a.get(path); r.status != "500 QEMU guest agent is not running" {
		t.Errorf("broken agent: %s", r.status)
	}
}

// failback came with PVE 9's HA rules (pve-ha-manager 5.0, Resources.pm, default on): PVE 8's
// schema does not know it; PVE 9 stores and lists it when set.
func TestHAResourceFailback(t *testing.T) {
	_, a := lab(t) // PVE 8
	wantError(t, a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:102"}, "failback": {"0"}}), 400,
		"property is not defined in schema")
	_, a = haCluster(t, spread()) // PVE 9
	if row := a.ok(a.get("/cluster/ha/resources/vm:100")).obj(); row["failback"] != nil {
		t.Errorf("failback listed while unset (default on): %v", row)
	}
	a.ok(a.form(http.MethodPut, "/cluster/ha/resources/vm:100", url.Values{"failback": {"0"}}))
	if row := a.ok(a.get("/cluster/ha/resources/vm:100")).obj(); row["failback"] != 0.0 {
		t.Errorf("failback after setting it off: %v", row)
	}
}

// The LRM migrates an HA service with migrate_vm and with-local-disks (pve-ha-manager
// Resources/PVEVM.pm migrate): a VM's disks on local storage move to the same storage on the
// target; a target without that storage fails the migration (check_storage_availability) and
// the service stays where it runs.
func TestHAMigrationMovesLocalDisks(t *testing.T) {
	c, err := pvesim.ParseCluster([]byte(`
nodes:
  - {name: pve1, cpus: 8, memory_gib: 32}
  - {name: pve2, cpus: 8, memory_gib: 32}
  - {name: pve3, cpus: 8, memory_gib: 32}
storages:
  - {name: local-lvm, type: lvmthin, content: [images], nodes: [pve1, pve2], size_gib: 100}
guests:
  - {vmid: 100, node: pve1, status: running, cores: 2, memory_mib: 2048, config: {scsi0: "local-lvm:vm-100-disk-0,size=10G"}}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := pvesim.NewTestServer(t, c)
	a := newAPI(t, s)
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:100"}}))
	a.get("/cluster/ha/status/current") // picked up
	for _, target := range []string{"pve3", "pve2"} {
		if exit := a.task(a.form(http.MethodPost, "/nodes/pve1/qemu/100/migrate", url.Values{"target": {target}, "online": {"1"}})); exit != "OK" {
			t.Fatalf("hamigrate to %s: %s", target, exit)
		}
		for i := 0; i < 4; i++ {
			a.get("/cluster/ha/status/current")
		}
	}
	// pve3 has no local-lvm: that move failed and the service stayed; pve2 took the disk.
	if g := s.MustGuest(t, 100); g.Node != "pve2" || g.Status != "running" {
		t.Fatalf("vm:100 %s on %s, want running on pve2", g.Status, g.Node)
	}
	if used1, used2 := storageUsed(t, a, "pve1", "local-lvm"), storageUsed(t, a, "pve2", "local-lvm"); used1 != 0 || used2 != 10*(1<<30) {
		t.Errorf("local-lvm used: pve1 %v, pve2 %v; want the 10 GiB disk on pve2 only", used1, used2)
	}
}

// The HA manager does not look at storage: it recovers a VM whose disk is on local storage
// (VM 100, local-lvm on pve1) to another node, where the start fails on the missing volume
// (LvmThinPlugin activate_lv: "no such logical volume"); the relocation's migration fails too
// (QemuMigrate phase 1: "can't migrate local disk"), the start is retried and the service ends
// in the error state (Manager.pm next_state_started). Maintenance, on a live node, migrates it
// with its disk (PVEVM.pm migrate: with-local-disks).
func TestHALocalDisks(t *testing.T) {
	s, a := lab(t)
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:100"}}))
	crmRounds(a)
	used := map[string]float64{}
	for _, n := range []string{"pve1", "pve2", "pve3", "pve5"} {
		used[n] = storageUsed(t, a, n, "local-lvm")
	}
	if err := s.SetNodeHAState("pve1", "maintenance"); err != nil {
		t.Fatal(err)
	}
	crmRounds(a)
	g := s.MustGuest(t, 100)
	const disk = 200 << 30 // scsi0's size
	if g.Node == "pve1" || g.Status != "running" {
		t.Fatalf("after maintenance: %s on %s; want running elsewhere", g.Status, g.Node)
	}
	if now1, nowTo := storageUsed(t, a, "pve1", "local-lvm"), storageUsed(t, a, g.Node, "local-lvm"); now1 != used["pve1"]-disk || nowTo != used[g.Node]+disk {
		t.Errorf("local-lvm used after maintenance: pve1 %v (was %v), %s %v (was %v); want the disk moved", now1, used["pve1"], g.Node, nowTo, used[g.Node])
	}
	if err := s.SetNodeHAState("pve1", "online"); err != nil {
		t.Fatal(err)
	}
	crmRounds(a) // back to pve1, disk and all
	if g := s.MustGuest(t, 100); g.Node != "pve1" || g.Status != "running" {
		t.Fatalf("after maintenance ended: %s on %s, want running on pve1", g.Status, g.Node)
	}

	recovered, err := s.FailNode("pve1")
	if err != nil {
		t.Fatal(err)
	}
	crmRounds(a)
	g = s.MustGuest(t, 100)
	if row := serviceRow(a, "vm:100"); g.Node != recovered[100] || g.Node == "pve1" || g.Status != "stopped" || row["crm_state"] != "error" {
		t.Fatalf("after the failure of pve1: %s on %s (recovered on %q), service %v; want stopped in the error state where it was recovered",
			g.Status, g.Node, recovered[100], row)
	}
	exit := a.task(a.form(http.MethodPost, "/nodes/"+g.Node+"/qemu/100/status/start", url.Values{}))
	if exit != "command 'ha-manager set vm:100 --state started' failed: exit code 255" {
		t.Errorf("start of the errored service: %s", exit)
	}
	a.ok(a.form(http.MethodDelete, "/cluster/ha/resources/vm:100", nil))
	if exit := a.task(a.form(http.MethodPost, "/nodes/"+g.Node+"/qemu/100/status/start", nil)); exit != "no such logical volume local-lvm/vm-100-disk-0" {
		t.Errorf("start away from its disk: %s", exit)
	}
}

// /cluster/resources gives an HA guest the CRM's state of its service once the manager status
// lists it, else the state resources.cfg requests, nothing when that sets none (pve-manager
// API2/Cluster.pm resources); status/current shows the verbose state (starting) as state and
// the CRM's as crm_state (pve-ha-manager API2/HA/Status.pm).
func TestHAStateOfGuestRows(t *testing.T) {
	_, a := lab(t)
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:103"}})) // stopped VM, no state set
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:102"}, "state": {"stopped"}}))
	// Each read is followed by a CRM round: the first picks both up, the next acts.
	hastates := func() (any, any) {
		rows := map[any]any{}
		for _, r := range a.ok(a.get("/cluster/resources?type=vm")).list() {
			rows[r["vmid"]] = r["hastate"]
		}
		return rows[103.0], rows[102.0]
	}
	if s103, s102 := hastates(); s103 != nil || s102 != "stopped" {
		t.Errorf("before the CRM knows them: 103 %v, 102 %v; want none and the requested stopped", s103, s102)
	}
	if s103, s102 := hastates(); s103 != "started" || s102 != "request_stop" {
		t.Errorf("picked up: 103 %v, 102 %v; want started and request_stop", s103, s102)
	}
	if row := serviceRow(a, "vm:103"); row["state"] != "starting" || row["crm_state"] != "started" {
		t.Errorf("status/current of vm:103: %v", row)
	}
}

// A stop of a running HA VM, as PVE shows it (pve-ha-manager): until the CRM has seen the
// request its service is still started and status/current shows the verbose "stopping"
// (Tools.pm get_verbose_service_state); once next_state_started has taken it the service is
// request_stop, which status/current shows as is, until the LRM has stopped the VM. The guest's
// status/current ha.state is the CRM's state (HA/Config.pm get_service_status, which
// qemu-server's vm_status returns), not the verbose one.
func TestHAStopShowsRequestStop(t *testing.T) {
	s, a := lab(t)
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:102"}}))
	a.get("/cluster/ha/resources") // a CRM round: picked up, started
	guestHA := func() any { return a.ok(a.get("/nodes/pve2/qemu/102/status/current")).obj()["ha"] }
	if ha := guestHA(); fmt.Sprint(ha) != "map[managed:1 state:started]" {
		t.Fatalf("guest ha of the started service: %v", ha)
	}
	a.ok(a.form(http.MethodPut, "/cluster/ha/resources/vm:102", url.Values{"state": {"stopped"}}))
	// Each GET is answered, then a CRM round runs.
	if row := serviceRow(a, "vm:102"); row["state"] != "stopping" || row["crm_state"] != "started" {
		t.Errorf("stop requested, not seen: %v, want state stopping, crm_state started", row)
	}
	if row := serviceRow(a, "vm:102"); row["state"] != "request_stop" || row["crm_state"] != "request_stop" {
		t.Errorf("stop taken by the CRM: %v, want state and crm_state request_stop", row)
	}
	if g := s.MustGuest(t, 102); g.Status != "stopped" {
		t.Fatalf("VM %s after the LRM's round", g.Status)
	}
	if row := serviceRow(a, "vm:102"); row["state"] != "stopped" || row["crm_state"] != "stopped" {
		t.Errorf("stopped: %v", row)
	}
}

// A service added requested stopped while its VM runs is request_stop from the CRM's first
// round (Manager.pm adds it so), in both status/current and the guest's ha.state; before that
// the guest's ha.state is null, the manager status not listing it.
func TestHAServiceAddedStoppedIsRequestStop(t *testing.T) {
	_, a := lab(t)
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:102"}, "state": {"stopped"}}))
	st := a.ok(a.get("/nodes/pve2/qemu/102/status/current")).obj()
	if ha, ok := st["ha"].(map[string]any); !ok || ha["managed"] != 1.0 || ha["state"] != nil {
		t.Errorf("guest ha before the CRM picked the service up: %v, want managed 1 and state null", st["ha"])
	}
	if row := serviceRow(a, "vm:102"); row["state"] != "request_stop" || row["crm_state"] != "request_stop" {
		t.Errorf("picked up: %v, want request_stop", row)
	}
}

// A start of a stopped HA service, as PVE shows it (pve-ha-manager): until the CRM has seen
// the request its state stays stopped (Manager.pm next_state_stopped moves it to request_start
// and on to started in the round that sees it), in status/current's crm_state and the guest's
// ha.state (HA/Config.pm get_service_status); the verbose state is starting either way
// (Tools.pm get_verbose_service_state: stopped with started requested, or started and not
// running), until the LRM has started the VM. A later change (a comment) leaves it started.
func TestHAStartKeepsStoppedUntilSeen(t *testing.T) {
	s, a := lab(t)
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:102"}, "state": {"stopped"}}))
	stopped := func() {
		t.Helper()
		for i := 0; i < 3 && s.MustGuest(t, 102).Status != "stopped"; i++ {
			a.get("/cluster/ha/resources") // CRM rounds: the stop taken (request_stop), then done
		}
		if row := serviceRow(a, "vm:102"); row["state"] != "stopped" || row["crm_state"] != "stopped" {
			t.Fatalf("stopped service: %v", row)
		}
	}
	start := func() { a.ok(a.form(http.MethodPut, "/cluster/ha/resources/vm:102", url.Values{"state": {"started"}})) }
	stopped()
	start()
	// Each GET is answered, then a CRM round runs.
	if row := serviceRow(a, "vm:102"); row["state"] != "starting" || row["crm_state"] != "stopped" {
		t.Errorf("start requested, not seen: %v, want state starting, crm_state stopped", row)
	}
	a.ok(a.form(http.MethodPut, "/cluster/ha/resources/vm:102", url.Values{"comment": {"web"}}))
	if row := serviceRow(a, "vm:102"); row["state"] != "starting" || row["crm_state"] != "started" {
		t.Errorf("start taken by the CRM, then a comment: %v, want state starting, crm_state started", row)
	}
	for i := 0; i < 3 && s.MustGuest(t, 102).Status != "running"; i++ {
		a.get("/cluster/ha/resources")
	}
	if row := serviceRow(a, "vm:102"); row["state"] != "started" || row["crm_state"] != "started" {
		t.Errorf("started: %v", row)
	}
	// The guest's ha.state is the CRM's state too.
	a.ok(a.form(http.MethodPut, "/cluster/ha/resources/vm:102", url.Values{"state": {"stopped"}}))
	stopped()
	start()
	guestHA := func() any { return a.ok(a.get("/nodes/pve2/qemu/102/status/current")).obj()["ha"] }
	if ha := guestHA(); fmt.Sprint(ha) != "map[managed:1 state:stopped]" {
		t.Errorf("guest ha, start requested, not seen: %v, want state stopped", ha)
	}
	if ha := guestHA(); fmt.Sprint(ha) != "map[managed:1 state:started]" {
		t.Errorf("guest ha, start taken by the CRM: %v, want state started", ha)
	}
}

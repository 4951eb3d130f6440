package pvesim_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

func storageUsed(t *testing.T, a *api, node, name string) float64 {
	t.Helper()
	for _, st := range a.ok(a.get("/nodes/" + node + "/storage")).list() {
		if st["storage"] == name {
			return st["used"].(float64)
		}
	}
	t.Fatalf("no storage %s on %s", name, node)
	return 0
}

const gib = 1 << 30

func TestCreateAllocatesAndRendersPVETypes(t *testing.T) {
	s, a := lab(t)
	before := storageUsed(t, a, "pve2", "local-lvm")
	exit := a.task(a.form(http.MethodPost, "/nodes/pve2/qemu", url.Values{
		"vmid": {"150"}, "name": {"web-1"}, "cores": {"2"}, "memory": {"2048"}, "onboot": {"true"}, "agent": {"1"},
		"scsi0": {"local-lvm:32,iothread=1"}, "scsi1": {"local-lvm:8"}, "ide2": {"ceph:cloudinit"},
		"net0": {"virtio,bridge=vmbr0"}, "tags": {"Web;prod,web prod"}, "cipassword": {"secret"},
	}))
	if exit != "OK" {
		t.Fatalf("create task: %s", exit)
	}
	g := s.MustGuest(t, 150)
	want := map[string]string{
		"scsi0": "local-lvm:vm-150-disk-0,iothread=1,size=32G", "scsi1": "local-lvm:vm-150-disk-1,size=8G",
		"ide2": "ceph:vm-150-cloudinit,media=cdrom", "tags": "prod;web", "onboot": "1",
	}
	for k, v := range want {
		if g.Config[k] != v {
			t.Errorf("config %s = %q, want %q", k, g.Config[k], v)
		}
	}
	if !regexp.MustCompile(`^virtio=BC:24:11:[0-9A-F]{2}:[0-9A-F]{2}:[0-9A-F]{2},bridge=vmbr0$`).MatchString(g.Config["net0"]) {
		t.Errorf("net0 = %q: want a BC:24:11 MAC", g.Config["net0"])
	}
	if got := storageUsed(t, a, "pve2", "local-lvm") - before; got != 40*gib {
		t.Errorf("local-lvm grew by %v bytes, want 40 GiB", got)
	}

	// Config GET types: integers and booleans as numbers, memory and agent as strings.
	cfg := a.ok(a.get("/nodes/pve2/qemu/150/config")).obj()
	types := map[string]string{"cores": "float64", "onboot": "float64", "memory": "string", "agent": "string", "digest": "string", "smbios1": "string", "vmgenid": "string"}
	for k, typ := range types {
		if got := typeName(cfg[k]); got != typ {
			t.Errorf("config %s is %s (%v), want %s", k, got, cfg[k], typ)
		}
	}
	if cfg["cipassword"] != "**********" {
		t.Errorf("cipassword = %v, want it masked", cfg["cipassword"])
	}
	if _, has := cfg["vmid"]; has {
		t.Error("config carries vmid; PVE's does not")
	}
	// template appears in /nodes/{n}/qemu rows only when 1, in /cluster/resources always.
	for _, row := range a.ok(a.get("/nodes/pve2/qemu")).list() {
		if _, has := row["template"]; has && row["vmid"] == 150.0 {
			t.Errorf("qemu list row has template: %v", row)
		}
	}
	if r := a.row("qemu/150"); r["template"] != 0.0 || r["maxmem"] != 2048.0*(1<<20) || r["maxcpu"] != 2.0 {
		t.Errorf("resources row %v", r)
	}
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64:
		return "float64"
	case nil:
		return "absent"
	}
	return "other"
}

// Names follow PVE's dns-name format (pve-common pve_verify_dns_name) on create and clone:
// dot-separated labels of letters, digits and '-', neither starting nor ending with '-'. PVE
// limits neither a label's length nor the name's.
func TestDNSNames(t *testing.T) {
	_, a := lab(t)
	const refused = "invalid format - value does not look like a valid DNS name"
	id := 150
	for name, ok := range map[string]bool{
		"web-1": true, "a": true, "1.2": true, "web-1.lab.example.com": true, strings.Repeat("a", 64) + ".lab": true,
		"a..b": false, ".web": false, "web.": false, "-web": false, "web-": false, "web.-lab": false, "web-.lab": false, "web_1": false,
	} {
		for _, call := range []struct {
			path   string
			params url.Values
		}{
			{"/nodes/pve1/qemu", url.Values{"vmid": {strconv.Itoa(id)}, "name": {name}}},
			{"/nodes/pve1/qemu/9000/clone", url.Values{"newid": {strconv.Itoa(id + 1)}, "name": {name}}},
		} {
			r := a.form(http.MethodPost, call.path, call.params)
			switch {
			case ok && r.code != http.StatusOK:
				t.Errorf("%s %q: %s %s", call.path, name, r.status, r.body)
			case !ok && (r.status != "400 Parameter verification failed." || r.env.Errors["name"] != refused):
				t.Errorf("%s %q: %s %v, want 400 and name: %q", call.path, name, r.status, r.env.Errors, refused)
			}
		}
		id += 2
	}
}

func TestCreateRefusals(t *testing.T) {
	_, a := lab(t)
	tests := []struct {
		params     url.Values
		wantStatus string
		wantErrors map[string]string
	}{
		{url.Values{"cores": {"abc"}}, "400 Parameter verification failed.", map[string]string{"cores": "type check ('integer') failed - got 'abc'"}},
		{url.Values{"cores": {"0"}}, "400 Parameter verification failed.", map[string]string{"cores": "value must have a minimum value of 1"}},
		{url.Values{"onboot": {"maybe"}}, "400 Parameter verification failed.", map[string]string{"onboot": "type check ('boolean') failed - got 'maybe'"}},
		{url.Values{"memory": {"8"}}, "400 Parameter verification failed.", map[string]string{"memory": "invalid format - format error\nmemory.current: value must have a minimum value of 16"}},
		{url.Values{"name": {"web_1"}}, "400 Parameter verification failed.", map[string]string{"name": "invalid format - value does not look like a valid DNS name"}},
		{url.Values{"corez": {"2"}}, "400 Parameter verification failed.", map[string]string{"corez": "property is not defined in schema and the schema does not allow additional properties"}},
		{url.Values{"scsi31": {"local-lvm:1"}}, "400 Parameter verification failed.", map[string]string{"scsi31": "property is not defined in schema and the schema does not allow additional properties"}},
		{url.Values{"tags": {"a b$"}}, "400 Parameter verification failed.", map[string]string{"tags": "invalid format - invalid characters in tag"}},
		{url.Values{"sshkeys": {"ssh-ed25519 AAAA"}}, "400 Parameter verification failed.", map[string]string{"sshkeys": "invalid format - invalid urlencoded string: ssh-ed25519 AAAA"}},
		{url.Values{"memory": {"1024"}, "balloon": {"2048"}}, "500 balloon value too large (must be smaller than assigned memory)", nil},
		{url.Values{"scsi0": {"nope:10"}}, "500 storage 'nope' does not exist", nil},
		{url.Values{"scsi0": {"local:10"}}, "400 Parameter verification failed.", map[string]string{"storage": "storage 'local' does not support vm images"}}, // $check_storage_access
	}
	for _, tt := range tests {
		t.Run(tt.params.Encode(), func(t *testing.T) {
			tt.params.Set("vmid", "150")
			r := a.form(http.MethodPost, "/nodes/pve1/qemu", tt.params)
			if r.status != tt.wantStatus {
				t.Fatalf("status %q, want %q (%s)", r.status, tt.wantStatus, r.body)
			}
			for k, v := range tt.wantErrors {
				if r.env.Errors[k] != v {
					t.Errorf("errors %v, want %s: %q", r.env.Errors, k, v)
				}
			}
		})
	}
	if r := a.get("/cluster/nextid?vmid=150"); r.code != http.StatusOK {
		t.Fatalf("a refused create left VM 150 behind: %s", r.status)
	}
}

func TestConfigWrites(t *testing.T) {
	s, a := lab(t)
	path := "/nodes/pve3/qemu/103/config"
	digest := a.ok(a.get(path)).obj()["digest"].(string)

	tests := []struct {
		name       string
		method     string
		params     url.Values
		wantStatus string // "" = a task whose exit status is wantExit
		wantExit   string
		check      func(cfg map[string]string) string
	}{
		{"stale digest", http.MethodPost, url.Values{"cores": {"2"}, "digest": {strings.Repeat("0", 40)}},
			"500 checksum mismatch (file change by other user?)", "", nil},
		{"nothing to do", http.MethodPost, url.Values{}, "500 no options specified", "", nil},
		{"set and delete one key", http.MethodPost, url.Values{"cores": {"2"}, "delete": {"cores"}}, "400 Parameter verification failed.", "", nil},
		{"set with the current digest", http.MethodPost, url.Values{"cores": {"4"}, "digest": {digest}}, "", "OK",
			func(cfg map[string]string) string { return want(cfg, "cores", "4") }},
		{"delete a key that is not set", http.MethodPost, url.Values{"delete": {"balloon"}}, "", "WARNINGS: 1", nil},
		{"add a disk", http.MethodPost, url.Values{"scsi1": {"local-lvm:10"}}, "", "OK",
			func(cfg map[string]string) string { return want(cfg, "scsi1", "local-lvm:vm-103-disk-1,size=10G") }},
		{"detach a disk to unused0", http.MethodPost, url.Values{"delete": {"scsi1"}}, "", "OK",
			func(cfg map[string]string) string {
				return want(cfg, "unused0", "local-lvm:vm-103-disk-1") + want(cfg, "scsi1", "")
			}},
		{"sync PUT", http.MethodPut, url.Values{"description": {"build box"}}, "", "",
			func(cfg map[string]string) string { return want(cfg, "description", "build box") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := a.form(tt.method, path, tt.params)
			switch {
			case tt.wantStatus != "":
				if r.status != tt.wantStatus {
					t.Fatalf("status %q, want %q", r.status, tt.wantStatus)
				}
				return
			case tt.method == http.MethodPut:
				if a.ok(r).env.Data != nil {
					t.Fatalf("PUT config answered %s, want data null", r.body)
				}
			default:
				if exit := a.task(r); exit != tt.wantExit {
					t.Fatalf("task exit %q, want %q", exit, tt.wantExit)
				}
			}
			if tt.check == nil {
				return
			}
			g := s.MustGuest(t, 103)
			if msg := tt.check(g.Config); msg != "" {
				t.Error(msg)
			}
		})
	}

	// Destroying the detached volume gives its space back.
	before := storageUsed(t, a, "pve3", "local-lvm")
	if exit := a.task(a.form(http.MethodPost, path, url.Values{"delete": {"unused0"}})); exit != "OK" {
		t.Fatal(exit)
	}
	if freed := before - storageUsed(t, a, "pve3", "local-lvm"); freed != 10*gib {
		t.Errorf("deleting unused0 freed %v bytes, want 10 GiB", freed)
	}
}

func want(cfg map[string]string, key, value string) string {
	if cfg[key] != value {
		return key + " = " + cfg[key] + ", want " + value + "; "
	}
	return ""
}

// resize_vm checks its parameters and skiplock, then forks the resize task, which loads the
// config and refuses there: a smaller size, a missing disk, a cd-rom, a VM that is not there;
// the asked size of a disk already that big changes nothing.
func TestResize(t *testing.T) {
	s, a := lab(t)
	path := "/nodes/pve3/qemu/103/resize"
	tests := []struct {
		disk, size string
		wantStatus string // a synchronous refusal
		wantExit   string
		wantSize   string
	}{
		{"scsi0", "+20G", "", "OK", "local-lvm:vm-103-disk-0,size=100G"},
		{"scsi0", "120G", "", "OK", "local-lvm:vm-103-disk-0,size=120G"},
		{"scsi0", "120G", "", "OK", "local-lvm:vm-103-disk-0,size=120G"},
		{"scsi0", "100G", "", "shrinking disks is not supported", "local-lvm:vm-103-disk-0,size=120G"},
		{"scsi0", "big", "400 Parameter verification failed.", "", ""},
		{"scsi5", "+1G", "", "disk 'scsi5' does not exist", ""},
	}
	before := storageUsed(t, a, "pve3", "local-lvm")
	for _, tt := range tests {
		r := a.form(http.MethodPut, path, url.Values{"disk": {tt.disk}, "size": {tt.size}})
		if tt.wantStatus != "" {
			if r.status != tt.wantStatus {
				t.Errorf("resize %s %s: status %q, want %q", tt.disk, tt.size, r.status, tt.wantStatus)
			}
			continue
		}
		if upid := a.ok(r).str(); !strings.Contains(upid, ":resize:103:") {
			t.Errorf("resize UPID %q: want task type resize", upid)
		}
		if exit := a.task(r); exit != tt.wantExit {
			t.Errorf("resize %s %s: exit %q, want %q", tt.disk, tt.size, exit, tt.wantExit)
		}
		if g := s.MustGuest(t, 103); g.Config[tt.disk] != tt.wantSize {
			t.Errorf("resize %s %s: disk %q, want %q", tt.disk, tt.size, g.Config[tt.disk], tt.wantSize)
		}
	}
	if grew := storageUsed(t, a, "pve3", "local-lvm") - before; grew != 40*gib {
		t.Errorf("storage grew by %v, want 40 GiB", grew)
	}
	a.task(a.form(http.MethodPost, "/nodes/pve3/qemu/103/config", url.Values{"ide2": {"none,media=cdrom"}}))
	if exit := a.task(a.form(http.MethodPut, path, url.Values{"disk": {"ide2"}, "size": {"+1G"}})); exit != "you can't resize a cdrom" {
		t.Errorf("resizing a cdrom: %s", exit)
	}
	if exit := a.task(a.form(http.MethodPut, "/nodes/pve3/qemu/999/resize", url.Values{"disk": {"scsi0"}, "size": {"+1G"}})); exit != "Configuration file 'nodes/pve3/qemu-server/999.conf' does not exist" {
		t.Errorf("resizing a VM that is not there: %s", exit)
	}
}

func TestPowerAndDestroy(t *testing.T) {
	s, a := lab(t)
	tests := []struct {
		path, wantExit, wantStatus string
	}{
		{"/nodes/pve3/qemu/103/status/start", "OK", "running"},
		{"/nodes/pve3/qemu/103/status/start", "VM 103 already running", "running"},
		{"/nodes/pve3/qemu/103/status/reboot", "OK", "running"},
		{"/nodes/pve3/qemu/103/status/shutdown", "OK", "stopped"},
		{"/nodes/pve3/qemu/103/status/stop", "OK", "stopped"},
		{"/nodes/pve1/qemu/9000/status/start", "you can't start a vm if it's a template", "stopped"},
	}
	for _, tt := range tests {
		if exit := a.task(a.form(http.MethodPost, tt.path, nil)); exit != tt.wantExit {
			t.Errorf("%s: exit %q, want %q", tt.path, exit, tt.wantExit)
		}
		vmid := 103
		if strings.Contains(tt.path, "9000") {
			vmid = 9000
		}
		if g := s.MustGuest(t, vmid); g.Status != tt.wantStatus {
			t.Errorf("%s: status %s, want %s", tt.path, g.Status, tt.wantStatus)
		}
	}

	// vm_reboot checks that the VM runs before it forks (qemu-server API2/Qemu.pm).
	if r := a.form(http.MethodPost, "/nodes/pve3/qemu/103/status/reboot", nil); r.status != "500 VM 103 not running" {
		t.Errorf("reboot of a stopped VM: %s", r.status)
	}
	a.task(a.form(http.MethodPost, "/nodes/pve3/qemu/103/config", url.Values{"protection": {"1"}}))
	if r := a.form(http.MethodDelete, "/nodes/pve3/qemu/103", nil); r.status != "500 can't remove VM 103 - protection mode enabled" {
		t.Fatalf("destroying a protected VM: %s", r.status)
	}
	a.task(a.form(http.MethodPost, "/nodes/pve3/qemu/103/config", url.Values{"protection": {"0"}}))
	before := storageUsed(t, a, "pve3", "local-lvm")
	upid := a.ok(a.form(http.MethodDelete, "/nodes/pve3/qemu/103", url.Values{"purge": {"1"}, "destroy-unreferenced-disks": {"1"}})).str()
	if !strings.Contains(upid, ":qmdestroy:103:") {
		t.Fatalf("destroy UPID %q", upid)
	}
	if _, exists := s.Guest(103); exists {
		t.Fatal("VM 103 still exists after its destroy task")
	}
	if freed := before - storageUsed(t, a, "pve3", "local-lvm"); freed != 80*gib {
		t.Errorf("destroy freed %v, want the 80 GiB disk", freed)
	}
}

// TestStartRefusesMoreVCPUsThanTheNodeHas: qemu-server's config_to_command dies with "MAX 16
// vcpus allowed per VM on this node" when sockets x cores exceed the node's CPUs; the create
// stores such a VM, and only its start fails. With start=1 the create's worker calls vm_start,
// which forks a qmstart worker of its own (create_vm's "Execute autostart"): the create ends
// OK and the VM stays stopped.
func TestStartRefusesMoreVCPUsThanTheNodeHas(t *testing.T) {
	s, a := lab(t) // pve3 has 16 CPUs
	exit := a.task(a.form(http.MethodPost, "/nodes/pve3/qemu", url.Values{"vmid": {"150"}, "cores": {"16"}, "sockets": {"2"}, "start": {"1"}}))
	if g := s.MustGuest(t, 150); exit != "OK" || g.Status != "stopped" {
		t.Errorf("create of 32 vCPUs with start=1 on 16 CPUs: exit %q, VM %s; want OK and stopped", exit, g.Status)
	}
	exit = a.task(a.form(http.MethodPost, "/nodes/pve3/qemu", url.Values{"vmid": {"151"}, "cores": {"16"}, "start": {"1"}}))
	if g := s.MustGuest(t, 151); exit != "OK" || g.Status != "running" {
		t.Errorf("create of 16 vCPUs with start=1 on 16 CPUs: exit %q, VM %s; want OK and running", exit, g.Status)
	}
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve3/qemu/150/status/start", nil)); exit != "MAX 16 vcpus allowed per VM on this node" {
		t.Errorf("start: exit %q", exit)
	}
	a.task(a.form(http.MethodPost, "/nodes/pve3/qemu/150/config", url.Values{"sockets": {"1"}}))
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve3/qemu/150/status/start", nil)); exit != "OK" {
		t.Errorf("start with 16 vCPUs on 16 CPUs: exit %q", exit)
	}
}

// A start that fails twice over, on too many vCPUs and on a disk its node does not hold (VM 103
// moved away from its local-lvm disk), fails as each PVE version checks first: PVE 8's
// vm_start_nolock runs config_to_command ("MAX 16 vcpus allowed per VM on this node") before
// activate_volumes; PVE 9 activates the volumes first (qemu-server 9.0.1, "vm start/commandline:
// activate volumes before config_to_command()"), so LvmThinPlugin's error comes first.
func TestStartChecksInEachPVEVersionsOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules []pvesim.HARuleSpec // nil is PVE 8
		want  string
	}{
		{"PVE 8", nil, "MAX 16 vcpus allowed per VM on this node"},
		{"PVE 9", []pvesim.HARuleSpec{}, "no such logical volume local-lvm/vm-103-disk-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := labCluster(t)
			c.HARules = tc.rules
			s := pvesim.NewTestServer(t, c)
			a := newAPI(t, s)
			a.task(a.form(http.MethodPost, "/nodes/pve3/qemu/103/config", url.Values{"cores": {"32"}}))
			if err := s.SetGuestNode(103, "pve2"); err != nil { // pve2 has 16 CPUs, not the disk
				t.Fatal(err)
			}
			if exit := a.task(a.form(http.MethodPost, "/nodes/pve2/qemu/103/status/start", nil)); exit != tc.want {
				t.Errorf("start: %q, want %q", exit, tc.want)
			}
		})
	}
}

func TestMigrate(t *testing.T) {
	s, a := lab(t)
	tests := []struct {
		name       string
		path       string
		params     url.Values
		wantStatus string
		wantNode   string
	}{
		{"running without online", "/nodes/pve1/qemu/100/migrate", url.Values{"target": {"pve2"}}, "500 can't migrate running VM without --online", ""},
		{"to itself", "/nodes/pve1/qemu/100/migrate", url.Values{"target": {"pve1"}}, "400 Parameter verification failed.", ""},
		{"to an unknown node", "/nodes/pve1/qemu/100/migrate", url.Values{"target": {"pve9"}}, "500 no such cluster node 'pve9'", ""},
		{"live on shared storage", "/nodes/pve2/qemu/102/migrate", url.Values{"target": {"pve3"}, "online": {"1"}}, "", "pve3"},
		{"live with local disks", "/nodes/pve1/qemu/100/migrate", url.Values{"target": {"pve2"}, "online": {"1"}, "with-local-disks": {"1"}}, "", "pve2"},
		{"offline", "/nodes/pve3/qemu/103/migrate", url.Values{"target": {"pve1"}}, "", "pve1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := map[string]float64{"pve1": storageUsed(t, a, "pve1", "local-lvm"), "pve2": storageUsed(t, a, "pve2", "local-lvm")}
			r := a.form(http.MethodPost, tt.path, tt.params)
			if tt.wantStatus != "" {
				if r.status != tt.wantStatus {
					t.Fatalf("status %q, want %q", r.status, tt.wantStatus)
				}
				return
			}
			upid := a.ok(r).str()
			if exit := a.task(r); exit != "OK" || !strings.HasPrefix(upid, "UPID:"+strings.Split(tt.path, "/")[2]+":") {
				t.Fatalf("migrate task %s: %s (the task runs on the source node)", upid, exit)
			}
			vmid := atoiT(strings.Split(tt.path, "/")[4])
			g := s.MustGuest(t, vmid)
			if g.Node != tt.wantNode || g.Lock != "" {
				t.Fatalf("after migration: node %s lock %q, want %s and no lock", g.Node, g.Lock, tt.wantNode)
			}
			if vmid == 100 {
				moved := storageUsed(t, a, "pve2", "local-lvm") - before["pve2"]
				if moved != 200*gib || before["pve1"]-storageUsed(t, a, "pve1", "local-lvm") != 200*gib {
					t.Errorf("the 200 GiB local disk did not move with the VM (pve2 grew by %v)", moved)
				}
			}
		})
	}
}

func atoiT(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func TestClone(t *testing.T) {
	s, a := lab(t)
	tests := []struct {
		name       string
		path       string
		params     url.Values
		wantStatus string // sync refusal
		wantExit   string
		check      func(t *testing.T, g map[string]string)
	}{
		{"linked clone of a template to another node", "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"300"}, "name": {"web-1"}, "target": {"pve3"}, "pool": {"lab"}}, "", "OK",
			func(t *testing.T, cfg map[string]string) {
				if cfg["scsi0"] != "ceph:vm-300-disk-0,size=8G" || cfg["ide2"] != "ceph:vm-300-cloudinit,media=cdrom" || cfg["name"] != "web-1" {
					t.Errorf("config %v", cfg)
				}
				if _, has := cfg["template"]; has {
					t.Error("the clone is a template")
				}
				if cfg["net0"] == "virtio=BC:24:11:00:90:00,bridge=vmbr0" || !strings.HasPrefix(cfg["net0"], "virtio=BC:24:11:") {
					t.Errorf("net0 %q: want a new BC:24:11 MAC", cfg["net0"])
				}
			}},
		{"default name", "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"301"}}, "", "OK",
			func(t *testing.T, cfg map[string]string) {
				if cfg["name"] != "Copy-of-VM-debian-12-cloud" {
					t.Errorf("name %q", cfg["name"])
				}
			}},
		// clone_vm copies the cloud-init drive like a disk (drive_is_cdrom excludes it), to the
		// storage asked for (clone_disk).
		{"full clone to a storage", "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"302"}, "full": {"1"}, "storage": {"local-lvm"}}, "", "OK",
			func(t *testing.T, cfg map[string]string) {
				if cfg["scsi0"] != "local-lvm:vm-302-disk-0,size=8G" || cfg["ide2"] != "local-lvm:vm-302-cloudinit,media=cdrom" {
					t.Errorf("config %v", cfg)
				}
			}},
		{"local disks to another node", "/nodes/pve1/qemu/101/clone", url.Values{"newid": {"303"}, "target": {"pve2"}}, "500 can't clone VM to node 'pve2' (VM uses local storage)", "", nil},
		{"linked clone of a VM", "/nodes/pve1/qemu/101/clone", url.Values{"newid": {"303"}, "full": {"0"}}, "500 Linked clone feature is not supported for drive 'scsi0'", "", nil},
		{"storage for a linked clone", "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"303"}, "storage": {"ceph"}}, "500 parameter 'storage' not allowed for linked clones", "", nil},
		{"to non-shared storage elsewhere", "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"303"}, "full": {"1"}, "storage": {"local-lvm"}, "target": {"pve2"}}, "500 can't clone to non-shared storage 'local-lvm'", "", nil},
		// qemu-server clone_vm's $load_and_check: the storage must be enabled on the source
		// node and hold images (a parameter error); a snapshot must exist (the simulator's VMs
		// have none); a linked clone takes neither storage nor format; format is an enum.
		{"snapshot", "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"303"}, "snapname": {"before-upgrade"}}, "500 snapshot 'before-upgrade' does not exist", "", nil},
		{"format for a linked clone", "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"303"}, "format": {"qcow2"}}, "500 parameter 'format' not allowed for linked clones", "", nil},
		{"unknown format", "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"303"}, "full": {"1"}, "format": {"vdi"}}, "400 Parameter verification failed.", "", nil},
		{"storage without images", "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"303"}, "full": {"1"}, "storage": {"local"}}, "400 Parameter verification failed.", "", nil},
		{"unknown storage", "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"303"}, "full": {"1"}, "storage": {"nope"}}, "500 storage 'nope' does not exist", "", nil},
		{"missing pool before the storage", "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"303"}, "pool": {"nope"}, "storage": {"nope"}}, "403 Permission check failed (pool 'nope' does not exist)", "", nil},
		{"newid taken on this node", "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"100"}}, "500 unable to create VM 100: config file already exists", "", nil},
		{"newid taken on another node fails in the task", "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"102"}}, "", "clone failed: unable to create VM 102 - VM 102 already exists on node 'pve2'", nil},
		{"missing pool", "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"303"}, "pool": {"nope"}}, "403 Permission check failed (pool 'nope' does not exist)", "", nil},
		{"unknown parameter", "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"303"}, "cores": {"2"}}, "400 Parameter verification failed.", "", nil},
		// clone_vm checks the target is a cluster member, not that it is up (pve4 is offline):
		// the clone runs on the source node and its config lands in the target's directory.
		{"to an offline node", "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"304"}, "target": {"pve4"}}, "", "OK", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := a.form(http.MethodPost, tt.path, tt.params)
			if tt.wantStatus != "" {
				if r.status != tt.wantStatus {
					t.Fatalf("status %q, want %q", r.status, tt.wantStatus)
				}
				return
			}
			upid := a.ok(r).str()
			src := strings.Split(tt.path, "/")
			if !strings.HasPrefix(upid, "UPID:"+src[2]+":") || !strings.Contains(upid, ":qmclone:"+src[4]+":") {
				t.Errorf("UPID %q: want a qmclone of the source on the source node", upid)
			}
			if exit := a.task(r); exit != tt.wantExit {
				t.Fatalf("exit %q, want %q", exit, tt.wantExit)
			}
			if tt.check != nil {
				g := s.MustGuest(t, atoiT(tt.params.Get("newid")))
				tt.check(t, g.Config)
			}
		})
	}
	if g := s.MustGuest(t, 300); g.Node != "pve3" || g.Pool != "lab" {
		t.Errorf("clone 300 on %s in pool %q, want pve3 and lab", g.Node, g.Pool)
	}
	if g := s.MustGuest(t, 304); g.Node != "pve4" {
		t.Errorf("clone 304 on %s, want pve4", g.Node)
	}
	if r := a.get("/nodes/pve4/qemu/304/config"); r.code != 595 {
		t.Errorf("the clone's config through its offline node: %s", r.status)
	}
}

func TestStatsLagAndLiveLoad(t *testing.T) {
	s, a := lab(t, pvesimWithStatsLag())
	nodeBefore := a.row("node/pve3")
	a.task(a.form(http.MethodPost, "/nodes/pve3/qemu", url.Values{"vmid": {"150"}, "memory": {"4096"}, "cores": {"4"}, "start": {"1"}}))
	row := a.row("qemu/150")
	keys := make([]string, 0, len(row))
	for k := range row {
		keys = append(keys, k)
	}
	if len(row) != 5 || row["status"] != "unknown" {
		t.Fatalf("a just-created VM's row %v has %v; want only id, vmid, node, type and status unknown", row, keys)
	}
	s.Tick()
	if row := a.row("qemu/150"); row["status"] != "running" || row["maxmem"] != 4096.0*(1<<20) {
		t.Fatalf("after a tick: %v", row)
	}
	nodeAfter := a.row("node/pve3")
	if grew := nodeAfter["mem"].(float64) - nodeBefore["mem"].(float64); grew != 4096*(1<<20) {
		t.Errorf("node mem grew by %v, want the started VM's 4 GiB", grew)
	}
	if nodeAfter["cpu"].(float64) <= nodeBefore["cpu"].(float64) {
		t.Errorf("node cpu %v did not grow from %v", nodeAfter["cpu"], nodeBefore["cpu"])
	}
	var status struct {
		Memory struct{ Used float64 } `json:"memory"`
	}
	raw, _ := json.Marshal(a.ok(a.get("/nodes/pve3/status")).obj())
	_ = json.Unmarshal(raw, &status)
	if status.Memory.Used != nodeAfter["mem"] {
		t.Errorf("/nodes/pve3/status memory.used %v, /cluster/resources mem %v", status.Memory.Used, nodeAfter["mem"])
	}
}

// A running VM takes only hot-pluggable changes at once; the rest waits for its next start,
// visible in config GETs and .../pending but not in what the running process reports.
func TestPendingChangesOnARunningVM(t *testing.T) {
	s, a := lab(t)
	path := "/nodes/pve2/qemu/102"
	if exit := a.task(a.form(http.MethodPost, path+"/config", url.Values{
		"cores": {"8"}, "name": {"metrics"}, "net1": {"virtio,bridge=vmbr1"}, "delete": {"memory"},
	})); exit != "OK" {
		t.Fatal(exit)
	}
	cfg := a.ok(a.get(path + "/config")).obj()
	live := a.ok(a.get(path + "/config?current=1")).obj()
	if cfg["cores"] != 8.0 || live["cores"] != 4.0 || cfg["name"] != "metrics" || live["name"] != "metrics" || live["net1"] == nil {
		t.Fatalf("config %v, current %v: want cores pending, name and net1 live", cfg, live)
	}
	if _, has := cfg["memory"]; has || live["memory"] != "8192" {
		t.Fatalf("memory: config %v, current %v; want a pending deletion", cfg["memory"], live["memory"])
	}
	rows := map[string]map[string]any{}
	for _, r := range a.ok(a.get(path + "/pending")).list() {
		rows[r["key"].(string)] = r
	}
	if r := rows["cores"]; r["value"] != 4.0 || r["pending"] != 8.0 {
		t.Errorf("pending cores row %v", r)
	}
	if _, waits := rows["name"]["pending"]; waits {
		t.Errorf("name is live but listed as pending: %v", rows["name"])
	}
	if r := rows["memory"]; r["delete"] != 1.0 || r["value"] != "8192" {
		t.Errorf("pending memory deletion row %v", r)
	}
	if g := s.MustGuest(t, 102); g.Pending["cores"] != "8" || g.Config["cores"] != "8" {
		t.Errorf("GuestState %+v", g)
	}
	if r := a.row("qemu/102"); r["maxcpu"] != 4.0 {
		t.Errorf("the running process reports %v vCPUs, want the old 4", r["maxcpu"])
	}

	a.task(a.form(http.MethodPost, path+"/status/stop", nil))
	a.task(a.form(http.MethodPost, path+"/status/start", nil))
	if r := a.row("qemu/102"); r["maxcpu"] != 8.0 {
		t.Errorf("after a restart the VM has %v vCPUs, want 8", r["maxcpu"])
	}
	if g := s.MustGuest(t, 102); len(g.Pending) != 0 || g.Config["memory"] != "" {
		t.Errorf("after a restart: pending %v, memory %q", g.Pending, g.Config["memory"])
	}
}

// A change that leaves a running VM's value as it is leaves nothing pending, and setting a
// pending key back to its current value cancels the pending change: update_vm ends with
// cleanup_pending (pve-guest-common AbstractConfig.pm), which drops pending values equal to
// the config and pending deletions of keys the config does not have. The Telmate provider
// sends every managed key on each update (memory=8192 unchanged) and then reads .../pending:
// a pending row there makes it reboot the VM or fail "unable to update vm without rebooting".
func TestUnchangedValuesLeaveNothingPending(t *testing.T) {
	s, a := lab(t)
	path := "/nodes/pve2/qemu/102"
	put := func(params url.Values) {
		t.Helper()
		a.ok(a.form(http.MethodPut, path+"/config", params))
	}
	pendingRows := func() map[string]map[string]any {
		rows := map[string]map[string]any{}
		for _, r := range a.ok(a.get(path + "/pending")).list() {
			_, waits := r["pending"]
			if _, deletes := r["delete"]; waits || deletes {
				rows[r["key"].(string)] = r
			}
		}
		return rows
	}
	put(url.Values{"memory": {"8192"}, "cores": {"4"}})
	if rows := pendingRows(); len(rows) != 0 {
		t.Errorf("unchanged memory and cores: pending %v, want none", rows)
	}
	put(url.Values{"cores": {"8"}, "cpu": {"host"}})
	if rows := pendingRows(); len(rows) != 2 || rows["cores"]["pending"] != 8.0 || rows["cpu"]["pending"] != "host" {
		t.Fatalf("cores and cpu changed: pending %v, want both", rows)
	}
	put(url.Values{"cores": {"4"}, "delete": {"cpu"}})
	if rows := pendingRows(); len(rows) != 0 {
		t.Errorf("cores set back, pending-only cpu deleted: pending %v, want none", rows)
	}
	if g := s.MustGuest(t, 102); len(g.Pending) != 0 || g.Config["cores"] != "4" || g.Config["cpu"] != "" {
		t.Errorf("GuestState pending %v, cores %q, cpu %q", g.Pending, g.Config["cores"], g.Config["cpu"])
	}
}

// On a running VM, an existing disk's backup and replicate change at once while discard,
// ssd, iothread and cache wait for the next start, as vmconfig_update_disk decides; a new
// sata disk waits too (PVE hot-plugs only scsi and virtio disks).
func TestDiskOptionsOnARunningVM(t *testing.T) {
	s, a := lab(t)
	path := "/nodes/pve2/qemu/102"
	set := func(key, value string) {
		t.Helper()
		if exit := a.task(a.form(http.MethodPost, path+"/config", url.Values{key: {value}})); exit != "OK" {
			t.Fatal(exit)
		}
	}
	set("scsi0", "ceph:vm-102-disk-0,size=50G,backup=0,replicate=0")
	if g := s.MustGuest(t, 102); len(g.Pending) != 0 || g.Config["scsi0"] != "ceph:vm-102-disk-0,backup=0,replicate=0,size=50G" {
		t.Fatalf("backup/replicate: config %q, pending %v; want them live", g.Config["scsi0"], g.Pending)
	}
	for _, c := range [][2]string{{"discard=on", "discard=on,size=50G"}, {"ssd=1", "size=50G,ssd=1"},
		{"iothread=1", "iothread=1,size=50G"}, {"cache=writeback", "cache=writeback,size=50G"}} {
		opt, want := c[0], c[1]
		set("scsi0", "ceph:vm-102-disk-0,size=50G,"+opt)
		live := a.ok(a.get(path + "/config?current=1")).obj()
		if g := s.MustGuest(t, 102); g.Pending["scsi0"] != "ceph:vm-102-disk-0,"+want || live["scsi0"] != "ceph:vm-102-disk-0,backup=0,replicate=0,size=50G" {
			t.Errorf("%s: pending %q, running %q; want it pending", opt, g.Pending["scsi0"], live["scsi0"])
		}
	}
	set("sata1", "ceph:4")
	if g := s.MustGuest(t, 102); g.Pending["sata1"] == "" {
		t.Errorf("a new sata disk was hot-plugged: pending %v", g.Pending)
	}
	a.task(a.form(http.MethodPost, path+"/status/stop", nil))
	a.task(a.form(http.MethodPost, path+"/status/start", nil))
	if g := s.MustGuest(t, 102); len(g.Pending) != 0 || g.Config["scsi0"] != "ceph:vm-102-disk-0,cache=writeback,size=50G" {
		t.Errorf("after a restart: pending %v, scsi0 %q", g.Pending, g.Config["scsi0"])
	}
}

// A held create with start=1 starts its VM when released: the autostart's qmstart worker is
// started by the create's completion, after holding ended.
func TestHeldCreateAutostarts(t *testing.T) {
	s, a := lab(t)
	s.HoldTasks()
	upid := a.ok(a.form(http.MethodPost, "/nodes/pve3/qemu", url.Values{"vmid": {"150"}, "cores": {"2"}, "start": {"1"}})).str()
	s.ReleaseTasks()
	if exit := a.wait(upid)["exitstatus"]; exit != "OK" {
		t.Fatalf("create: %v", exit)
	}
	if g := s.MustGuest(t, 150); g.Status != "running" || g.Lock != "" {
		t.Errorf("VM 150 %s, lock %q after the released create; want running, unlocked", g.Status, g.Lock)
	}
}

// GET /nodes/{node}/tasks as pve-manager's API2/Tasks.pm node_tasks answers it: the node's
// finished tasks, most recently finished first, with their exit status; running ones first
// with status RUNNING for source active or all; filters on type, vmid, user, status (errors:
// all but OK) and paging by start and limit, total counting every task that passed the
// filters. Here it shows the autostart of a create with start=1: a qmstart task of its own.
func TestTaskList(t *testing.T) {
	s, a := lab(t)
	a.task(a.form(http.MethodPost, "/nodes/pve3/qemu", url.Values{"vmid": {"150"}, "cores": {"16"}, "sockets": {"2"}, "start": {"1"}}))
	a.task(a.form(http.MethodPost, "/nodes/pve3/qemu/103/status/start", nil))
	s.HoldTasks()
	running := a.ok(a.form(http.MethodPost, "/nodes/pve3/qemu/103/status/stop", nil)).str()
	defer s.ReleaseTasks()
	list := func(q url.Values) ([]string, int) {
		t.Helper()
		r := a.ok(a.form(http.MethodGet, "/nodes/pve3/tasks", q))
		var got []string
		for _, row := range r.list() {
			got = append(got, fmt.Sprintf("%s %s %v", row["type"], row["id"], row["status"]))
			if row["user"] != "root@pam" || row["tokenid"] != "sim" || row["node"] != "pve3" || (row["status"] != "RUNNING") == (row["endtime"] == nil) {
				t.Errorf("row %v", row)
			}
		}
		return got, *r.env.Total
	}
	for _, tc := range []struct {
		query url.Values
		want  string
		total int
	}{
		{nil, "[qmstart 103 OK qmstart 150 MAX 16 vcpus allowed per VM on this node qmcreate 150 OK]", 3},
		{url.Values{"errors": {"1"}}, "[qmstart 150 MAX 16 vcpus allowed per VM on this node]", 1},
		{url.Values{"statusfilter": {"ok"}, "vmid": {"150"}}, "[qmcreate 150 OK]", 1},
		{url.Values{"typefilter": {"qmstart"}, "limit": {"1"}}, "[qmstart 103 OK]", 2},
		{url.Values{"start": {"1"}, "limit": {"1"}}, "[qmstart 150 MAX 16 vcpus allowed per VM on this node]", 3},
		{url.Values{"source": {"active"}}, "[qmstop 103 RUNNING]", 1},
		{url.Values{"source": {"all"}, "limit": {"2"}}, "[qmstop 103 RUNNING qmstart 103 OK]", 4},
		{url.Values{"userfilter": {"ROOT@"}, "typefilter": {"qmcreate"}}, "[qmcreate 150 OK]", 1},
		{url.Values{"userfilter": {"nobody"}}, "[]", 0},
	} {
		if got, total := list(tc.query); fmt.Sprint(got) != tc.want || total != tc.total {
			t.Errorf("%v: %v (total %d), want %s (total %d)", tc.query, got, total, tc.want, tc.total)
		}
	}
	if !strings.Contains(running, ":qmstop:103:") {
		t.Errorf("stop UPID %s", running)
	}
	wantError(t, a.form(http.MethodGet, "/nodes/pve3/tasks", url.Values{"statusfilter": {"fine"}}), 400, "invalid status 'fine'")
	wantError(t, a.form(http.MethodGet, "/nodes/pve3/tasks", url.Values{"vmid": {"99"}}), 400, "Parameter verification failed.")
	if rows := a.ok(a.get("/nodes/pve1/tasks")).list(); len(rows) != 0 {
		t.Errorf("pve1's tasks: %v", rows)
	}
}

// qemu-server's migration scans the VM's volumes on local storage in its phase 1, inside the
// qmigrate task (QemuMigrate.pm scan_local_volumes): a local ISO ("local cdrom image"), a
// running VM's attached local disk without with-local-disks, and a base volume linked clones
// use are logged per volume and abort the migration ("Problem found while scanning volumes -
// can't migrate VM - check log"); a linked clone's volume on local storage aborts it too ("as
// it's a clone of"). The cloud-init drive is generated and moves, to targetstorage if given.
// The VM stays on its node, unlocked.
func TestMigratePhase1Scan(t *testing.T) {
	c, err := pvesim.ParseCluster([]byte(`
nodes:
  - {name: pve1, cpus: 8, memory_gib: 32}
  - {name: pve2, cpus: 8, memory_gib: 32}
storages:
  - {name: local, type: dir, content: [iso, images], size_gib: 100}
  - {name: local-lvm, type: lvmthin, content: [images], size_gib: 100}
  - {name: fast, type: lvmthin, content: [images], nodes: [pve2], size_gib: 100}
guests:
  - {vmid: 100, node: pve1, name: a, status: running, config: {scsi0: "local-lvm:vm-100-disk-0,size=4G"}}
  - {vmid: 101, node: pve1, name: b, config: {scsi0: "local-lvm:vm-101-disk-0,size=4G", ide2: "local:iso/x.iso,media=cdrom"}}
  - {vmid: 102, node: pve1, name: c, config: {scsi0: "local-lvm:vm-102-disk-0,size=4G", ide2: "local-lvm:vm-102-cloudinit,media=cdrom"}}
  - {vmid: 9000, node: pve1, name: t, template: true, config: {scsi0: "local-lvm:base-9000-disk-0,size=4G"}}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := pvesim.NewTestServer(t, c)
	a := newAPI(t, s)
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"200"}})); exit != "OK" {
		t.Fatalf("linked clone: %s", exit)
	}
	// migrate_vm's force, migration_type and migration_network are root@pam's, not its tokens'.
	if r := a.form(http.MethodPost, "/nodes/pve1/qemu/101/migrate", url.Values{"target": {"pve2"}, "force": {"1"}}); r.code != 400 || r.env.Errors["force"] != "Only root may use this option." {
		t.Errorf("token migrate with force = %s %s", r.status, r.body)
	}
	const scan = "ERROR: migration aborted (duration 00:00:01): Problem found while scanning volumes - "
	for _, tc := range []struct {
		vmid   string
		params url.Values
		log    []string
	}{
		{"100", url.Values{"online": {"1"}}, []string{"can't migrate local disk 'local-lvm:vm-100-disk-0': can't live migrate attached local disks without with-local-disks option", scan + "can't migrate VM - check log"}},
		{"101", nil, []string{"can't migrate local disk 'local:iso/x.iso': local cdrom image", scan + "can't migrate VM - check log"}},
		{"9000", nil, []string{"can't migrate local disk 'local-lvm:base-9000-disk-0': referenced by linked clone(s)", scan + "can't migrate VM - check log"}},
		{"200", nil, []string{scan + "can't migrate 'local-lvm:vm-200-disk-0' as it's a clone of 'base-9000-disk-0'"}},
	} {
		params := url.Values{"target": {"pve2"}}
		for k, v := range tc.params {
			params[k] = v
		}
		upid := a.ok(a.form(http.MethodPost, "/nodes/pve1/qemu/"+tc.vmid+"/migrate", params)).str()
		if exit := a.wait(upid)["exitstatus"]; exit != "migration aborted" {
			t.Errorf("migrate %s: exit %v, want migration aborted", tc.vmid, exit)
		}
		if log := a.taskLog(upid); !strings.Contains(log, strings.Join(tc.log, "\n")) {
			t.Errorf("migrate %s: log\n%s\nwant\n%s", tc.vmid, log, strings.Join(tc.log, "\n"))
		}
		if g := s.MustGuest(t, atoiT(tc.vmid)); g.Node != "pve1" || g.Lock != "" {
			t.Errorf("VM %s after the aborted migration: node %s, lock %q", tc.vmid, g.Node, g.Lock)
		}
	}
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve1/qemu/102/migrate", url.Values{"target": {"pve2"}, "targetstorage": {"fast"}})); exit != "OK" {
		t.Fatalf("migrate 102: %s", exit)
	}
	if cfg := s.MustGuest(t, 102).Config; cfg["scsi0"] != "fast:vm-102-disk-0,size=4G" || cfg["ide2"] != "fast:vm-102-cloudinit,media=cdrom" {
		t.Errorf("VM 102 after migrating to fast: scsi0 %q, ide2 %q", cfg["scsi0"], cfg["ide2"])
	}
}

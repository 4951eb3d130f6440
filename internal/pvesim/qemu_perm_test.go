package pvesim_test

import (
	"maps"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// permCluster is one node with a VM whose serial0 is a real device; PVE 9 (ha_rules) or PVE 8.
func permCluster(t *testing.T, pve9 bool) (*api, *api) {
	t.Helper()
	release := ""
	if pve9 {
		release = "ha_rules: []\n"
	}
	c, err := pvesim.ParseCluster([]byte(`
nodes:
  - {name: pve1, cpus: 8, memory_gib: 32}
storages:
  - {name: local-lvm, type: lvmthin, content: [images], size_gib: 100}
guests:
  - {vmid: 100, node: pve1, name: a, config: {serial0: /dev/ttyS0, scsi0: "local-lvm:vm-100-disk-0,size=4G"}}
` + release))
	if err != nil {
		t.Fatal(err)
	}
	s := pvesim.NewTestServer(t, c)
	token := newAPI(t, s)
	user, pass := s.Credentials()
	d := token.ok(login(t, token, url.Values{"username": {user}, "password": {pass}})).obj()
	root := *token
	root.header = http.Header{"Cookie": {"PVEAuthCookie=" + d["ticket"].(string)}, "Csrfpreventiontoken": {d["CSRFPreventionToken"].(string)}}
	return token, &root
}

// qemu-server API2/Qemu.pm: a user other than root@pam, root@pam's API tokens included
// (their user is "root@pam!ID"), may only set and delete the options of
// $check_vm_modify_config_perm's lists; any other ("arch", "args", "affinity", "hookscript",
// "hugepages", "vmgenid"...) is "only root can set '<key>' config", on create and on a config
// write, for a delete too. rng0 joined the lists in qemu-server 9 (check_rng_perm): on PVE 8.2
// it is root's. Serial ports, USB and PCI devices are checked by value
// (check_vm_create_serial_perm, check_usb_perm, check_hostpci_perm, update_vm_api): sockets,
// spice and mapped devices are anyone's, real devices root's. root@pam itself (a ticket) may
// set them all. bpg's provider knows it: it sends cpu.architecture only with a root ticket
// and keeps affinity out of its delete lists.
func TestRootOnlyOptions(t *testing.T) {
	for _, pve9 := range []bool{false, true} {
		token, root := permCluster(t, pve9)
		create := func(a *api, vmid string, extra url.Values) reply {
			p := url.Values{"vmid": {vmid}}
			for k, v := range extra {
				p[k] = v
			}
			return a.form(http.MethodPost, "/nodes/pve1/qemu", p)
		}
		rng := "only root can set 'rng0' config"
		if pve9 {
			rng = ""
		}
		for _, tc := range []struct {
			params url.Values
			want   string // the 500's message, "" for a create
		}{
			{url.Values{"arch": {"aarch64"}}, "only root can set 'arch' config"},
			{url.Values{"args": {"-no-reboot"}}, "only root can set 'args' config"},
			{url.Values{"affinity": {"0-3"}}, "only root can set 'affinity' config"},
			{url.Values{"hugepages": {"2"}, "memory": {"2048"}}, "only root can set 'hugepages' config"},
			{url.Values{"rng0": {"source=/dev/urandom"}}, rng},
			{url.Values{"serial0": {"/dev/ttyS0"}}, "only root can set 'serial0' config for real devices"},
			{url.Values{"usb0": {"host=1234:5678"}}, "only root can set 'usb0' config for real devices"},
			{url.Values{"hostpci0": {"0000:01:00.0"}}, "only root can set 'hostpci0' config for non-mapped devices"},
			{url.Values{"serial0": {"socket"}, "usb0": {"spice"}, "hostpci0": {"mapping=gpu"}, "cores": {"2"}, "name": {"ok"}}, ""},
		} {
			r := create(token, "150", tc.params)
			if tc.want == "" {
				if exit := token.task(r); exit != "OK" {
					t.Errorf("pve9=%v: token create with %v: %s", pve9, tc.params, exit)
				}
				token.task(token.form(http.MethodDelete, "/nodes/pve1/qemu/150", nil))
				continue
			}
			if got := strings.TrimSpace(r.status[4:]); r.code != 500 || got != tc.want {
				t.Errorf("pve9=%v: token create with %v = %d %q, want 500 %q", pve9, tc.params, r.code, got, tc.want)
			}
			if exit := root.task(create(root, "151", tc.params)); exit != "OK" {
				t.Errorf("pve9=%v: root@pam create with %v: %s", pve9, tc.params, exit)
			}
			root.task(root.form(http.MethodDelete, "/nodes/pve1/qemu/151", nil))
		}
		for _, tc := range []struct {
			method string
			params url.Values
			want   string
		}{
			{http.MethodPut, url.Values{"arch": {"x86_64"}}, "only root can set 'arch' config"},
			{http.MethodPut, url.Values{"delete": {"args"}}, "only root can set 'args' config"},
			{http.MethodPut, url.Values{"delete": {"name,affinity"}}, "only root can set 'affinity' config"},
			{http.MethodPut, url.Values{"serial0": {"socket"}}, "only root can modify 'serial0' config for real devices"},
			{http.MethodPut, url.Values{"delete": {"serial0"}}, "only root can delete 'serial0' config for real devices"},
		} {
			r := token.form(tc.method, "/nodes/pve1/qemu/100/config", tc.params)
			if got := strings.TrimSpace(r.status[4:]); r.code != 500 || got != tc.want {
				t.Errorf("pve9=%v: token config write %v = %d %q, want 500 %q", pve9, tc.params, r.code, got, tc.want)
			}
		}
		// A config write's device checks run in the qmconfig task of the asynchronous POST.
		if exit := token.task(token.form(http.MethodPost, "/nodes/pve1/qemu/100/config", url.Values{"delete": {"serial0"}})); exit != "only root can delete 'serial0' config for real devices" {
			t.Errorf("pve9=%v: token's asynchronous delete of serial0: %q", pve9, exit)
		}
		if cfg := token.ok(token.get("/nodes/pve1/qemu/100/config")).obj(); cfg["serial0"] != "/dev/ttyS0" {
			t.Errorf("pve9=%v: serial0 after the refused writes = %v", pve9, cfg["serial0"])
		}
		if r := root.form(http.MethodPut, "/nodes/pve1/qemu/100/config", url.Values{"arch": {"x86_64"}, "delete": {"serial0"}}); r.code != 200 {
			t.Errorf("pve9=%v: root@pam config write: %s", pve9, r.status)
		}
	}
}

// qemu-server's skiplock (config writes, resize, start, stop, shutdown, destroy) is root@pam's:
// "Only root may use this option." for anyone else, root@pam's API tokens included; root@pam
// passes a config lock with it.
func TestSkiplockRootOnly(t *testing.T) {
	token, root := permCluster(t, true)
	for _, tc := range []struct{ method, path string }{
		{http.MethodPut, "/nodes/pve1/qemu/100/config"},
		{http.MethodPut, "/nodes/pve1/qemu/100/resize"},
		{http.MethodPost, "/nodes/pve1/qemu/100/status/start"},
		{http.MethodDelete, "/nodes/pve1/qemu/100"},
	} {
		params := url.Values{"skiplock": {"1"}}
		switch tc.path {
		case "/nodes/pve1/qemu/100/config":
			params.Set("name", "b")
		case "/nodes/pve1/qemu/100/resize":
			params.Set("disk", "scsi0")
			params.Set("size", "8G")
		}
		if r := token.form(tc.method, tc.path, params); r.code != 400 || r.env.Errors["skiplock"] != "Only root may use this option." {
			t.Errorf("token %s %s with skiplock = %s %s", tc.method, tc.path, r.status, r.body)
		}
	}
	if r := root.form(http.MethodPut, "/nodes/pve1/qemu/100/config", url.Values{"lock": {"backup"}}); r.code != 200 {
		t.Fatalf("root@pam sets a lock: %s", r.status)
	}
	if r := token.form(http.MethodPut, "/nodes/pve1/qemu/100/config", url.Values{"name": {"b"}}); r.status != "500 VM is locked (backup)" {
		t.Errorf("token config write of a locked VM = %s", r.status)
	}
	if r := root.form(http.MethodPut, "/nodes/pve1/qemu/100/config", url.Values{"name": {"b"}, "skiplock": {"1"}}); r.code != 200 {
		t.Errorf("root@pam config write of a locked VM with skiplock = %s %s", r.status, r.body)
	}
}

// qemu-server destroy_vm's early checks come in this order: protection, an HA resource without
// purge, a running VM. With purge, delete_service_from_config removes the VM's HA resource
// and, on PVE 9 (pve-ha-manager 5), the resource from every HA rule, deleting the rules it
// was the last resource of.
func TestDestroyPurgesHARules(t *testing.T) {
	c, err := pvesim.ParseCluster([]byte(`
nodes:
  - {name: pve1, cpus: 8, memory_gib: 32}
  - {name: pve2, cpus: 8, memory_gib: 32}
guests:
  - {vmid: 100, node: pve1, name: a, status: running, config: {protection: 1}}
  - {vmid: 101, node: pve1, name: b}
ha_rules:
  - {rule: pin, type: node-affinity, resources: ["vm:100"], nodes: [pve1]}
  - {rule: apart, type: resource-affinity, affinity: negative, resources: ["vm:100", "vm:101"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	a := newAPI(t, pvesim.NewTestServer(t, c))
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:100"}, "state": {"started"}}))
	for _, want := range []string{
		"500 can't remove VM 100 - protection mode enabled",
		"500 unable to remove VM 100 - used in HA resources and purge parameter not set.",
	} {
		if r := a.form(http.MethodDelete, "/nodes/pve1/qemu/100", nil); r.status != want {
			t.Errorf("destroy = %s, want %s", r.status, want)
		}
		a.ok(a.form(http.MethodPut, "/nodes/pve1/qemu/100/config", url.Values{"delete": {"protection"}}))
	}
	if r := a.form(http.MethodDelete, "/nodes/pve1/qemu/100", url.Values{"purge": {"1"}}); r.status != "500 VM 100 is running - destroy failed" {
		t.Errorf("destroy of the running VM with purge = %s", r.status)
	}
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:101"}, "state": {"stopped"}}))
	if exit := a.task(a.form(http.MethodDelete, "/nodes/pve1/qemu/101", url.Values{"purge": {"1"}})); exit != "OK" {
		t.Fatalf("destroy with purge: %s", exit)
	}
	rules := map[string]any{}
	for _, rule := range a.ok(a.get("/cluster/ha/rules")).list() {
		rules[rule["rule"].(string)] = rule["resources"]
	}
	if want := map[string]any{"pin": "vm:100", "apart": "vm:100"}; !maps.Equal(rules, want) {
		t.Errorf("HA rules' resources after the purge of vm:101 = %v, want %v", rules, want)
	}
	if r := a.get("/cluster/ha/resources/vm:101"); r.code != 500 {
		t.Errorf("the purged HA resource vm:101 is still there: %s", r.body)
	}
}

// qemu-server's power calls take some parameters from root@pam alone, API tokens included
// ("Only root may use this option."): vm_start's stateuri, skiplock, migratedfrom,
// migration_type, migration_network, targetstorage and force-cpu (its $get_root_param), on PVE
// 9 also with-conntrack-state and nets-host-mtu, which PVE 8.2 does not define; vm_stop's
// skiplock, keepActive and migratedfrom; vm_shutdown's skiplock and keepActive.
func TestPowerCallsRootOnlyParameters(t *testing.T) {
	for _, pve9 := range []bool{false, true} {
		token, root := permCluster(t, pve9)
		for _, tc := range []struct {
			action, param, value string
		}{
			{"start", "migratedfrom", "pve1"},
			{"start", "force-cpu", "host"},
			{"start", "migration_type", "secure"},
			{"start", "targetstorage", "local-lvm"},
			{"stop", "keepActive", "1"},
			{"stop", "migratedfrom", "pve1"},
			{"shutdown", "keepActive", "1"},
		} {
			r := token.form(http.MethodPost, "/nodes/pve1/qemu/100/status/"+tc.action, url.Values{tc.param: {tc.value}})
			if r.code != http.StatusBadRequest || r.env.Errors[tc.param] != "Only root may use this option." {
				t.Errorf("PVE 9 %v: %s with %s=%s from a token: %s %s", pve9, tc.action, tc.param, tc.value, r.status, r.body)
			}
		}
		// root@pam may: the worker runs (and a stop of a stopped VM is no error).
		if r := root.form(http.MethodPost, "/nodes/pve1/qemu/100/status/stop", url.Values{"keepActive": {"1"}}); r.code != http.StatusOK {
			t.Errorf("PVE 9 %v: stop with keepActive as root@pam: %s %s", pve9, r.status, r.body)
		}
		for _, param := range []string{"with-conntrack-state", "nets-host-mtu"} {
			r := token.form(http.MethodPost, "/nodes/pve1/qemu/100/status/start", url.Values{param: {"1"}})
			want := "property is not defined in schema and the schema does not allow additional properties"
			if pve9 {
				want = "Only root may use this option."
			}
			if r.code != http.StatusBadRequest || r.env.Errors[param] != want {
				t.Errorf("PVE 9 %v: start with %s from a token: %s %s, want %q", pve9, param, r.status, r.body, want)
			}
		}
		if r := token.form(http.MethodPost, "/nodes/pve1/qemu/100/status/start", url.Values{"nets": {"1"}}); r.code != http.StatusBadRequest {
			t.Errorf("PVE 9 %v: start with nets, which qemu-server does not define: %s", pve9, r.status)
		}
	}
}

package pvesim_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// TestConfigRefusedAsPVERefusesIt sends values real PVE refuses, property strings key by
// key, and expects PVE's 400 with its message for the key.
func TestConfigRefusedAsPVERefusesIt(t *testing.T) {
	_, a := lab(t)
	tests := []struct{ key, value, want string }{
		{"net0", "virtio,bridge=vmbr0,tag=5000", "invalid format - format error\nnet0.tag: value must have a maximum value of 4094"},
		{"net0", "virtio,bridge=vmbr0,vlan=10", "invalid format - invalid key in comma-separated list property: vlan"},
		{"net0", "virtio2,bridge=vmbr0", "invalid format - format error\nnet0.model: value 'virtio2' does not have a value in the enumeration 'e1000, e1000-82540em, e1000-82544gc, e1000-82545em, e1000e, i82551, i82557b, i82559er, ne2k_isa, ne2k_pci, pcnet, rtl8139, virtio, vmxnet3'"},
		{"net0", "virtio=01:00:00:00:00:01,bridge=vmbr0", "invalid format - format error\nnet0.macaddr: invalid format - value does not look like a valid unicast MAC address"},
		{"net0", "bridge=vmbr0", "invalid format - format error\nnet0.model: property is missing and it is not optional"},
		{"net0", "virtio,virtio", "invalid format - duplicate key in comma-separated list property: model"},
		{"net0", "virtio,firewall=maybe", "invalid format - format error\nnet0.firewall: type check ('boolean') failed - got 'maybe'"},
		{"ipconfig0", "gw=10.0.0.1", "invalid format - format error\nipconfig0.ip: missing property required by 'ipconfig0.gw'"},
		{"ipconfig0", "ip=10.0.0.5", "invalid format - format error\nipconfig0.ip: invalid format - value does not look like a valid ipv4 network configuration"},
		{"ipconfig0", "ip=dhcp,ip6=fe80::1/200", "invalid format - format error\nipconfig0.ip6: invalid format - value does not look like a valid ipv6 network configuration"},
		{"scsi0", "local-lvm:8,discard=yes", "invalid format - format error\nscsi0.discard: value 'yes' does not have a value in the enumeration 'ignore, on'"},
		{"scsi0", "local-lvm:8,cache=fast", "invalid format - format error\nscsi0.cache: value 'fast' does not have a value in the enumeration 'none, writethrough, writeback, unsafe, directsync'"},
		{"virtio0", "local-lvm:8,ssd=1", "invalid format - invalid key in comma-separated list property: ssd"},
		{"sata0", "local-lvm:8,iothread=1", "invalid format - invalid key in comma-separated list property: iothread"},
		{"scsi0", "local-lvm:8,replicate=maybe", "invalid format - format error\nscsi0.replicate: type check ('boolean') failed - got 'maybe'"},
		{"scsi0", "local-lvm:8,queues=1", "invalid format - format error\nscsi0.queues: value must have a minimum value of 2"},
		{"scsi0", "local lvm:8", "invalid format - format error\nscsi0.file: invalid format - unable to parse volume ID 'local lvm:8'"},
		{"virtio0", "local-lvm:vm-100-disk-9,media=cdrom", "unable to parse drive options"},
		{"cpu", "nosuchcpu", "invalid format - Built-in cputype 'nosuchcpu' is not defined (missing 'custom-' prefix?)"},
		{"cpu", "host,flags=+avx512", "invalid format - VM-specific CPU flags must be a subset of: nested-virt, md-clear, pcid, spec-ctrl, ssbd, ibpb, virt-ssbd, amd-ssbd, amd-no-ssb, pdpe1gb, hv-tlbflush, hv-evmcs, aes"},
		{"agent", "type=virtio", "invalid format - format error\nagent.enabled: property is missing and it is not optional"},
		{"agent", "1,type=pci", "invalid format - format error\nagent.type: value 'pci' does not have a value in the enumeration 'virtio, isa'"},
		{"efidisk0", "local-lvm:1,efitype=8m", "invalid format - format error\nefidisk0.efitype: value '8m' does not have a value in the enumeration '2m, 4m'"},
		{"serial0", "tcp:1234", "value does not match the regex pattern"},
		{"serial4", "socket", "property is not defined in schema and the schema does not allow additional properties"},
		{"vga", "std,memory=1024", "invalid format - format error\nvga.memory: value must have a maximum value of 512"},
		{"vga", "vga3", "invalid format - format error\nvga.type: value 'vga3' does not have a value in the enumeration 'cirrus, qxl, qxl2, qxl3, qxl4, none, serial0, serial1, serial2, serial3, std, virtio, virtio-gl, vmware'"},
		{"startup", "order=1,after=2", "invalid format - unable to parse startup options"},
		{"boot", "order=scsi0;efidisk0", "invalid format - format error\nboot.order: invalid format - invalid boot device 'efidisk0'"},
		{"boot", "order=scsi31", "invalid format - format error\nboot.order: invalid format - invalid boot device 'scsi31'"},
		{"machine", "q36", "invalid format - format error\nmachine.type: value does not match the regex pattern"},
		{"bios", "uefi", "value 'uefi' does not have a value in the enumeration 'seabios, ovmf'"},
		{"scsihw", "virtio", "value 'virtio' does not have a value in the enumeration 'lsi, lsi53c810, virtio-scsi-pci, virtio-scsi-single, megasas, pvscsi'"},
		{"cicustom", "user=snippets/user.yaml", "invalid format - format error\ncicustom.user: invalid format - unable to parse volume ID 'snippets/user.yaml'"},
		{"cicustom", "users=local:snippets/u.yaml", "invalid format - invalid key in comma-separated list property: users"},
		{"cpulimit", "200", "value must have a maximum value of 128"},
		{"cpuunits", "0", "value must have a minimum value of 1"},
		{"ostype", "linux", "value 'linux' does not have a value in the enumeration 'other, wxp, w2k, w2k3, w2k8, wvista, win7, win8, win10, win11, l24, l26, solaris'"},
		{"hotplug", "network,gpu", "invalid format - invalid hotplug feature 'gpu'"},
		{"name", "a..b", "invalid format - value does not look like a valid DNS name"},
		{"meta", "creation-qemu=9.0.2", "property is not defined in schema and the schema does not allow additional properties"},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			r := a.form(http.MethodPost, "/nodes/pve1/qemu", url.Values{"vmid": {"150"}, tt.key: {tt.value}})
			if r.status != "400 Parameter verification failed." {
				t.Fatalf("status %q, want 400 (%s)", r.status, r.body)
			}
			if got := r.env.Errors[tt.key]; got != tt.want {
				t.Errorf("%s:\n got %q\nwant %q", tt.key, got, tt.want)
			}
		})
	}
	if r := a.get("/cluster/nextid?vmid=150"); r.code != http.StatusOK {
		t.Fatalf("a refused create left VM 150 behind: %s", r.status)
	}
}

// TestConfigStoredAsPVEPrintsIt checks that accepted values are stored the way PVE writes
// them: drives and NICs re-printed with their keys sorted, booleans 1/0 and sizes in the
// largest whole unit; an EFI disk sized by its vars image (on PVE 9 also marked with the 2023
// certificates when keys are pre-enrolled: TestSchemaPerRelease); other keys verbatim.
func TestConfigStoredAsPVEPrintsIt(t *testing.T) {
	s, a := lab(t)
	exit := a.task(a.form(http.MethodPost, "/nodes/pve2/qemu", url.Values{
		"vmid": {"150"}, "bios": {"ovmf"}, "machine": {"q35"}, "scsihw": {"virtio-scsi-single"},
		"scsi0":    {"local-lvm:8,ssd=on,discard=on,iothread=true,cache=writeback,backup=0,replicate=no"},
		"efidisk0": {"local-lvm:1,efitype=4m,pre-enrolled-keys=1"}, "serial0": {"socket"}, "vga": {"serial0"},
		"net0": {"virtio=BC:24:11:00:00:01,tag=10,bridge=vmbr0,firewall=yes"}, "agent": {"enabled=1,fstrim_cloned_disks=1"},
		"startup": {"order=2,up=30"}, "boot": {"order=scsi0;net0"}, "cicustom": {"user=local:snippets/user.yaml"},
		"ipconfig0": {"ip=10.0.0.5/24,gw=10.0.0.1"}, "protection": {"1"}, "cpu": {"x86-64-v2-AES,flags=+aes"},
	}))
	if exit != "OK" {
		t.Fatalf("create task: %s", exit)
	}
	g := s.MustGuest(t, 150)
	want := map[string]string{
		"scsi0":    "local-lvm:vm-150-disk-0,backup=0,cache=writeback,discard=on,iothread=1,replicate=0,size=8G,ssd=1",
		"efidisk0": "local-lvm:vm-150-disk-1,efitype=4m,pre-enrolled-keys=1,size=4M",
		"net0":     "virtio=BC:24:11:00:00:01,bridge=vmbr0,firewall=1,tag=10",
		"agent":    "enabled=1,fstrim_cloned_disks=1", "startup": "order=2,up=30", "boot": "order=scsi0;net0",
		"cicustom": "user=local:snippets/user.yaml", "serial0": "socket", "vga": "serial0", "protection": "1",
	}
	for k, v := range want {
		if g.Config[k] != v {
			t.Errorf("config %s = %q, want %q", k, g.Config[k], v)
		}
	}
}

// qemu-server's schema per release: PVE 8.2.4 runs qemu-server 8.2.1, which does not define
// amd-sev (added in 8.2.6), virtiofsN (8.3.10), running-nets-host-mtu (9.0.19), intel-tdx and
// allow-ksm (after 9.0.26), efidisk0's ms-cert (after 9.0.26, which marks an EFI disk with
// pre-enrolled keys ms-cert=2023k), nor create's ha-managed (9.0.23: "Add the VM as a HA
// resource after it was created", ha-manager add vm:N --state started|stopped, before the
// autostart): PVE 8.2 refuses them as properties not defined in the schema. PVE 9 takes them.
func TestSchemaPerRelease(t *testing.T) {
	const notDefined = "property is not defined in schema and the schema does not allow additional properties"
	pve8 := newAPI(t, pvesim.NewTestServer(t, labCluster(t)))
	for key, value := range map[string]string{
		"amd-sev": "type=std", "virtiofs0": "dirid=share", "running-nets-host-mtu": "1", "intel-tdx": "type=tdx",
		"allow-ksm": "0", "ha-managed": "1",
	} {
		r := pve8.form(http.MethodPost, "/nodes/pve1/qemu", url.Values{"vmid": {"150"}, key: {value}})
		if r.code != 400 || r.env.Errors[key] != notDefined {
			t.Errorf("PVE 8 create with %s=%s = %s %s, want 400 %s: %s", key, value, r.status, r.body, key, notDefined)
		}
	}
	r := pve8.form(http.MethodPost, "/nodes/pve1/qemu", url.Values{"vmid": {"150"}, "efidisk0": {"local-lvm:1,efitype=4m,ms-cert=2023"}})
	if want := "invalid format - invalid key in comma-separated list property: ms-cert"; r.code != 400 || r.env.Errors["efidisk0"] != want {
		t.Errorf("PVE 8 create with an efidisk0 ms-cert = %s %s, want 400 efidisk0: %s", r.status, r.body, want)
	}

	s9 := pvesim.NewTestServer(t, pvesim.LoadTestCluster(t, "../../examples/lab/cluster.yaml"))
	pve9 := newAPI(t, s9)
	if exit := pve9.task(pve9.form(http.MethodPost, "/nodes/pve1/qemu", url.Values{"vmid": {"150"}, "allow-ksm": {"0"},
		"efidisk0": {"local-lvm:1,efitype=4m,pre-enrolled-keys=1"}, "ha-managed": {"1"}})); exit != "OK" {
		t.Fatalf("PVE 9 create: %s", exit)
	}
	if got := s9.MustGuest(t, 150).Config["efidisk0"]; got != "local-lvm:vm-150-disk-0,efitype=4m,ms-cert=2023k,pre-enrolled-keys=1,size=4M" {
		t.Errorf("PVE 9 efidisk0 = %q, want it marked ms-cert=2023k", got)
	}
	res := pve9.ok(pve9.get("/cluster/ha/resources/vm:150")).obj()
	if res["state"] != "stopped" {
		t.Errorf("PVE 9 create with ha-managed: HA resource %v, want vm:150 requested stopped", res)
	}
}

// qemu-server update_vm_api checks revert, then delete, before anything else of a config
// write: options must exist in the release's schema ("unknown option"), a key cannot be set
// and deleted or reverted, nor deleted and reverted, at once (a revert of a set key is
// reported under delete, as PVE does); cdrom is ide2. A revert drops the key's pending change.
func TestConfigDeleteAndRevert(t *testing.T) {
	s, a := lab(t) // PVE 8
	for _, tc := range []struct {
		params      url.Values
		param, want string
	}{
		{url.Values{"delete": {"nope"}}, "delete", "unknown option 'nope'"},
		{url.Values{"delete": {"allow-ksm"}}, "delete", "unknown option 'allow-ksm'"}, // PVE 9's
		{url.Values{"revert": {"nope"}}, "revert", "unknown option 'nope'"},
		{url.Values{"name": {"x"}, "delete": {"name"}}, "delete", "you can't use '-name' and -delete name' at the same time"},
		{url.Values{"name": {"x"}, "revert": {"name"}}, "delete", "you can't use '-name' and -revert name' at the same time"},
		{url.Values{"delete": {"name"}, "revert": {"name"}}, "revert", "you can't use '-delete name' and -revert name' at the same time"},
	} {
		if r := a.form(http.MethodPut, "/nodes/pve1/qemu/100/config", tc.params); r.code != 400 || r.env.Errors[tc.param] != tc.want {
			t.Errorf("config write %v = %s %s, want 400 %s: %s", tc.params, r.status, r.body, tc.param, tc.want)
		}
	}
	// A running VM keeps a cores change pending; reverting it leaves the current value.
	a.task(a.form(http.MethodPost, "/nodes/pve2/qemu/102/status/start", nil))
	cores := s.MustGuest(t, 102).Config["cores"]
	a.ok(a.form(http.MethodPut, "/nodes/pve2/qemu/102/config", url.Values{"cores": {"3"}}))
	if pending := a.ok(a.get("/nodes/pve2/qemu/102/pending")).list(); !hasPending(pending, "cores") {
		t.Fatalf("cores not pending on the running VM: %v", pending)
	}
	a.ok(a.form(http.MethodPut, "/nodes/pve2/qemu/102/config", url.Values{"revert": {"cores"}}))
	if pending := a.ok(a.get("/nodes/pve2/qemu/102/pending")).list(); hasPending(pending, "cores") {
		t.Errorf("cores still pending after the revert: %v", pending)
	}
	if got := s.MustGuest(t, 102).Config["cores"]; got != cores {
		t.Errorf("cores after the revert = %q, want %q", got, cores)
	}
}

// hasPending tells whether a pending listing has a pending value or deletion for key.
func hasPending(rows []map[string]any, key string) bool {
	for _, row := range rows {
		if row["key"] == key && (row["pending"] != nil || row["delete"] != nil) {
			return true
		}
	}
	return false
}

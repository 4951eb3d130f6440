package pvesim_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// templateCluster has a VM with a disk on each kind of storage that matters to
// template_create: lvmthin and rbd have pve-storage's 'template' feature, plain LVM has not.
// extra is appended to the cluster file ("ha_rules: []" makes it PVE 9).
func templateCluster(t *testing.T, extra ...string) (*pvesim.Server, *api) {
	t.Helper()
	return simOf(t, `
nodes:
  - {name: pve1, cpus: 8, memory_gib: 32}
  - {name: pve2, cpus: 8, memory_gib: 32}
storages:
  - {name: local-lvm, type: lvmthin, content: [images], size_gib: 100, used_gib: 13}
  - {name: thick, type: lvm, content: [images], size_gib: 100, used_gib: 4}
  - {name: ceph, type: rbd, content: [images], shared: true, size_gib: 100, used_gib: 1}
guests:
  - vmid: 200
    node: pve1
    name: golden
    config:
      scsi0: "local-lvm:vm-200-disk-0,iothread=1,size=8G"
      scsi1: "thick:vm-200-disk-1,size=4G"
      efidisk0: "ceph:vm-200-disk-2,efitype=4m,size=1G"
      ide2: "local-lvm:vm-200-cloudinit,media=cdrom"
      unused0: "local-lvm:vm-200-disk-3"
  - {vmid: 201, node: pve1, name: busy, status: running, config: {scsi0: "local-lvm:vm-201-disk-0,size=4G"}}
`+strings.Join(extra, "\n"))
}

// qemu-server API2/Qemu.pm 'template' (POST .../template; PVE 8.2 and 9 alike) forks a
// qmtemplate worker that sets template: 1 and runs QemuServer.pm template_create: each drive
// that is no cd-rom (the cloud-init drive is one there) and whose volume has the storage's
// 'template' feature becomes a base volume (pve-storage vdisk_create_base: LvmThinPlugin and
// RBDPlugin create_base rename vm-N-disk-M to base-N-disk-M); a plain LVM volume (LVMPlugin
// has no 'template' feature) and detached volumes stay as they are. The VM is then a linked
// clone source: clone_vm's default for a template is a linked clone of its base volumes.
func TestTemplateConvertsDisksToBaseVolumes(t *testing.T) {
	s, a := templateCluster(t)
	upid := a.ok(a.form(http.MethodPost, "/nodes/pve1/qemu/200/template", nil)).str()
	if !strings.Contains(upid, ":qmtemplate:200:") {
		t.Errorf("UPID %q, want a qmtemplate task of VM 200", upid)
	}
	if exit, _ := a.wait(upid)["exitstatus"].(string); exit != "OK" {
		t.Fatalf("template: %s", exit)
	}
	got := s.MustGuest(t, 200).Config
	for k, want := range map[string]string{
		"template": "1",
		"scsi0":    "local-lvm:base-200-disk-0,iothread=1,size=8G",
		"scsi1":    "thick:vm-200-disk-1,size=4G",
		"efidisk0": "ceph:base-200-disk-2,efitype=4m,size=1G",
		"ide2":     "local-lvm:vm-200-cloudinit,media=cdrom",
		"unused0":  "local-lvm:vm-200-disk-3",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	// The renamed volume is what the storage holds, with its size; the old name is gone.
	if info := a.ok(a.get("/nodes/pve1/storage/local-lvm/content/local-lvm:base-200-disk-0")).obj(); info["size"] != 8.0*(1<<30) {
		t.Errorf("base volume = %v", info)
	}
	if r := a.get("/nodes/pve1/storage/local-lvm/content/local-lvm:vm-200-disk-0"); r.code == http.StatusOK {
		t.Errorf("vm-200-disk-0 still there: %s", r.body)
	}
	if used := a.ok(a.get("/nodes/pve1/storage/local-lvm/status")).obj()["used"]; used != 13.0*(1<<30) {
		t.Errorf("local-lvm used = %v, want the 13 GiB it had (a rename allocates nothing)", used)
	}
	row := a.row("qemu/200")
	if row["template"] != 1.0 {
		t.Errorf("resources row = %v", row)
	}
	// A linked clone (the default for a template) needs every disk on a base volume: the LVM
	// one is not (TestLinkedCloneNeedsBaseVolumes clones one that is).
	if r := a.form(http.MethodPost, "/nodes/pve1/qemu/200/clone", url.Values{"newid": {"300"}}); r.status != "500 Linked clone feature is not supported for drive 'scsi1'" {
		t.Errorf("linked clone with a disk on LVM = %s", r.status)
	}
	// Converting again is refused; one disk of a template may still be converted.
	if r := a.form(http.MethodPost, "/nodes/pve1/qemu/200/template", nil); r.status != "500 you can't convert a template to a template" {
		t.Errorf("template of a template = %s", r.status)
	}
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve1/qemu/200/template", url.Values{"disk": {"scsi1"}})); exit != "OK" {
		t.Errorf("template of a template's disk: %s", exit)
	}
	if got := s.MustGuest(t, 200).Config["scsi1"]; got != "thick:vm-200-disk-1,size=4G" {
		t.Errorf("scsi1 on LVM = %q, want it unchanged (no 'template' feature)", got)
	}
}

// With disk, template_create converts only that drive ("If you want to convert only 1 disk to
// base image"), though the VM becomes a template all the same.
func TestTemplateOneDisk(t *testing.T) {
	s, a := templateCluster(t)
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve1/qemu/200/template", url.Values{"disk": {"efidisk0"}})); exit != "OK" {
		t.Fatalf("template efidisk0: %s", exit)
	}
	got := s.MustGuest(t, 200).Config
	if got["template"] != "1" || got["efidisk0"] != "ceph:base-200-disk-2,efitype=4m,size=1G" || got["scsi0"] != "local-lvm:vm-200-disk-0,iothread=1,size=8G" {
		t.Errorf("config = %v", got)
	}
}

// The refusals of 'template': parameters against its schema (only disk, an enum of
// valid_drive_names) with a 400; then $load_and_check before the worker forks, in its order:
// check_lock ("VM is locked (clone)"), a template without disk, a running VM. The worker takes
// the config's file lock (lock_config): while a clone reads the VM it holds that lock, and the
// task fails on its timeout instead.
func TestTemplateRefusals(t *testing.T) {
	s, a := templateCluster(t)
	for _, tc := range []struct {
		path   string
		params url.Values
		want   string
		field  string
	}{
		{"/nodes/pve1/qemu/200/template", url.Values{"disk": {"unused0"}}, "400 Parameter verification failed.", "disk"},
		{"/nodes/pve1/qemu/200/template", url.Values{"disk": {"scsi31"}}, "400 Parameter verification failed.", "disk"},
		{"/nodes/pve1/qemu/200/template", url.Values{"full": {"1"}}, "400 Parameter verification failed.", "full"},
		{"/nodes/pve1/qemu/201/template", nil, "500 you can't convert a VM to template if VM is running", ""},
		{"/nodes/pve2/qemu/200/template", nil, "500 Configuration file 'nodes/pve2/qemu-server/200.conf' does not exist", ""},
	} {
		r := a.form(http.MethodPost, tc.path, tc.params)
		if r.status != tc.want || tc.field != "" && r.env.Errors[tc.field] == "" {
			t.Errorf("POST %s %v = %s %s, want %s", tc.path, tc.params, r.status, r.body, tc.want)
		}
	}
	if r := a.form(http.MethodPost, "/nodes/pve1/qemu/200/template", url.Values{"disk": {"sata6"}}); !strings.HasPrefix(r.env.Errors["disk"], "value 'sata6' does not have a value in the enumeration 'ide0, ide1, ide2, ide3, scsi0,") ||
		!strings.HasSuffix(r.env.Errors["disk"], "sata5, efidisk0, tpmstate0'") {
		t.Errorf("disk sata6: %s", r.body)
	}
	s.HoldTasks("qmclone")
	a.ok(a.form(http.MethodPost, "/nodes/pve1/qemu/200/clone", url.Values{"newid": {"301"}, "full": {"1"}}))
	if r := a.form(http.MethodPost, "/nodes/pve1/qemu/301/template", nil); r.status != "500 VM is locked (clone)" {
		t.Errorf("template of a VM being created = %s", r.status)
	}
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve1/qemu/200/template", nil)); exit != "can't lock file '/var/lock/qemu-server/lock-200.conf' - got timeout" {
		t.Errorf("template while a clone reads the VM: %s", exit)
	}
	s.ReleaseTasks()
	if got := s.MustGuest(t, 200).Config; got["template"] != "" || got["scsi0"] != "local-lvm:vm-200-disk-0,iothread=1,size=8G" {
		t.Errorf("a refused conversion changed the config: %v", got)
	}
}

// The worker checks again, under the lock, what it checked before it forked: a VM started
// while the task waited is not converted.
func TestTemplateWorkerChecksAgain(t *testing.T) {
	s, a := templateCluster(t)
	s.HoldTasks("qmtemplate")
	upid := a.ok(a.form(http.MethodPost, "/nodes/pve1/qemu/200/template", nil)).str()
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve1/qemu/200/status/start", nil)); exit != "OK" {
		t.Fatalf("start: %s", exit)
	}
	s.ReleaseTasks()
	if exit := a.wait(upid)["exitstatus"]; exit != "you can't convert a VM to template if VM is running" {
		t.Errorf("template of a VM started meanwhile: %v", exit)
	}
	if s.MustGuest(t, 200).Config["template"] != "" {
		t.Error("the VM became a template")
	}
}

// 'template' does not look at HA (neither API2/Qemu.pm nor template_create calls
// PVE::HA::Config): a stopped HA-managed VM is converted and stays HA-managed; a running one
// is refused for running.
func TestTemplateOfHAManagedVM(t *testing.T) {
	s, a := templateCluster(t)
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:200"}, "state": {"stopped"}}))
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:201"}, "state": {"started"}}))
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve1/qemu/200/template", nil)); exit != "OK" {
		t.Errorf("template of a stopped HA-managed VM: %s", exit)
	}
	if s.MustGuest(t, 200).Config["template"] != "1" {
		t.Error("VM 200 is no template")
	}
	a.ok(a.get("/cluster/ha/resources/vm:200"))
	if r := a.form(http.MethodPost, "/nodes/pve1/qemu/201/template", nil); r.status != "500 you can't convert a VM to template if VM is running" {
		t.Errorf("template of a running HA-managed VM = %s", r.status)
	}
}

// qemu-server create_disks: a disk created for a template (is_template of the create's
// parameters, or of the config a write changes) becomes a base volume at once
// (vdisk_create_base), which LVMPlugin's create_base refuses ("can't create base images in lvm
// storage"); pve-storage's get_next_vm_diskname counts base- and vm- names alike. bpg v0.80.0
// creates a template from scratch this way (template: 1 in the create call).
func TestCreateTemplateAllocatesBaseVolumes(t *testing.T) {
	s, a := templateCluster(t)
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve1/qemu", url.Values{"vmid": {"210"}, "template": {"1"}, "scsi0": {"local-lvm:4"}, "ide2": {"local-lvm:cloudinit"}})); exit != "OK" {
		t.Fatalf("create: %s", exit)
	}
	a.ok(a.form(http.MethodPut, "/nodes/pve1/qemu/210/config", url.Values{"scsi1": {"local-lvm:2"}}))
	got := s.MustGuest(t, 210).Config
	if got["scsi0"] != "local-lvm:base-210-disk-0,size=4G" || got["scsi1"] != "local-lvm:base-210-disk-1,size=2G" || got["ide2"] != "local-lvm:vm-210-cloudinit,media=cdrom" {
		t.Errorf("template created with disks: %v", got)
	}
	// In the qmcreate worker (create_disks), which fails and removes the VM.
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve1/qemu", url.Values{"vmid": {"211"}, "template": {"1"}, "scsi0": {"thick:4"}})); exit != "unable to create VM 211 - can't create base images in lvm storage" {
		t.Errorf("template with a disk on LVM: task %s", exit)
	}
	if _, exists := s.Guest(211); exists {
		t.Error("VM 211 exists after its create failed")
	}
	// A VM's new disk next to a base volume of its own takes the next number.
	a.ok(a.form(http.MethodPut, "/nodes/pve1/qemu/210/config", url.Values{"delete": {"template"}}))
	a.ok(a.form(http.MethodPut, "/nodes/pve1/qemu/210/config", url.Values{"scsi2": {"local-lvm:1"}}))
	if got := s.MustGuest(t, 210).Config["scsi2"]; got != "local-lvm:vm-210-disk-2,size=1G" {
		t.Errorf("scsi2 = %q", got)
	}
}

// clone_vm refuses a linked clone of a drive whose volume lacks the 'clone' feature
// (volume_has_feature: a base volume on lvmthin, rbd, zfs, file storages): a VM made a template
// by writing template: 1 (what bpg v0.80.0 does for a clone with template = true) keeps its
// vm- volumes, so it is the template call that makes it a linked clone source. The message is
// qemu-server 8.2's on PVE 8 and names the volume from 8.3 on (PVE 9).
func TestLinkedCloneNeedsBaseVolumes(t *testing.T) {
	for _, tc := range []struct {
		release string
		want    map[string]string
	}{
		{"", map[string]string{"efidisk0": "500 Linked clone feature is not supported for drive 'efidisk0'",
			"scsi0": "500 Linked clone feature is not supported for drive 'scsi0'"}},
		{"ha_rules: []", map[string]string{"efidisk0": "500 Linked clone feature is not supported for 'ceph:vm-200-disk-2' (efidisk0)",
			"scsi0": "500 Linked clone feature is not supported for 'local-lvm:vm-200-disk-0' (scsi0)"}},
	} {
		s, a := templateCluster(t, tc.release)
		a.ok(a.form(http.MethodPut, "/nodes/pve1/qemu/200/config", url.Values{"template": {"1"}, "delete": {"scsi1"}}))
		// clone_vm checks the drives in key order: efidisk0 first.
		for _, disk := range []string{"efidisk0", "scsi0"} {
			r := a.form(http.MethodPost, "/nodes/pve1/qemu/200/clone", url.Values{"newid": {"300"}})
			if want := tc.want[disk]; r.status != want {
				t.Errorf("%q: linked clone with %s on a vm- volume = %s, want %s", tc.release, disk, r.status, want)
			}
			if exit := a.task(a.form(http.MethodPost, "/nodes/pve1/qemu/200/template", url.Values{"disk": {disk}})); exit != "OK" {
				t.Fatalf("template %s: %s", disk, exit)
			}
		}
		if exit := a.task(a.form(http.MethodPost, "/nodes/pve1/qemu/200/clone", url.Values{"newid": {"300"}})); exit != "OK" {
			t.Errorf("%q: linked clone of base volumes: %s", tc.release, exit)
		}
		if got := s.MustGuest(t, 300).Config["scsi0"]; got != "local-lvm:vm-300-disk-0,iothread=1,size=8G" {
			t.Errorf("%q: clone scsi0 = %q", tc.release, got)
		}
	}
}

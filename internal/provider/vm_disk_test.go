package provider

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/disk"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/firmware"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

func TestDiskSizeGiB(t *testing.T) {
	for value, want := range map[string]int64{
		"local-lvm:vm-100-disk-0,size=32G":              32,
		"ceph:vm-100-disk-0,iothread=1,size=1T":         1024,
		"local-lvm:vm-100-disk-1,size=1536M":            2, // rounded up: never report less than there is
		"local:100/vm-100-disk-0.qcow2,size=8589934592": 8,
		"local-lvm:vm-100-disk-0":                       0,
	} {
		if got := disk.SizeGiB(value); got != want {
			t.Errorf("diskSizeGiB(%q) = %d, want %d", value, got, want)
		}
	}
}

func TestAddDisks(t *testing.T) {
	diskOf := func(slot, storage string, size int64) disk.Model {
		d := disk.Model{Slot: types.StringValue(slot), Storage: types.StringUnknown(), Size: types.Int64Value(size)}
		if storage != "" {
			d.Storage = types.StringValue(storage)
		}
		return d
	}
	disks := []disk.Model{diskOf("scsi0", "", 20), diskOf("scsi1", "", 10), diskOf("scsi2", "local-lvm", 5), diskOf("scsi3", "", 8)}
	current := map[string]string{"scsi0": "ceph:vm-101-disk-0,size=8G", "scsi3": "local-lvm:vm-101-disk-3,size=8G"}
	set := map[string]string{}
	grow := disk.AddDisks(disks, nil, current, set, "ceph")
	if want := map[string]string{"scsi1": "ceph:10", "scsi2": "local-lvm:5"}; !reflect.DeepEqual(set, want) {
		t.Errorf("set = %v, want %v (new disks on their own storage, else the scheduler's)", set, want)
	}
	if len(grow) != 1 || grow[0].Slot.ValueString() != "scsi0" {
		t.Errorf("grow = %v, want scsi0 only (scsi3 keeps its size)", grow)
	}
	var storages []string
	for _, d := range disks {
		storages = append(storages, d.Storage.ValueString())
	}
	if want := []string{"ceph", "ceph", "local-lvm", "local-lvm"}; !reflect.DeepEqual(storages, want) {
		t.Errorf("storages = %v, want %v (an existing disk reports where it is)", storages, want)
	}
}

func TestRemovedDisks(t *testing.T) {
	state := []disk.Model{{Slot: types.StringValue("scsi0")}, {Slot: types.StringValue("scsi1")}}
	plan := []disk.Model{{Slot: types.StringValue("scsi1")}, {Slot: types.StringValue("virtio0")}}
	if got := disk.RemovedDisks(state, plan); !reflect.DeepEqual(got, []string{"scsi0"}) {
		t.Fatalf("removedDisks = %v, want [scsi0]", got)
	}
}

// optDisk is a disk in slot with options given as PVE-style flags: "discard", "!backup",
// "cache=writeback"; the rest null.
func optDisk(slot string, size int64, opts ...string) disk.Model {
	d := disk.Model{Slot: types.StringValue(slot), Storage: types.StringNull(), Size: types.Int64Value(size)}
	for _, o := range opts {
		if c, ok := strings.CutPrefix(o, "cache="); ok {
			d.Cache = types.StringValue(c)
			continue
		}
		name, off := strings.CutPrefix(o, "!")
		for _, f := range disk.Flags {
			if f.Key == name {
				*f.Field(&d) = types.BoolValue(!off)
			}
		}
	}
	return d
}

// New disks carry their options, PVE's defaults left out; existing disks are rewritten on
// their volume only when an option changes, keeping what they have that the plan does not
// set, and an option the last apply set and the plan drops goes back to PVE's default.
func TestAddDisksOptions(t *testing.T) {
	current := map[string]string{
		"scsi0": "ceph:vm-101-disk-0,backup=0,discard=on,size=8G", // as the template had it
		"scsi1": "ceph:vm-101-disk-1,discard=on,size=8G",
		"scsi2": "ceph:vm-101-disk-2,cache=writeback,size=8G,ssd=1",
		"scsi3": "ceph:vm-101-disk-3,size=8G",
		"scsi4": "ceph:vm-101-disk-4,discard=on,size=8G",
	}
	state := []disk.Model{optDisk("scsi2", 8, "ssd", "cache=writeback")}
	disks := []disk.Model{
		optDisk("scsi0", 8, "ssd", "iothread"),   // adds to the template's options
		optDisk("scsi1", 8, "discard", "backup"), // already so: backup=1 is PVE's default
		optDisk("scsi2", 8),                      // both dropped from the configuration
		optDisk("scsi3", 20, "!replicate"),       // grown and changed: the new size is written
		optDisk("scsi4", 20, "discard"),          // grown only: the resize writes the size
		optDisk("virtio0", 4, "discard", "!backup", "iothread", "cache=none", "replicate"),
		optDisk("sata0", 4, "ssd", "!discard", "backup"),
	}
	set := map[string]string{}
	grow := disk.AddDisks(disks, state, current, set, "local-lvm")
	want := map[string]string{
		"scsi0":   "ceph:vm-101-disk-0,backup=0,discard=on,iothread=1,size=8G,ssd=1",
		"scsi2":   "ceph:vm-101-disk-2,size=8G",
		"scsi3":   "ceph:vm-101-disk-3,replicate=0,size=20G",
		"virtio0": "local-lvm:4,backup=0,cache=none,discard=on,iothread=1",
		"sata0":   "local-lvm:4,ssd=1",
	}
	if !reflect.DeepEqual(set, want) {
		t.Errorf("set:\n got %v\nwant %v", set, want)
	}
	if len(grow) != 2 || grow[0].Slot.ValueString() != "scsi3" || grow[1].Slot.ValueString() != "scsi4" {
		t.Errorf("grow = %v, want scsi3 and scsi4", grow)
	}
}

// Refresh reads back the options a disk manages, each as PVE means it (absent backup and
// replicate are true, discard=ignore is false), and leaves the others null; an import
// manages every option the disk has.
func TestReadDiskOptions(t *testing.T) {
	cfg := map[string]string{
		"scsi0":   "ceph:vm-101-disk-0,discard=ignore,iothread=1,size=8G",
		"scsi1":   "ceph:vm-101-disk-1,backup=0,cache=unsafe,discard=on,replicate=0,size=8G,ssd=1",
		"virtio0": "ceph:vm-101-disk-2,size=4G",
		"ide2":    "ceph:vm-101-cloudinit,media=cdrom",
	}
	managed := []disk.Model{optDisk("scsi0", 8, "discard", "backup", "replicate", "cache=none"), optDisk("scsi1", 8, "ssd")}
	got := disk.Read(managed, cfg)
	want := []disk.Model{optDisk("scsi0", 8, "!discard", "backup", "replicate"), optDisk("scsi1", 8, "ssd")}
	for i := range want {
		want[i].Storage = types.StringValue("ceph")
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("refresh:\n got %+v\nwant %+v (cache removed outside Terraform reads null)", got, want)
	}
	imported := disk.Import(cfg, []string{"ide2", "scsi0", "scsi1", "virtio0"})
	want = []disk.Model{optDisk("scsi0", 8, "!discard", "iothread"), optDisk("scsi1", 8, "!backup", "cache=unsafe", "discard", "!replicate", "ssd"), optDisk("virtio0", 4)}
	for i := range want {
		want[i].Storage = types.StringValue("ceph")
	}
	if !reflect.DeepEqual(imported, want) {
		t.Errorf("import:\n got %+v\nwant %+v", imported, want)
	}
	// What import reads, written back, changes nothing.
	set := map[string]string{}
	disk.AddDisks(imported, nil, cfg, set, "ceph")
	if len(set) != 0 {
		t.Errorf("an imported VM's disks would be rewritten: %v", set)
	}
}

func TestValidateDiskOptions(t *testing.T) {
	var diags diag.Diagnostics
	disk.Validate([]disk.Model{optDisk("virtio0", 8, "!ssd"), optDisk("sata0", 8, "iothread"), optDisk("scsi0", 8, "ssd", "iothread"),
		optDisk("virtio1", 8, "iothread"), optDisk("ide0", 8, "ssd")}, &diags)
	got := map[string]string{}
	for _, d := range diags {
		if p, ok := d.(diag.DiagnosticWithPath); ok {
			got[p.Path().String()] = d.Summary()
		}
	}
	want := map[string]string{
		"disk[0].ssd":      "ssd is not available on virtio disks",
		"disk[1].iothread": "iothread is only available on scsi and virtio disks",
	}
	if !reflect.DeepEqual(got, want) || len(diags) != len(want) {
		t.Errorf("diagnostics %v, want %v", diags, want)
	}
}

// iothread on a scsi disk warns unless the controller is virtio-scsi-single; the controller
// is the plan's, the VM's, or for a new VM the clone source's (lsi when it has none) or the
// scratch default.
func TestCheckIOThread(t *testing.T) {
	disks := []disk.Model{optDisk("scsi0", 8, "iothread"), optDisk("virtio0", 8, "iothread"), optDisk("scsi1", 8, "!iothread")}
	clone := &vmresource.CloneModel{}
	src := &proxmox.VM{Config: map[string]string{}}
	for _, tt := range []struct {
		name        string
		plan, state vmresource.Model
		creating    bool
		src         *proxmox.VM
		warns       bool
	}{
		{name: "scratch default", plan: vmresource.Model{FirmwareModel: firmware.Null()}, creating: true},
		{name: "scratch lsi", plan: vmresource.Model{FirmwareModel: firmware.FirmwareModel{SCSIHardware: types.StringValue("lsi")}}, creating: true, warns: true},
		{name: "clone of an lsi template", plan: vmresource.Model{Clone: clone, FirmwareModel: firmware.Null()}, creating: true, src: src, warns: true},
		{name: "clone, source unknown", plan: vmresource.Model{Clone: clone, FirmwareModel: firmware.Null()}, creating: true},
		{name: "existing VM", plan: vmresource.Model{FirmwareModel: firmware.Null()}, state: vmresource.Model{FirmwareModel: firmware.FirmwareModel{SCSIHardware: types.StringValue("virtio-scsi-pci")}}, warns: true},
	} {
		var diags diag.Diagnostics
		disk.CheckIOThread(disks, vmresource.PlannedController(&tt.plan, &tt.state, tt.creating, tt.src), &diags)
		switch {
		case tt.warns && (len(diags) != 1 || diags[0].(diag.DiagnosticWithPath).Path().String() != "disk[0].iothread"):
			t.Errorf("%s: %v, want one warning on disk[0].iothread", tt.name, diags)
		case !tt.warns && len(diags) > 0:
			t.Errorf("%s: unexpected %v", tt.name, diags)
		}
	}
}

// Changing discard, ssd, iothread or cache of an existing disk of a running VM warns that it
// waits for the next start; backup, new disks and stopped VMs do not.
func TestWarnPendingDiskOptions(t *testing.T) {
	state := []disk.Model{optDisk("scsi0", 8), optDisk("scsi1", 8, "discard")}
	plan := []disk.Model{optDisk("scsi0", 8, "cache=none", "!backup"), optDisk("scsi1", 8, "discard"), optDisk("scsi2", 8, "ssd")}
	var diags diag.Diagnostics
	disk.WarnPendingDiskOptions(state, plan, false, &diags)
	if len(diags) > 0 {
		t.Fatalf("stopped VM: %v", diags)
	}
	disk.WarnPendingDiskOptions(state, plan, true, &diags)
	if len(diags) != 1 || diags[0].(diag.DiagnosticWithPath).Path().String() != "disk[0].cache" {
		t.Errorf("running VM: %v, want one warning on disk[0].cache", diags)
	}
}

// diskConfigIs checks that each disk of the created VM is as PVE prints it (want: slot ->
// pattern, <vmid> standing for the VM's id), and that exactly the slots of pending wait for
// the next start.
func diskConfigIs(sim *pvesim.Server, want map[string]string, pending ...string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		vmid, err := strconv.Atoi(s.RootModule().Resources[vmAddr].Primary.ID)
		if err != nil {
			return err
		}
		return guestExists(sim, vmid, func(g pvesim.GuestState) error {
			for slot, pattern := range want {
				re := "^" + strings.ReplaceAll(pattern, "<vmid>", strconv.Itoa(vmid)) + "$"
				if !regexp.MustCompile(re).MatchString(g.Config[slot]) {
					return fmt.Errorf("%s = %q, want %s", slot, g.Config[slot], re)
				}
			}
			if waiting := slices.Sorted(maps.Keys(g.Pending)); !slices.Equal(waiting, pending) {
				return fmt.Errorf("pending %v, want %v", g.Pending, pending)
			}
			return nil
		})(s)
	}
}

// A clone's disks gain discard, ssd, iothread, cache, backup and replicate through a config
// update on their volumes, a new disk is created with them, and the second plan is empty.
// Then, in place on the running VM: a grown disk with a changed cache, ssd dropped (back to
// PVE's default) and backup back on; PVE keeps the disk pending for its next start, and the
// plan after that is still empty.
func TestAccVMDiskOptions(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	vm := func(scsi0, virtio0 string) string {
		return env.config(`resource "qemuscheduler_vm" "web" {
  name          = "disk-opts"
  scsi_hardware = "virtio-scsi-single"
  clone {
    source_vmid = 9000
    storage     = "ceph"
  }
  disk {
    slot = "scsi0"
` + scsi0 + `
  }
  disk {
    slot = "virtio0"
    size = 2
` + virtio0 + `
  }
}`)
	}
	runSteps(t,
		resource.TestStep{
			Config: vm(`    size      = 8
    discard   = true
    ssd       = true
    iothread  = true
    cache     = "writeback"
    backup    = false
    replicate = false`, `    discard  = true
    iothread = true`),
			Check: resource.ComposeTestCheckFunc(
				resource.TestCheckResourceAttr(vmAddr, "disk.0.cache", "writeback"),
				resource.TestCheckResourceAttr(vmAddr, "disk.0.backup", "false"),
				resource.TestCheckNoResourceAttr(vmAddr, "disk.1.ssd"),
				diskConfigIs(sim, map[string]string{
					"scsi0":   `ceph:vm-<vmid>-disk-0,backup=0,cache=writeback,discard=on,iothread=1,replicate=0,size=8G,ssd=1`,
					"virtio0": `ceph:vm-<vmid>-disk-1,discard=on,iothread=1,size=2G`,
				}),
			),
		},
		resource.TestStep{
			Config: vm(`    size      = 10
    discard   = true
    iothread  = true
    cache     = "none"
    backup    = true
    replicate = false`, `    discard = true`),
			Check: resource.ComposeTestCheckFunc(
				resource.TestCheckResourceAttr(vmAddr, "started", "true"),
				resource.TestCheckResourceAttr(vmAddr, "disk.0.size", "10"),
				resource.TestCheckNoResourceAttr(vmAddr, "disk.0.ssd"),
				diskConfigIs(sim, map[string]string{
					"scsi0":   `ceph:vm-<vmid>-disk-0,cache=none,discard=on,iothread=1,replicate=0,size=10G`,
					"virtio0": `ceph:vm-<vmid>-disk-1,discard=on,size=2G`,
				}, "scsi0", "virtio0"),
			),
		},
	)
}

// A VM from scratch is created with its disks' options in the create call; the second plan
// is empty.
func TestAccVMDiskOptionsFromScratch(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	runSteps(t, resource.TestStep{
		Config: env.config(`resource "qemuscheduler_vm" "web" {
  name    = "disk-scratch"
  started = false
  disk {
    slot     = "virtio0"
    size     = 4
    storage  = "local-lvm"
    discard  = true
    iothread = true
    cache    = "directsync"
    backup   = true
  }
  disk {
    slot      = "sata0"
    size      = 2
    storage   = "local-lvm"
    ssd       = true
    replicate = false
  }
}`),
		Check: diskConfigIs(sim, map[string]string{
			"virtio0": `local-lvm:vm-<vmid>-disk-0,cache=directsync,discard=on,iothread=1,size=4G`,
			"sata0":   `local-lvm:vm-<vmid>-disk-1,replicate=0,size=2G,ssd=1`,
		}),
	})
}

// A VM made by hand with disk options imports with all of them (discard=ignore as false),
// its disks in the order of their slots, and the plan is empty.
func TestAccVMDiskOptionsImport(t *testing.T) {
	env, _ := simEnv(t, labCluster())
	cfg := env.config(`resource "qemuscheduler_vm" "web" {
  name          = "disk-legacy"
  scsi_hardware = "virtio-scsi-single"
  disk {
    slot      = "sata0"
    size      = 2
    discard   = false
    replicate = false
  }
  disk {
    slot     = "scsi0"
    size     = 8
    discard  = true
    ssd      = true
    iothread = true
    cache    = "writeback"
    backup   = false
  }
}`)
	importPlansEmpty(t, env, map[string]string{"name": "disk-legacy", "scsihw": "virtio-scsi-single",
		"scsi0": "local-lvm:8,discard=on,ssd=1,iothread=1,cache=writeback,backup=0", "sata0": "local-lvm:2,replicate=0,discard=ignore", "start": "1"}, cfg)
}

// Options PVE refuses on a bus, and values outside its enum, fail the plan on the attribute.
func TestAccVMDiskOptionsValidation(t *testing.T) {
	env := newAccEnv(t, labCluster())
	vm := func(slot, option string) string {
		return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name = "web-1"
  disk {
    slot = %q
    size = 8
    %s
  }
}`, slot, option))
	}
	runParallel(t,
		resource.TestStep{Config: vm("virtio0", "ssd = true"), PlanOnly: true,
			ExpectError: regexp.MustCompile(`(?s)ssd is not available on virtio disks.*ssd = true.*refuses it on virtio0`)},
		resource.TestStep{Config: vm("sata1", "iothread = false"), PlanOnly: true,
			ExpectError: regexp.MustCompile(`(?s)iothread is only available on scsi and virtio disks.*iothread = false.*sata1`)},
		resource.TestStep{Config: vm("scsi0", `cache = "fast"`), PlanOnly: true,
			ExpectError: regexp.MustCompile(`(?s)cache = "fast".*value must be one of.*writethrough`)},
	)
}

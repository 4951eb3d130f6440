package pvesim_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// importCluster is pve1 and pve2 with a local directory storage and an lvmthin storage each
// and a shared rbd storage, a VM with a 4 GiB disk on pve1 (lvmthin) and pve2 (rbd) and a 1 GiB qcow2 image the simulated web serves;
// PVE 9 (ha_rules) or PVE 8.
func importCluster(t *testing.T, pve9 bool) *api {
	t.Helper()
	content, release := "iso, images", ""
	if pve9 {
		content, release = "iso, import, images", "ha_rules: []\n"
	}
	c, err := pvesim.ParseCluster([]byte(`
nodes:
  - {name: pve1, cpus: 8, memory_gib: 32}
  - {name: pve2, cpus: 8, memory_gib: 32}
storages:
  - {name: local, type: dir, content: [` + content + `], size_gib: 100}
  - {name: fast, type: lvmthin, content: [images], size_gib: 100}
  - {name: ceph, type: rbd, content: [images], shared: true, size_gib: 100}
guests:
  - {vmid: 100, node: pve1, name: a, config: {scsi0: "fast:vm-100-disk-0,size=4G"}}
  - {vmid: 200, node: pve2, name: b, config: {scsi0: "ceph:vm-200-disk-0,size=4G"}}
remote_files:
  - {url: "https://example.org/disk.qcow2", size: 1073741824}
` + release))
	if err != nil {
		t.Fatal(err)
	}
	return newAPI(t, pvesim.NewTestServer(t, c))
}

// qemu-server API2/Qemu.pm on a drive's import-from ($check_drive_param,
// $check_storage_access, create_disks with $import_from_volid): the drive must be given as
// STORAGE:0 (efidisk0 also with efitype and pre-enrolled-keys, tpmstate0 with version); the
// source is a VM's disk (type images) on the node, or on PVE 9 (qemu-server 8.2.7 on) a file
// of a storage's import directory; a file system path is root@pam's only
// (PVE::Storage::check_volume_access: not even its API tokens). The new volume on STORAGE has
// the source's size, and the config records it without import-from and format.
func TestImportFrom(t *testing.T) {
	a := importCluster(t, true)
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve1/storage/local/download-url", url.Values{
		"content": {"import"}, "filename": {"disk.qcow2"}, "url": {"https://example.org/disk.qcow2"}})); exit != "OK" {
		t.Fatalf("download of the import image: %s", exit)
	}
	create := func(vmid, key, drive string) reply {
		return a.form(http.MethodPost, "/nodes/pve1/qemu", url.Values{"vmid": {vmid}, key: {drive}})
	}
	for _, tc := range []struct{ vmid, drive, want string }{
		{"101", "fast:0,import-from=local:import/disk.qcow2,format=qcow2,discard=on", "fast:vm-101-disk-0,discard=on,size=1G"},
		{"102", "fast:0,import-from=fast:vm-100-disk-0", "fast:vm-102-disk-0,size=4G"},
	} {
		if exit := a.task(create(tc.vmid, "scsi0", tc.drive)); exit != "OK" {
			t.Fatalf("create %s with %s: %s", tc.vmid, tc.drive, exit)
		}
		if got := a.ok(a.get("/nodes/pve1/qemu/" + tc.vmid + "/config")).obj()["scsi0"]; got != tc.want {
			t.Errorf("VM %s scsi0 = %v, want %s", tc.vmid, got, tc.want)
		}
		if info := a.ok(a.get("/nodes/pve1/storage/fast/content/" + strings.Split(tc.want, ",")[0])).obj(); info["size"] == float64(0) {
			t.Errorf("imported volume %s: %v", tc.want, info)
		}
	}
	// A config write imports the same way.
	if r := a.form(http.MethodPut, "/nodes/pve1/qemu/101/config", url.Values{"scsi1": {"fast:0,import-from=fast:vm-100-disk-0"}}); r.code != 200 {
		t.Fatalf("config write with import-from: %s %s", r.status, r.body)
	}
	if got := a.ok(a.get("/nodes/pve1/qemu/101/config")).obj()["scsi1"]; got != "fast:vm-101-disk-1,size=4G" {
		t.Errorf("scsi1 after the config write = %v", got)
	}
	for _, tc := range []struct {
		key, drive string
		code       int
		want       string // the parameter's problem for a 400, the status text for a 500, the task's exit status for a 200 (create_disks fails in the qmcreate worker)
	}{
		{"scsi0", "fast:8,import-from=fast:vm-100-disk-0", 400, "'import-from' requires special syntax - use <storage ID>:0,import-from=<source>"},
		{"efidisk0", "fast:0,import-from=fast:vm-100-disk-0", 400, "need to specify 'efitype' when using 'import-from'"},
		{"efidisk0", "fast:0,efitype=4m,import-from=fast:vm-100-disk-0", 400, "need to specify 'pre-enrolled-keys' when using 'import-from'"},
		{"tpmstate0", "fast:0,import-from=fast:vm-100-disk-0", 400, "need to specify 'version' when using 'import-from'"},
		{"scsi0", "fast:0,import-from=local:iso/x.iso", 400, "local:iso/x.iso has wrong type 'iso' - needs to be 'images' or 'import'"},
		{"scsi0", "fast:0,import-from=fast:vm-999-disk-0", 200, "unable to create VM 150 - cannot import from 'fast:vm-999-disk-0' - could not get size of fast:vm-999-disk-0"},
		{"scsi0", "fast:0,import-from=ceph:vm-200-disk-0", 200, "unable to create VM 150 - cannot import from 'ceph:vm-200-disk-0' - owner VM 200 not on local node"},
		{"scsi0", "fast:0,import-from=local:import/missing.qcow2", 200, "unable to create VM 150 - failed to stat '/mnt/pve/local/import/missing.qcow2'"},
		{"scsi0", "fast:0,import-from=nope:vm-100-disk-0", 500, "storage 'nope' does not exist"},
		{"scsi0", "fast:0,import-from=/root/disk.qcow2", 500, "Only root can pass arbitrary filesystem paths."},
	} {
		r := create("150", tc.key, tc.drive)
		got := strings.TrimSpace(r.status[4:])
		switch tc.code {
		case 400:
			got = r.env.Errors[tc.key]
		case 200:
			got = a.task(r)
		}
		if r.code != tc.code || got != tc.want {
			t.Errorf("create with %s=%s = %d %q (%s), want %d %q", tc.key, tc.drive, r.code, got, r.body, tc.code, tc.want)
		}
	}
	if r := a.get("/nodes/pve1/qemu/150/config"); r.code != 500 {
		t.Errorf("a refused create left VM 150: %s", r.body)
	}
}

// On PVE 8.2 (qemu-server 8.2.1) import-from takes a VM's disk only ("has wrong type ... - not
// an image"), and no import directory parses (pve-storage 8.2.2's parse_volname).
func TestImportFromPVE8(t *testing.T) {
	a := importCluster(t, false)
	for _, tc := range []struct {
		drive string
		code  int
		want  string
	}{
		{"fast:0,import-from=local:iso/x.iso", 400, "local:iso/x.iso has wrong type 'iso' - not an image"},
		{"fast:0,import-from=local:import/disk.qcow2", 500, "unable to parse directory volume name 'import/disk.qcow2'"},
	} {
		r := a.form(http.MethodPost, "/nodes/pve1/qemu", url.Values{"vmid": {"150"}, "scsi0": {tc.drive}})
		got := strings.TrimSpace(r.status[4:])
		if tc.code == 400 {
			got = r.env.Errors["scsi0"]
		}
		if r.code != tc.code || got != tc.want {
			t.Errorf("PVE 8 create with scsi0=%s = %d %q (%s), want %d %q", tc.drive, r.code, got, r.body, tc.code, tc.want)
		}
	}
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve1/qemu", url.Values{"vmid": {"101"}, "scsi0": {"fast:0,import-from=fast:vm-100-disk-0"}})); exit != "OK" {
		t.Fatalf("PVE 8 import of a VM's disk: %s", exit)
	}
	if got := a.ok(a.get("/nodes/pve1/qemu/101/config")).obj()["scsi0"]; got != "fast:vm-101-disk-0,size=4G" {
		t.Errorf("scsi0 = %v", got)
	}
}

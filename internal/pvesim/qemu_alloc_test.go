package pvesim_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// allocCluster has storages that fail a disk's allocation in each of PVE's ways: fast is not
// enabled on pve2, nas is not online, isos holds no images, thick (LVM) makes no base images.
func allocCluster(t *testing.T) (*pvesim.Server, *api) {
	t.Helper()
	return simOf(t, `
nodes:
  - {name: pve1, cpus: 8, memory_gib: 32}
  - {name: pve2, cpus: 8, memory_gib: 32}
storages:
  - {name: ceph, type: rbd, content: [images], shared: true, size_gib: 100}
  - {name: fast, type: lvmthin, content: [images], nodes: [pve1], size_gib: 100}
  - {name: nas, type: nfs, content: [images], size_gib: 100, inactive: true}
  - {name: isos, type: dir, content: [iso], size_gib: 100}
  - {name: thick, type: lvm, content: [images], size_gib: 100}
guests:
  - {vmid: 100, node: pve2, cores: 1, memory_mib: 512, config: {scsi0: "ceph:vm-100-disk-0,size=4G"}}
`)
}

// qemu-server API2/Qemu.pm create_vm checks the storages before it forks its qmcreate worker
// ($check_storage_access: a storage storage.cfg lacks, "storage 'x' does not exist"; one
// without images, a 400 on storage) and allocates the disks in the worker (create_disks:
// vdisk_alloc activates the storage, "storage 'x' is not available on node 'y'" or "is not
// online"; vdisk_create_base for a template; volume_size_info for an existing volume). A
// failure there fails the task with "unable to create VM N - ...", frees what it allocated
// and removes the VM. The worker's failure comes after every drive's early check.
func TestCreateAllocatesDisksInItsTask(t *testing.T) {
	s, a := allocCluster(t)
	cephUsed := storageUsed(t, a, "pve2", "ceph")
	for _, tc := range []struct {
		name   string
		params url.Values
		want   string
	}{
		{"storage not on the node", url.Values{"scsi0": {"fast:8"}}, "unable to create VM 200 - storage 'fast' is not available on node 'pve2'"},
		{"storage not online", url.Values{"scsi0": {"nas:8"}}, "unable to create VM 200 - storage 'nas' is not online"},
		{"base image on LVM", url.Values{"template": {"1"}, "scsi0": {"ceph:8"}, "scsi1": {"thick:8"}}, "unable to create VM 200 - can't create base images in lvm storage"},
		{"missing existing volume", url.Values{"scsi0": {"ceph:4"}, "scsi1": {"ceph:vm-200-disk-7"}}, "unable to create VM 200 - "},
	} {
		tc.params.Set("vmid", "200")
		exit := a.task(a.form(http.MethodPost, "/nodes/pve2/qemu", tc.params))
		if !strings.HasPrefix(exit, tc.want) || exit == "OK" {
			t.Errorf("%s: task exit status %q, want %q", tc.name, exit, tc.want)
		}
		if _, exists := s.Guest(200); exists {
			t.Errorf("%s: VM 200 exists after its create failed", tc.name)
		}
		if got := storageUsed(t, a, "pve2", "ceph"); got != cephUsed {
			t.Errorf("%s: ceph holds %v bytes after the failed create, had %v: its disk was not freed", tc.name, got, cephUsed)
		}
	}
	for _, tc := range []struct {
		name   string
		params url.Values
		code   int
		want   string
	}{
		{"storage not in storage.cfg", url.Values{"scsi0": {"nope:8"}}, http.StatusInternalServerError, "storage 'nope' does not exist"},
		{"storage without images", url.Values{"scsi0": {"isos:8"}}, http.StatusBadRequest, "storage 'isos' does not support vm images"},
		{"an early problem beats the worker's", url.Values{"scsi0": {"fast:8"}, "scsi1": {"nope:8"}}, http.StatusInternalServerError, "storage 'nope' does not exist"},
	} {
		tc.params.Set("vmid", "200")
		r := a.form(http.MethodPost, "/nodes/pve2/qemu", tc.params)
		got := r.status
		if tc.code == http.StatusBadRequest {
			got = r.env.Errors["storage"]
		}
		if r.code != tc.code || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %s %s, want %d %q", tc.name, r.status, r.body, tc.code, tc.want)
		}
	}
}

// update_vm_api runs create_disks in $updatefn: inside the request for PUT (sync), inside the
// qmconfig worker for POST, whose task then fails with the error; the early checks
// ($check_storage_access, and $load_and_check_config's digest, lock and balloon) come before
// the fork in both.
func TestAsyncConfigAllocatesDisksInItsTask(t *testing.T) {
	s, a := allocCluster(t)
	before := s.MustGuest(t, 100).Config
	exit := a.task(a.form(http.MethodPost, "/nodes/pve2/qemu/100/config", url.Values{"scsi1": {"fast:4"}}))
	if exit != "storage 'fast' is not available on node 'pve2'" {
		t.Errorf("POST config: task exit status %q", exit)
	}
	r := a.form(http.MethodPut, "/nodes/pve2/qemu/100/config", url.Values{"scsi1": {"fast:4"}})
	if r.code != http.StatusInternalServerError || !strings.Contains(r.status, "storage 'fast' is not available on node 'pve2'") {
		t.Errorf("PUT config: %s %s", r.status, r.body)
	}
	if r := a.form(http.MethodPost, "/nodes/pve2/qemu/100/config", url.Values{"scsi1": {"isos:4"}}); r.code != http.StatusBadRequest || r.env.Errors["storage"] != "storage 'isos' does not support vm images" {
		t.Errorf("POST config on a storage without images: %s %s", r.status, r.body)
	}
	if after := s.MustGuest(t, 100).Config; after["scsi1"] != "" || after["scsi0"] != before["scsi0"] {
		t.Errorf("config after the failed writes = %v", after)
	}
	// The same drive on a storage of the node is allocated in the task.
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve2/qemu/100/config", url.Values{"scsi1": {"ceph:4"}})); exit != "OK" {
		t.Errorf("POST config of ceph:4: %s", exit)
	}
	if got := s.MustGuest(t, 100).Config["scsi1"]; got != "ceph:vm-100-disk-1,size=4G" {
		t.Errorf("scsi1 = %q", got)
	}
}

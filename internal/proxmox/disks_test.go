package proxmox_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// MainDiskStorage reads the VM's config alone: one request per VM, as the placement data
// source promises for each existing VM it names (not GetVM's status read besides).
func TestMainDiskStorageReadsTheConfigOnly(t *testing.T) {
	s, client := labClient(t)
	s.ResetRequests()
	storage, err := client.MainDiskStorage(context.Background(), "pve2", 102)
	if err != nil || storage != "ceph" {
		t.Fatalf("MainDiskStorage(pve2, 102) = %q, %v; want ceph", storage, err)
	}
	if n := s.TotalRequests(); n != 1 {
		t.Errorf("%d requests, want 1: the VM's config", n)
	}
}

// GuestDisks sums a guest's volumes by storage from its config, one request: a VM's drives
// (the CD-ROM aside), a container's rootfs and mount points (a bind mount aside).
func TestGuestDisks(t *testing.T) {
	c, err := pvesim.ParseCluster([]byte(`
nodes: [{name: pve1, cpus: 8, memory_gib: 32}]
storages: [{name: local, type: dir, content: [images, rootdir, iso]}, {name: ceph, type: rbd, content: [images, rootdir], shared: true}]
guests:
  - {vmid: 100, node: pve1, config: {scsi0: 'local:100/vm-100-disk-0.raw,size=32G', scsi1: 'ceph:vm-100-disk-1,size=512M', virtio0: 'local:100/vm-100-disk-2.raw,size=8G', ide2: 'local:iso/x.iso,media=cdrom'}}
  - {vmid: 200, node: pve1, type: lxc, config: {rootfs: 'local:200/vm-200-disk-0.raw,size=8G', mp0: 'ceph:vm-200-disk-1,mp=/data,size=2G', mp1: '/srv,mp=/srv'}}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := pvesim.NewTestServer(t, c)
	client := newClient(t, s)
	for _, tt := range []struct {
		vmid      int
		container bool
		want      []proxmox.Disk
	}{
		{100, false, []proxmox.Disk{{Storage: "ceph", Bytes: 512 << 20}, {Storage: "local", Bytes: 40 << 30}}},
		{200, true, []proxmox.Disk{{Storage: "ceph", Bytes: 2 << 30}, {Storage: "local", Bytes: 8 << 30}}},
	} {
		s.ResetRequests()
		got, err := client.GuestDisks(context.Background(), "pve1", tt.vmid, tt.container)
		if err != nil || !reflect.DeepEqual(got, tt.want) || s.TotalRequests() != 1 {
			t.Errorf("GuestDisks(%d) = %+v, %v in %d requests; want %+v in one", tt.vmid, got, err, s.TotalRequests(), tt.want)
		}
	}
}

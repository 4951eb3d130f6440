package provider

import (
	"reflect"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestDiskSizeGiB(t *testing.T) {
	for value, want := range map[string]int64{
		"local-lvm:vm-100-disk-0,size=32G":              32,
		"ceph:vm-100-disk-0,iothread=1,size=1T":         1024,
		"local-lvm:vm-100-disk-1,size=1536M":            2, // rounded up: never report less than there is
		"local:100/vm-100-disk-0.qcow2,size=8589934592": 8,
		"local-lvm:vm-100-disk-0":                       0,
	} {
		if got := diskSizeGiB(value); got != want {
			t.Errorf("diskSizeGiB(%q) = %d, want %d", value, got, want)
		}
	}
}

func TestAddDisks(t *testing.T) {
	disk := func(slot, storage string, size int64) diskModel {
		d := diskModel{Slot: types.StringValue(slot), Storage: types.StringUnknown(), Size: types.Int64Value(size)}
		if storage != "" {
			d.Storage = types.StringValue(storage)
		}
		return d
	}
	disks := []diskModel{disk("scsi0", "", 20), disk("scsi1", "", 10), disk("scsi2", "local-lvm", 5), disk("scsi3", "", 8)}
	current := map[string]string{"scsi0": "ceph:vm-101-disk-0,size=8G", "scsi3": "local-lvm:vm-101-disk-3,size=8G"}
	set := map[string]string{}
	grow := addDisks(disks, current, set, "ceph")
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
	state := []diskModel{{Slot: types.StringValue("scsi0")}, {Slot: types.StringValue("scsi1")}}
	plan := []diskModel{{Slot: types.StringValue("scsi1")}, {Slot: types.StringValue("virtio0")}}
	if got := removedDisks(state, plan); !reflect.DeepEqual(got, []string{"scsi0"}) {
		t.Fatalf("removedDisks = %v, want [scsi0]", got)
	}
}

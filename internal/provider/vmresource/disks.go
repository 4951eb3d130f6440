package vmresource

import (
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/disk"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/firmware"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// PlannedController is the SCSI controller the VM will have: the plan's, else the one it has,
// else for a new VM its clone source's (PVE's default lsi when that has none) or the default
// of a VM from scratch; "" while the clone source is not known.
func PlannedController(plan, state *Model, creating bool, src *proxmox.VM) string {
	switch {
	case kit.Known(plan.SCSIHardware):
		return plan.SCSIHardware.ValueString()
	case !creating:
		return state.SCSIHardware.ValueString()
	case plan.Clone == nil:
		return firmware.DefaultSCSIHardware
	case src != nil:
		return kit.CmpOr(src.Config["scsihw"], "lsi")
	}
	return ""
}

// NewDiskBytes is what a VM to create puts on the scheduler's storage, for the StorageCapacity
// filter: its planned disks without a storage of their own and, for a full clone (whose
// clone.storage, when set, is the scheduler's storage), the source's disks grown to their
// planned size. Disks a linked clone keeps on the template's storage do not count.
func NewDiskBytes(disks []disk.Model, clone *CloneModel, src *proxmox.VM) uint64 {
	planned := make(map[string]int64, len(disks))
	for _, d := range disks {
		if !kit.Known(d.Storage) {
			planned[d.Slot.ValueString()] = d.Size.ValueInt64()
		}
	}
	var gib int64
	fullHere := clone != nil && clone.full()
	if src != nil {
		for k, v := range src.Config {
			if !disk.Slot.MatchString(k) || strings.Contains(v, "media=cdrom") || strings.Contains(v, "cloudinit") {
				continue
			}
			if fullHere {
				gib += max(disk.SizeGiB(v), planned[k])
			}
			delete(planned, k) // grown where the clone keeps it
		}
	}
	for _, size := range planned {
		gib += size
	}
	return uint64(gib) * scheduler.GiB
}

package provider

// The disk blocks of qemuscheduler_vm: schema, validation, and the mapping to and from PVE's
// disk keys (scsi0 = "local-lvm:vm-100-disk-0,size=32G").

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

type diskModel struct {
	Slot    types.String `tfsdk:"slot"`
	Storage types.String `tfsdk:"storage"`
	Size    types.Int64  `tfsdk:"size"`
}

func diskBlock() schema.Block {
	return schema.ListNestedBlock{
		Description: "A disk. New disks are allocated; a cloned disk named here is grown to `size`. Disks cannot shrink.",
		NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
			"slot": schema.StringAttribute{Required: true,
				Validators:  []validator.String{stringvalidator.RegexMatches(diskFormat, "must be scsi0-30, virtio0-15, sata0-5 or ide0-3")},
				Description: "Bus and index, e.g. `scsi0`."},
			"storage": schema.StringAttribute{Optional: true, Computed: true, PlanModifiers: []planmodifier.String{fromSameSlot{}}, Validators: storageValidators(),
				Description: "Storage for a new disk; the plan fails on a storage the cluster does not have or that holds no `images`. Default: the scheduler's storage."},
			"size": schema.Int64Attribute{Required: true, Validators: []validator.Int64{int64validator.Between(1, proxmox.MaxDiskGiB)}, Description: "Size in GiB (at most 1048576, 1 PiB)."},
		}},
	}
}

// diskSlot matches the config keys of disks (and of CD-ROM and cloud-init drives).
var diskSlot = regexp.MustCompile(`^(scsi|virtio|sata|ide)\d+$`)

func validateDisks(disks []diskModel, diags *diag.Diagnostics) {
	seen := map[string]bool{}
	for i, d := range disks {
		if s := d.Slot.ValueString(); seen[s] {
			diags.AddAttributeError(path.Root("disk").AtListIndex(i).AtName("slot"), "Duplicate disk slot", s+" is used twice.")
		} else {
			seen[s] = true
		}
	}
}

// checkDiskShrink refuses at plan time a disk planned smaller than it is.
// checkDiskShrink refuses a planned disk smaller than the VM's. The plan only warns (fatal
// false): terraform destroy plans the configuration as it is before destroying, and an error
// there would block the destroy. The update, which would really shrink, fails.
func checkDiskShrink(state, plan []diskModel, diags *diag.Diagnostics, fatal bool) {
	sizes := map[string]int64{}
	for _, d := range state {
		sizes[d.Slot.ValueString()] = d.Size.ValueInt64()
	}
	for i, d := range plan {
		if old, ok := sizes[d.Slot.ValueString()]; ok && !d.Size.IsUnknown() && d.Size.ValueInt64() < old {
			at := path.Root("disk").AtListIndex(i).AtName("size")
			msg := fmt.Sprintf("%s is %d GiB; Proxmox VE cannot shrink disks, so %d GiB is refused. Keep the size, or replace the VM (terraform apply -replace=...).",
				d.Slot.ValueString(), old, d.Size.ValueInt64())
			if fatal {
				diags.AddAttributeError(at, "Disks cannot shrink", msg)
			} else {
				diags.AddAttributeWarning(at, "Disks cannot shrink: the apply will fail", msg)
			}
		}
	}
}

// storageOr is the storage a user-set storage attribute names, else fallback (the scheduler's
// choice): for a new disk, and for the disks of a full clone.
func storageOr(v types.String, fallback string) string {
	if known(v) {
		return v.ValueString()
	}
	return fallback
}

// addDisks adds to set the disks that current (the VM's config, nil before it exists) lacks,
// each on its own storage or defaultStorage, records in disks the storage every disk is on,
// and returns the existing disks planned larger than they are.
func addDisks(disks []diskModel, current, set map[string]string, defaultStorage string) (grow []diskModel) {
	for i, d := range disks {
		slot := d.Slot.ValueString()
		if v, ok := current[slot]; ok {
			disks[i].Storage = types.StringValue(diskStorage(v))
			if d.Size.ValueInt64() > diskSizeGiB(v) {
				grow = append(grow, d)
			}
			continue
		}
		storage := storageOr(d.Storage, defaultStorage)
		disks[i].Storage = types.StringValue(storage)
		set[slot] = fmt.Sprintf("%s:%d", storage, d.Size.ValueInt64())
	}
	return grow
}

// applyDisks grows existing disks to their planned size and adds new ones to set.
func applyDisks(ctx context.Context, c *proxmox.Client, disks []diskModel, current, set map[string]string, node string, vmid int, defaultStorage string) error {
	for _, d := range addDisks(disks, current, set, defaultStorage) {
		if err := c.ResizeDisk(ctx, node, vmid, d.Slot.ValueString(), fmt.Sprintf("%dG", d.Size.ValueInt64())); err != nil {
			return err
		}
	}
	return nil
}

// removedDisks are the managed disks the plan drops: they are detached (PVE keeps them as
// unused disks).
func removedDisks(state, plan []diskModel) []string {
	var slots []string
	for _, d := range state {
		if !hasSlot(plan, d.Slot.ValueString()) {
			slots = append(slots, d.Slot.ValueString())
		}
	}
	return slots
}

func hasSlot(disks []diskModel, slot string) bool {
	for _, d := range disks {
		if d.Slot.ValueString() == slot {
			return true
		}
	}
	return false
}

// readDisks refreshes the managed disks from cfg; a disk removed outside Terraform drops out,
// so that the plan adds it back.
func readDisks(disks []diskModel, cfg map[string]string) []diskModel {
	var out []diskModel
	for _, d := range disks {
		if v, ok := cfg[d.Slot.ValueString()]; ok {
			d.Size = types.Int64Value(diskSizeGiB(v))
			d.Storage = types.StringValue(diskStorage(v))
			out = append(out, d)
		}
	}
	return out
}

// importDisks lists the disks of an imported VM, CD-ROM drives aside, in the order of slots.
func importDisks(cfg map[string]string, slots []string) []diskModel {
	var out []diskModel
	for _, k := range slots {
		if v := cfg[k]; diskSlot.MatchString(k) && !strings.Contains(v, "media=cdrom") {
			out = append(out, diskModel{Slot: types.StringValue(k), Storage: types.StringValue(diskStorage(v)), Size: types.Int64Value(diskSizeGiB(v))})
		}
	}
	return out
}

// nullDiskUnknowns sets the storages still unknown null, so that the state can be saved when
// the VM cannot be read back.
func nullDiskUnknowns(disks []diskModel) {
	for i := range disks {
		if disks[i].Storage.IsUnknown() {
			disks[i].Storage = types.StringNull()
		}
	}
}

var sizePattern = regexp.MustCompile(`(?:^|,)size=(\d+(?:\.\d+)?)([KMGT]?)`)

// diskSizeGiB reads size=32G (or M/T/K) from a disk value, rounded up to whole GiB.
func diskSizeGiB(value string) int64 {
	m := sizePattern.FindStringSubmatch(value)
	if m == nil {
		return 0
	}
	f, _ := strconv.ParseFloat(m[1], 64)
	switch m[2] {
	case "K":
		f /= 1 << 20
	case "M":
		f /= 1024
	case "T":
		f *= 1024
	case "":
		f /= 1 << 30
	}
	gib := int64(f)
	if float64(gib) < f {
		gib++
	}
	return gib
}

// diskStorage is the storage part of a disk value ("local-lvm:vm-100-disk-0,size=32G").
func diskStorage(value string) string {
	s, _, _ := strings.Cut(value, ":")
	return s
}

// newDiskBytes is what a VM to create puts on the scheduler's storage, for the StorageCapacity
// filter: its planned disks without a storage of their own and, for a full clone onto that
// storage, the source's disks (grown to their planned size). Disks a clone keeps elsewhere do
// not count.
func newDiskBytes(disks []diskModel, clone *cloneModel, src *proxmox.VM) uint64 {
	planned := make(map[string]int64, len(disks))
	for _, d := range disks {
		if !known(d.Storage) {
			planned[d.Slot.ValueString()] = d.Size.ValueInt64()
		}
	}
	var gib int64
	fullHere := clone != nil && (clone.Full.IsNull() || clone.Full.ValueBool()) && !known(clone.Storage)
	if src != nil {
		for k, v := range src.Config {
			if !diskSlot.MatchString(k) || strings.Contains(v, "media=cdrom") || strings.Contains(v, "cloudinit") {
				continue
			}
			if fullHere {
				gib += max(diskSizeGiB(v), planned[k])
			}
			delete(planned, k) // grown where the clone keeps it
		}
	}
	for _, size := range planned {
		gib += size
	}
	return uint64(gib) * scheduler.GiB
}

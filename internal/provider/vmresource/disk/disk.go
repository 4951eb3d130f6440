package disk

// The disk blocks of qemuscheduler_vm: schema, validation, and the mapping to and from PVE's
// disk keys (scsi0 = "local-lvm:vm-100-disk-0,size=32G").

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/firmware"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

type Model struct {
	Slot      types.String `tfsdk:"slot"`
	Storage   types.String `tfsdk:"storage"`
	Size      types.Int64  `tfsdk:"size"`
	Discard   types.Bool   `tfsdk:"discard"`
	SSD       types.Bool   `tfsdk:"ssd"`
	IOThread  types.Bool   `tfsdk:"iothread"`
	Cache     types.String `tfsdk:"cache"`
	Backup    types.Bool   `tfsdk:"backup"`
	Replicate types.Bool   `tfsdk:"replicate"`
}

// diskFlag is a boolean option of a disk's property string, its key also the attribute's
// name: the value written for true and for false, "" where that is PVE's default, which is
// written by leaving the key out.
type diskFlag struct {
	Key, on, off string
	Field        func(*Model) *types.Bool
}

var Flags = []diskFlag{
	{"discard", "on", "", func(d *Model) *types.Bool { return &d.Discard }},
	{"ssd", "1", "", func(d *Model) *types.Bool { return &d.SSD }},
	{"iothread", "1", "", func(d *Model) *types.Bool { return &d.IOThread }},
	{"backup", "", "0", func(d *Model) *types.Bool { return &d.Backup }},
	{"replicate", "", "0", func(d *Model) *types.Bool { return &d.Replicate }},
}

// value is the flag's PVE value for b ("" removes the key).
func (f diskFlag) value(b bool) string {
	if b {
		return f.on
	}
	return f.off
}

// read is the flag as PVE has it in props: an absent key is PVE's default, a present one is
// true when it is the true value (discard=ignore is false).
func (f diskFlag) read(props map[string]string) bool {
	v, ok := props[f.Key]
	if !ok {
		return f.on == ""
	}
	return v == kit.CmpOr(f.on, "1")
}

// diskCaches are the cache modes PVE accepts.
var diskCaches = []string{"none", "writethrough", "writeback", "unsafe", "directsync"}

func Block() schema.Block {
	return schema.ListNestedBlock{
		Description: "A disk. New disks are allocated; a cloned disk named here is grown to `size`. Disks cannot shrink. " +
			"The options (`discard`, `ssd`, `iothread`, `cache`, `backup`, `replicate`) change in place on the disk's volume; one left unset keeps what the disk has (a clone's, its template's), one removed from the configuration goes back to PVE's default.",
		NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
			"slot": schema.StringAttribute{Required: true,
				Validators:  []validator.String{stringvalidator.RegexMatches(kit.DiskFormat, "must be scsi0-30, virtio0-15, sata0-5 or ide0-3")},
				Description: "Bus and index, e.g. `scsi0`."},
			"storage": schema.StringAttribute{Optional: true, Computed: true, PlanModifiers: []planmodifier.String{kit.FromSameSlot{}}, Validators: kit.StorageValidators(),
				Description: "Storage for a new disk; the plan fails on a storage the cluster does not have or that holds no `images`. Default: the scheduler's storage."},
			"size": schema.Int64Attribute{Required: true, Validators: []validator.Int64{int64validator.Between(1, proxmox.MaxDiskGiB)}, Description: "Size in GiB (at most 1048576, 1 PiB)."},
			"discard": schema.BoolAttribute{Optional: true,
				Description: "Pass the guest's discard/TRIM requests to the storage (PVE's `discard=on`), so that thin volumes shrink when the guest frees blocks. PVE's default is `ignore`." + RunningNote},
			"ssd": schema.BoolAttribute{Optional: true,
				Description: "Show the disk to the guest as a solid-state drive. Not available on `virtio` slots (PVE refuses it there)." + RunningNote},
			"iothread": schema.BoolAttribute{Optional: true,
				Description: "Give the disk its own I/O thread. `scsi` and `virtio` slots only; on `scsi` it takes effect only with `scsi_hardware = \"virtio-scsi-single\"` (PVE ignores it otherwise, and the plan warns)." + RunningNote},
			"cache": schema.StringAttribute{Optional: true, Validators: []validator.String{stringvalidator.OneOf(diskCaches...)},
				Description: "Cache mode: " + strings.Join(diskCaches, ", ") + ". PVE's default is no cache." + RunningNote},
			"backup": schema.BoolAttribute{Optional: true,
				Description: "Include the disk in backups (PVE's default is true)."},
			"replicate": schema.BoolAttribute{Optional: true,
				Description: "Include the disk in storage replication jobs (PVE's default is true)."},
		}},
	}
}

// RunningNote tells which settings PVE cannot change on a running VM (the plan warns).
const RunningNote = " Changed on a running VM, it takes effect at the next start (PVE keeps it pending)."

// Slot matches the config keys of disks (and of CD-ROM and cloud-init drives).
var Slot = regexp.MustCompile(`^(scsi|virtio|sata|ide)\d+$`)

// Validate refuses duplicate slots and the options PVE's schema lacks on a bus: ssd on
// virtio, iothread on sata and ide (PVE answers 400 "invalid key").
func Validate(disks []Model, diags *diag.Diagnostics) {
	seen := map[string]bool{}
	for i, d := range disks {
		at := path.Root("disk").AtListIndex(i)
		s := d.Slot.ValueString()
		if seen[s] {
			diags.AddAttributeError(at.AtName("slot"), "Duplicate disk slot", s+" is used twice.")
		}
		seen[s] = true
		if !kit.Known(d.Slot) {
			continue
		}
		bus := strings.TrimRight(s, "0123456789")
		if !d.SSD.IsNull() && bus == "virtio" {
			diags.AddAttributeError(at.AtName("ssd"), "ssd is not available on virtio disks",
				fmt.Sprintf("Proxmox VE has no ssd option for virtio disks and refuses it on %s. Use a scsi or sata slot to show the disk as an SSD, or remove ssd.", s))
		}
		if !d.IOThread.IsNull() && (bus == "sata" || bus == "ide") {
			diags.AddAttributeError(at.AtName("iothread"), "iothread is only available on scsi and virtio disks",
				fmt.Sprintf("Proxmox VE has no iothread option for %s disks and refuses it on %s. Use a virtio slot, or a scsi slot with scsi_hardware = \"virtio-scsi-single\", or remove iothread.", bus, s))
		}
	}
}

// CheckIOThread warns about iothread on scsi disks behind a controller other than
// virtio-scsi-single: PVE accepts it but ignores it at start ("iothread is only valid with
// virtio disk or virtio-scsi-single controller, ignoring"). scsihw is the controller the VM
// will have, "" when it is not known at plan.
func CheckIOThread(disks []Model, scsihw string, diags *diag.Diagnostics) {
	if scsihw == "" || scsihw == firmware.DefaultSCSIHardware {
		return
	}
	for i, d := range disks {
		if d.IOThread.ValueBool() && strings.HasPrefix(d.Slot.ValueString(), "scsi") {
			diags.AddAttributeWarning(path.Root("disk").AtListIndex(i).AtName("iothread"), "iothread has no effect with this SCSI controller",
				fmt.Sprintf("%s is on the %s controller; Proxmox VE uses iothread on scsi disks only with virtio-scsi-single and ignores it otherwise. Set scsi_hardware = \"virtio-scsi-single\", or use a virtio slot.",
					d.Slot.ValueString(), scsihw))
		}
	}
}

// WarnPendingDiskOptions warns that options PVE cannot change on a running VM (discard, ssd,
// iothread, cache) wait until the next start; backup and replicate apply at once.
func WarnPendingDiskOptions(state, plan []Model, running bool, diags *diag.Diagnostics) {
	if !running {
		return
	}
	old := map[string]Model{}
	for _, d := range state {
		old[d.Slot.ValueString()] = d
	}
	for i, d := range plan {
		o, ok := old[d.Slot.ValueString()]
		if !ok {
			continue // a new disk is plugged in with its options
		}
		for _, c := range []struct {
			name      string
			was, will attr.Value
		}{{"discard", o.Discard, d.Discard}, {"ssd", o.SSD, d.SSD}, {"iothread", o.IOThread, d.IOThread}, {"cache", o.Cache, d.Cache}} {
			if !c.will.IsUnknown() && !c.was.Equal(c.will) {
				diags.AddAttributeWarning(path.Root("disk").AtListIndex(i).AtName(c.name), "Takes effect at the next start",
					fmt.Sprintf("The VM is running: Proxmox VE keeps the new %s of %s pending until the VM is next started (%s).", c.name, d.Slot.ValueString(), kit.RestartHint))
			}
		}
	}
}

// CheckDiskShrink refuses a planned disk smaller than the VM's. The plan only warns (fatal
// false): terraform destroy plans the configuration as it is before destroying, and an error
// there would block the destroy. The update, which would really shrink, fails.
func CheckDiskShrink(state, plan []Model, diags *diag.Diagnostics, fatal bool) {
	sizes := map[string]int64{}
	for _, d := range state {
		sizes[d.Slot.ValueString()] = d.Size.ValueInt64()
	}
	for i, d := range plan {
		if old, ok := sizes[d.Slot.ValueString()]; ok && !d.Size.IsUnknown() && d.Size.ValueInt64() < old {
			at := path.Root("disk").AtListIndex(i).AtName("size")
			msg := fmt.Sprintf("%s is %d GiB; Proxmox VE cannot shrink disks, so %d GiB is refused. Keep the size, or replace the VM (%s).",
				d.Slot.ValueString(), old, d.Size.ValueInt64(), changeset.CLI("apply -replace=ADDRESS"))
			if fatal {
				diags.AddAttributeError(at, "Disks cannot shrink", msg)
			} else {
				diags.AddAttributeWarning(at, "Disks cannot shrink: the apply will fail", msg)
			}
		}
	}
}

// GrownDisks is the space an existing VM's disks take in addition after the plan, by storage:
// the growth of its disks on the storage they are on, and new disks on their storage or the
// VM's (fallback).
func GrownDisks(state, plan []Model, fallback string) map[string]uint64 {
	before := map[string]Model{}
	for _, d := range state {
		before[d.Slot.ValueString()] = d
	}
	added := map[string]uint64{}
	for _, d := range plan {
		if d.Size.IsNull() || d.Size.IsUnknown() {
			continue
		}
		var from int64
		storage := kit.StorageOr(d.Storage, fallback)
		if old, ok := before[d.Slot.ValueString()]; ok {
			from, storage = old.Size.ValueInt64(), old.Storage.ValueString()
		}
		if d.Size.ValueInt64() > from && storage != "" {
			added[storage] += uint64(d.Size.ValueInt64()-from) * scheduler.GiB
		}
	}
	if len(added) == 0 {
		return nil
	}
	return added
}

// AddDisks adds to set the disks that current (the VM's config, nil before it exists) lacks,
// each on its own storage or defaultStorage, with their options, and the existing disks whose
// options change, on the volume they have. It records in disks the storage every disk is on
// and returns the existing disks planned larger than they are. state is the disks as last
// applied (nil for a new VM): an option it set that the plan drops goes back to PVE's default.
func AddDisks(disks, state []Model, current, set map[string]string, defaultStorage string) (grow []Model) {
	for i, d := range disks {
		slot := d.Slot.ValueString()
		if v, ok := current[slot]; ok {
			disks[i].Storage = types.StringValue(kit.DiskStorage(v))
			props := kit.PropertyString(v, "file")
			d.applyOptions(props, diskAt(state, slot))
			if d.Size.ValueInt64() > SizeGiB(v) {
				grow = append(grow, d)
				// The options are written after the resize: keep the size it gives, not the old one.
				props["size"] = fmt.Sprintf("%dG", d.Size.ValueInt64())
			}
			if before := kit.PropertyString(v, "file"); !maps.Equal(props, before) && !onlySizeDiffers(props, before) {
				set[slot] = printDisk(props)
			}
			continue
		}
		storage := kit.StorageOr(d.Storage, defaultStorage)
		disks[i].Storage = types.StringValue(storage)
		props := map[string]string{"file": fmt.Sprintf("%s:%d", storage, d.Size.ValueInt64())}
		d.applyOptions(props, nil)
		set[slot] = printDisk(props)
	}
	return grow
}

// onlySizeDiffers tells whether two parsed disks differ in size alone, which the resize
// writes by itself.
func onlySizeDiffers(a, b map[string]string) bool {
	a, b = maps.Clone(a), maps.Clone(b)
	delete(a, "size")
	delete(b, "size")
	return maps.Equal(a, b)
}

// applyOptions writes into props (a disk's parsed property string) the options the plan sets,
// and resets to PVE's default those that was (the disk as last applied, nil if none) set and
// the plan drops. A key is touched only when its meaning changes (discard=ignore already is
// false), since PVE keeps some changes pending on a running VM. Options set in neither keep
// what the disk has, such as a template's.
func (d Model) applyOptions(props map[string]string, was *Model) {
	for _, f := range Flags {
		b := *f.Field(&d)
		want := f.read(nil) // PVE's default
		switch {
		case !b.IsNull() && !b.IsUnknown():
			want = b.ValueBool()
		case b.IsNull() && was != nil && !f.Field(was).IsNull():
			// dropped from the configuration: back to PVE's default
		default:
			continue
		}
		if f.read(props) == want {
			continue
		}
		if v := f.value(want); v == "" {
			delete(props, f.Key)
		} else {
			props[f.Key] = v
		}
	}
	switch {
	case kit.Known(d.Cache):
		props["cache"] = d.Cache.ValueString()
	case d.Cache.IsNull() && was != nil && !was.Cache.IsNull():
		delete(props, "cache")
	}
}

// readOptions refreshes the options d manages from props; with all set (an import), every
// option the disk has becomes managed.
func (d *Model) readOptions(props map[string]string, all bool) {
	for _, f := range Flags {
		b := f.Field(d)
		if _, has := props[f.Key]; all && has || !all && !b.IsNull() {
			*b = types.BoolValue(f.read(props))
		}
	}
	if c, has := props["cache"]; has && (all || !d.Cache.IsNull()) {
		d.Cache = types.StringValue(c)
	} else if !has {
		d.Cache = types.StringNull()
	}
}

// printDisk is a parsed disk's property string: the volume first, then the options sorted.
func printDisk(props map[string]string) string {
	parts := []string{props["file"]}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if k != "file" {
			parts = append(parts, k+"="+props[k])
		}
	}
	return strings.Join(parts, ",")
}

// diskAt is the disk in slot among disks, nil if there is none.
func diskAt(disks []Model, slot string) *Model {
	for i := range disks {
		if disks[i].Slot.ValueString() == slot {
			return &disks[i]
		}
	}
	return nil
}

// ApplyDisks grows existing disks to their planned size and adds to set the new disks and the
// existing ones whose options change.
func ApplyDisks(ctx context.Context, c *proxmox.Client, disks, state []Model, current, set map[string]string, node string, vmid int, defaultStorage string) error {
	for _, d := range AddDisks(disks, state, current, set, defaultStorage) {
		if err := c.ResizeDisk(ctx, node, vmid, d.Slot.ValueString(), fmt.Sprintf("%dG", d.Size.ValueInt64())); err != nil {
			return err
		}
	}
	return nil
}

// RemovedDisks are the managed disks the plan drops: they are detached (PVE keeps them as
// unused disks).
func RemovedDisks(state, plan []Model) []string {
	var slots []string
	for _, d := range state {
		if !HasSlot(plan, d.Slot.ValueString()) {
			slots = append(slots, d.Slot.ValueString())
		}
	}
	return slots
}

func HasSlot(disks []Model, slot string) bool { return diskAt(disks, slot) != nil }

// Read refreshes the managed disks from cfg; a disk removed outside Terraform drops out,
// so that the plan adds it back.
func Read(disks []Model, cfg map[string]string) []Model {
	var out []Model
	for _, d := range disks {
		if v, ok := cfg[d.Slot.ValueString()]; ok {
			d.Size = types.Int64Value(SizeGiB(v))
			d.Storage = types.StringValue(kit.DiskStorage(v))
			d.readOptions(kit.PropertyString(v, "file"), false)
			out = append(out, d)
		}
	}
	return out
}

// Import lists the disks of an imported VM, CD-ROM drives aside, in the order of slots.
func Import(cfg map[string]string, slots []string) []Model {
	var out []Model
	for _, k := range slots {
		if v := cfg[k]; Slot.MatchString(k) && !strings.Contains(v, "media=cdrom") {
			d := Model{Slot: types.StringValue(k), Storage: types.StringValue(kit.DiskStorage(v)), Size: types.Int64Value(SizeGiB(v))}
			d.readOptions(kit.PropertyString(v, "file"), true)
			out = append(out, d)
		}
	}
	return out
}

// NullUnknowns sets the storages still unknown null, so that the state can be saved when
// the VM cannot be read back.
func NullUnknowns(disks []Model) {
	for i := range disks {
		if disks[i].Storage.IsUnknown() {
			disks[i].Storage = types.StringNull()
		}
	}
}

var sizePattern = regexp.MustCompile(`(?:^|,)size=(\d+(?:\.\d+)?)([KMGT]?)`)

// SizeGiB reads size=32G (or M/T/K) from a disk value, rounded up to whole GiB.
func SizeGiB(value string) int64 {
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

package firmware

// Firmware and machine settings of qemuscheduler_vm: bios, efi_disk, machine, scsi_hardware,
// serial, vga, boot_order, protection and startup, and their mapping to and from PVE's keys
// (bios, efidisk0, machine, scsihw, serialN, vga, boot, protection, startup). Each is managed
// only when set (imports read every one PVE has); values are compared parsed, as PVE may
// write them back differently.

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
)

type EFIDiskModel struct {
	Storage         types.String `tfsdk:"storage"`
	PreEnrolledKeys types.Bool   `tfsdk:"pre_enrolled_keys"`
}

type vgaModel struct {
	Type   types.String `tfsdk:"type"`
	Memory types.Int64  `tfsdk:"memory"`
}

type startupModel struct {
	Order types.Int64 `tfsdk:"order"`
	Up    types.Int64 `tfsdk:"up"`
	Down  types.Int64 `tfsdk:"down"`
}

// FirmwareModel is embedded in vmresource.Model.
type FirmwareModel struct {
	BIOS         types.String  `tfsdk:"bios"`
	EFIDisk      *EFIDiskModel `tfsdk:"efi_disk"`
	Machine      types.String  `tfsdk:"machine"`
	SCSIHardware types.String  `tfsdk:"scsi_hardware"`
	Serial       types.List    `tfsdk:"serial"`
	VGA          *vgaModel     `tfsdk:"vga"`
	BootOrder    types.List    `tfsdk:"boot_order"`
	Protection   types.Bool    `tfsdk:"protection"`
	Startup      *startupModel `tfsdk:"startup"`
}

// PVE's machine type pattern (qemu-server's machine format).
var machineType = regexp.MustCompile(`^(pc|pc(-i440fx)?-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?|q35|pc-q35-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?|virt(?:-\d+(\.\d+)+)?(\+pve\d+)?)$`)

var (
	scsiControllers = []string{"lsi", "lsi53c810", "virtio-scsi-pci", "virtio-scsi-single", "megasas", "pvscsi"}
	vgaTypes        = []string{"cirrus", "qxl", "qxl2", "qxl3", "qxl4", "none", "serial0", "serial1", "serial2", "serial3", "std", "virtio", "virtio-gl", "vmware"}
	serialDevice    = regexp.MustCompile(`^(/dev/[^,]+|socket)$`)
	bootDevice      = regexp.MustCompile(`^((scsi|virtio|sata|ide|net|usb|hostpci)\d+)$`)
)

// DefaultSCSIHardware is the controller of a VM created from scratch without scsi_hardware.
const DefaultSCSIHardware = "virtio-scsi-single"

func Attributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"bios": schema.StringAttribute{Optional: true, Validators: []validator.String{stringvalidator.OneOf("seabios", "ovmf")},
			Description: "Firmware: `seabios` (PVE's default) or `ovmf` (UEFI; a VM created from scratch then needs `efi_disk`)."},
		"machine": schema.StringAttribute{Optional: true,
			Validators:  []validator.String{stringvalidator.RegexMatches(machineType, "must be a QEMU machine type as PVE accepts it: pc, q35, or a versioned name such as pc-q35-9.0 or pc-i440fx-8.1+pve0")},
			Description: "QEMU machine type, e.g. `q35`, `pc`, or a versioned one such as `pc-q35-9.0`."},
		"scsi_hardware": schema.StringAttribute{Optional: true, Computed: true,
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			Validators:    []validator.String{stringvalidator.OneOf(scsiControllers...)},
			Description:   "SCSI controller (" + strings.Join(scsiControllers, ", ") + "). Default: `" + DefaultSCSIHardware + "` for a VM created from scratch, the template's for a clone."},
		"serial": schema.ListAttribute{Optional: true, ElementType: types.StringType,
			Validators: []validator.List{listvalidator.SizeBetween(1, 4), listvalidator.ValueStringsAre(stringvalidator.RegexMatches(serialDevice,
				"must be socket or a host device path such as /dev/ttyS0"))},
			Description: "Serial ports `serial0`.., each `socket` (a console for `qm terminal`, which cloud images want) or a host device such as `/dev/ttyS0` (needs root@pam itself, not a token)."},
		"boot_order": schema.ListAttribute{Optional: true, ElementType: types.StringType,
			Validators: []validator.List{listvalidator.SizeAtLeast(1), listvalidator.ValueStringsAre(stringvalidator.RegexMatches(bootDevice,
				"must be a disk, NIC, USB or PCI slot such as scsi0 or net0"))},
			Description: "Boot devices in order, e.g. `[\"scsi0\", \"net0\"]` (PVE's `boot: order=...`)."},
		"protection": schema.BoolAttribute{Optional: true, Computed: true, PlanModifiers: []planmodifier.Bool{boolplanmodifier.UseStateForUnknown()},
			Description: "PVE's protection flag: the VM and its disks cannot be removed. `terraform destroy` then fails and changes nothing; set it false and apply first."},
	}
}

func Blocks() map[string]schema.Block {
	return map[string]schema.Block{
		"efi_disk": schema.SingleNestedBlock{
			Description: "The EFI vars disk of a UEFI (`bios = \"ovmf\"`) VM, created as `efidisk0` with `efitype=4m`. Changing it replaces the VM.",
			Attributes: map[string]schema.Attribute{
				"storage": schema.StringAttribute{Optional: true, Computed: true, Validators: kit.StorageValidators(),
					PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()},
					Description:   "Storage of the EFI disk; checked at plan like a disk's. Default: the scheduler's storage."},
				"pre_enrolled_keys": schema.BoolAttribute{Optional: true, Computed: true,
					PlanModifiers: []planmodifier.Bool{boolplanmodifier.UseStateForUnknown(), boolplanmodifier.RequiresReplace()},
					Description:   "Enroll the distribution and Microsoft secure boot keys (Secure Boot on). Default false."},
			},
		},
		"vga": schema.SingleNestedBlock{
			Description: "Display adapter (PVE's `vga`).",
			Attributes: map[string]schema.Attribute{
				"type": schema.StringAttribute{Optional: true, Validators: []validator.String{stringvalidator.OneOf(vgaTypes...)},
					Description: "Adapter type (" + strings.Join(vgaTypes, ", ") + "); `serial0` puts the display on the first serial port."},
				"memory": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.Between(4, 512)},
					Description: "Video memory in MiB (4 to 512)."},
			},
		},
		"startup": schema.SingleNestedBlock{
			Description: "Start and shutdown order on the node's boot (PVE's `startup`).",
			Attributes: map[string]schema.Attribute{
				"order": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.AtLeast(0)}, Description: "Start order (shutdown in reverse)."},
				"up":    schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.AtLeast(0)}, Description: "Seconds to wait after starting it before the next VM."},
				"down":  schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.AtLeast(0)}, Description: "Seconds to wait after stopping it before the next VM."},
			},
		},
	}
}

// ValidateFirmware checks what PVE would only refuse at start: a UEFI VM from scratch needs its EFI
// disk, and an EFI disk is of no use to SeaBIOS. Host serial devices need root@pam.
func (f *FirmwareModel) ValidateFirmware(ctx context.Context, cloning bool, diags *diag.Diagnostics) {
	bios := f.BIOS.ValueString()
	switch {
	case kit.Known(f.BIOS) && bios == "ovmf" && f.EFIDisk == nil && !cloning:
		diags.AddAttributeError(path.Root("efi_disk"), "UEFI VM without an EFI disk",
			`bios = "ovmf" on a VM created from scratch needs an efi_disk block to keep its UEFI variables; add efi_disk {}.`)
	case f.EFIDisk != nil && !f.BIOS.IsUnknown() && bios != "ovmf":
		diags.AddAttributeError(path.Root("efi_disk"), "EFI disk without UEFI",
			`efi_disk is only used by UEFI firmware: set bios = "ovmf", or remove efi_disk.`)
	}
	for i, s := range kit.ListStrings(ctx, f.Serial, diags) {
		if s != "socket" {
			diags.AddAttributeWarning(path.Root("serial").AtListIndex(i), "Host serial device needs root@pam",
				fmt.Sprintf("PVE lets only root@pam itself (not an API token) attach host device %s; with a token the create fails. Use \"socket\" unless you log in as root@pam.", s))
		}
	}
}

// config renders the settings that are set into cfg; efidisk0 is added by addEFIDisk.
func (f *FirmwareModel) FirmwareConfig(ctx context.Context, cfg map[string]string, diags *diag.Diagnostics) {
	kit.SetString(cfg, "bios", f.BIOS)
	kit.SetString(cfg, "machine", f.Machine)
	kit.SetString(cfg, "scsihw", f.SCSIHardware)
	kit.SetBool(cfg, "protection", f.Protection)
	for i, s := range kit.ListStrings(ctx, f.Serial, diags) {
		cfg["serial"+strconv.Itoa(i)] = s
	}
	if boot := kit.ListStrings(ctx, f.BootOrder, diags); len(boot) > 0 {
		cfg["boot"] = "order=" + strings.Join(boot, ";")
	}
	if v := f.VGA; v != nil {
		parts := []string{}
		if kit.Known(v.Type) {
			parts = append(parts, v.Type.ValueString())
		}
		if !v.Memory.IsNull() && !v.Memory.IsUnknown() {
			parts = append(parts, "memory="+strconv.FormatInt(v.Memory.ValueInt64(), 10))
		}
		cfg["vga"] = strings.Join(parts, ",")
	}
	if s := f.Startup; s != nil {
		var parts []string
		for _, p := range []struct {
			key string
			v   types.Int64
		}{{"order", s.Order}, {"up", s.Up}, {"down", s.Down}} {
			if !p.v.IsNull() && !p.v.IsUnknown() {
				parts = append(parts, p.key+"="+strconv.FormatInt(p.v.ValueInt64(), 10))
			}
		}
		cfg["startup"] = strings.Join(parts, ",")
	}
}

// AddEFIDisk adds efidisk0 to set unless cfg (the VM's config, nil before it exists) has one.
func (f *FirmwareModel) AddEFIDisk(cfg, set map[string]string, storage string) {
	if f.EFIDisk == nil {
		return
	}
	if _, has := cfg["efidisk0"]; has {
		return
	}
	st := kit.StorageOr(f.EFIDisk.Storage, storage)
	f.EFIDisk.Storage = types.StringValue(st)
	set["efidisk0"] = fmt.Sprintf("%s:1,efitype=4m,pre-enrolled-keys=%s", st, kit.BoolString(f.EFIDisk.PreEnrolledKeys.ValueBool()))
}

// read refreshes the managed settings from cfg; with all set (an import), every setting PVE
// has becomes managed.
func (f *FirmwareModel) ReadFirmware(ctx context.Context, cfg map[string]string, all bool, diags *diag.Diagnostics) {
	readString := func(v *types.String, key, absent string) {
		if value, ok := cfg[key]; ok && (all || !v.IsNull()) {
			*v = types.StringValue(value)
		} else if !v.IsNull() {
			*v = types.StringValue(absent)
		}
	}
	readString(&f.BIOS, "bios", "seabios")
	readString(&f.Machine, "machine", "")
	if m := f.Machine.ValueString(); strings.Contains(m, "type=") {
		f.Machine = types.StringValue(kit.PropertyString(m, "type")["type"])
	}
	f.SCSIHardware = types.StringValue(kit.CmpOr(cfg["scsihw"], "lsi"))
	f.Protection = types.BoolValue(cfg["protection"] == "1")
	if !f.Serial.IsNull() || all {
		var serials []string
		for i := 0; i < 4; i++ {
			if s, ok := cfg["serial"+strconv.Itoa(i)]; ok {
				serials = append(serials, s)
			}
		}
		f.Serial = kit.ListOrNull(ctx, serials, !f.Serial.IsNull(), diags)
	}
	if !f.BootOrder.IsNull() || all {
		order := kit.PropertyString(cfg["boot"], "legacy")["order"]
		f.BootOrder = kit.ListOrNull(ctx, strings.FieldsFunc(order, func(r rune) bool { return r == ';' || r == ',' || r == ' ' }), !f.BootOrder.IsNull(), diags)
	}
	if v, ok := cfg["vga"]; ok && (f.VGA != nil || all) {
		p := kit.PropertyString(v, "type")
		vga := vgaModel{Type: types.StringNull(), Memory: kit.Int64From(p, "memory")}
		if t, ok := p["type"]; ok {
			vga.Type = types.StringValue(t)
		}
		f.VGA = &vga
	} else if !ok {
		f.VGA = nil
	}
	if v, ok := cfg["startup"]; ok && (f.Startup != nil || all) {
		p := kit.PropertyString(v, "order")
		f.Startup = &startupModel{Order: kit.Int64From(p, "order"), Up: kit.Int64From(p, "up"), Down: kit.Int64From(p, "down")}
	} else if !ok {
		f.Startup = nil
	}
	if v, ok := cfg["efidisk0"]; ok && (f.EFIDisk != nil || all) {
		p := kit.PropertyString(v, "file")
		f.EFIDisk = &EFIDiskModel{Storage: types.StringValue(kit.DiskStorage(p["file"])), PreEnrolledKeys: types.BoolValue(p["pre-enrolled-keys"] == "1")}
	} else if !ok {
		f.EFIDisk = nil
	}
}

// nullUnknowns sets the computed values still unknown null, for a state saved after a failed
// read.
func (f *FirmwareModel) NullFirmwareUnknowns() {
	if f.SCSIHardware.IsUnknown() {
		f.SCSIHardware = types.StringNull()
	}
	if f.Protection.IsUnknown() {
		f.Protection = types.BoolNull()
	}
	if e := f.EFIDisk; e != nil {
		if e.Storage.IsUnknown() {
			e.Storage = types.StringNull()
		}
		if e.PreEnrolledKeys.IsUnknown() {
			e.PreEnrolledKeys = types.BoolNull()
		}
	}
}

// DefaultFirmware fills in what a VM from scratch gets when unset: PVE's pre-enrolled keys
// default (off) and the virtio-scsi-single controller.
func (f *FirmwareModel) DefaultFirmware(cfg map[string]string, scratch bool) {
	if e := f.EFIDisk; e != nil && e.PreEnrolledKeys.IsUnknown() {
		e.PreEnrolledKeys = types.BoolValue(false)
	}
	if _, set := cfg["scsihw"]; !set && scratch {
		cfg["scsihw"] = DefaultSCSIHardware
	}
}

// Null is the firmware part of a model without any of these settings.
func Null() FirmwareModel {
	return FirmwareModel{BIOS: types.StringNull(), Machine: types.StringNull(), SCSIHardware: types.StringNull(),
		Serial: types.ListNull(types.StringType), BootOrder: types.ListNull(types.StringType), Protection: types.BoolNull()}
}

package vmresource

import (
	"context"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/scheduling"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/cloudinit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/disk"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/firmware"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/network"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
)

type Model struct {
	scheduling.SchedulingModel
	firmware.FirmwareModel
	AgentModel
	ID               types.String     `tfsdk:"id"`
	Node             types.String     `tfsdk:"node"`
	VMID             types.Int64      `tfsdk:"vmid"`
	Storage          types.String     `tfsdk:"storage"`
	PlacementSummary types.String     `tfsdk:"placement_summary"`
	Name             types.String     `tfsdk:"name"`
	Description      types.String     `tfsdk:"description"`
	Tags             types.Set        `tfsdk:"tags"`
	Pool             types.String     `tfsdk:"pool"`
	Cores            types.Int64      `tfsdk:"cores"`
	Sockets          types.Int64      `tfsdk:"sockets"`
	CPUType          types.String     `tfsdk:"cpu_type"`
	Memory           types.Int64      `tfsdk:"memory"`
	Balloon          types.Int64      `tfsdk:"balloon"`
	Agent            types.Bool       `tfsdk:"agent"`
	OnBoot           types.Bool       `tfsdk:"on_boot"`
	Started          types.Bool       `tfsdk:"started"`
	Clone            *CloneModel      `tfsdk:"clone"`
	Disks            []disk.Model     `tfsdk:"disk"`
	Networks         []network.Model  `tfsdk:"network"`
	CloudInit        *cloudinit.Model `tfsdk:"cloud_init"`
	HA               *HAModel         `tfsdk:"ha"`
	Timeouts         timeouts.Value   `tfsdk:"timeouts"`
}

// VMConfig renders the VM settings the user manages as PVE config keys, disks and the
// cloud-init drive aside. Only set attributes are sent: PVE (or the cloned template) keeps its
// own value for the rest.
func (m *Model) VMConfig(ctx context.Context, diags *diag.Diagnostics) map[string]string {
	cfg := map[string]string{"name": m.Name.ValueString()}
	kit.SetString(cfg, "description", m.Description)
	if m.CPUType.ValueString() != "" { // "" is PVE's default: no cpu key (an update deletes it)
		kit.SetString(cfg, "cpu", m.CPUType)
	}
	kit.SetInt(cfg, "cores", m.Cores)
	kit.SetInt(cfg, "sockets", m.Sockets)
	kit.SetInt(cfg, "memory", m.Memory)
	kit.SetInt(cfg, "balloon", m.Balloon)
	kit.SetBool(cfg, "agent", m.Agent)
	kit.SetBool(cfg, "onboot", m.OnBoot)
	if !m.Tags.IsNull() && !m.Tags.IsUnknown() {
		var tags []string
		diags.Append(m.Tags.ElementsAs(ctx, &tags, false)...)
		cfg["tags"] = NormalizeTags(tags)
	}
	network.Config(m.Networks, cfg)
	m.FirmwareModel.FirmwareConfig(ctx, cfg, diags)
	if m.CloudInit != nil {
		m.CloudInit.Config(ctx, cfg, diags)
	}
	return cfg
}

// NormalizeTags sorts, lowercases and de-duplicates, as PVE does on write.
func NormalizeTags(tags []string) string {
	seen := map[string]bool{}
	var out []string
	for _, t := range tags {
		t = strings.ToLower(strings.TrimSpace(t))
		if t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ";")
}

// hasTag tells whether a PVE tags value holds tag.
func hasTag(tags, tag string) bool { return slices.Contains(kit.TagFields(tags), tag) }

// SplitTags lists the user's tags in a PVE tags value: the provider's own marks
// (proxmox.ClaimTag, proxmox.PendingTag, proxmox.RecordTag) are left out, so they never show
// as drift.
func SplitTags(s string) []string {
	return slices.DeleteFunc(kit.TagFields(s), proxmox.IsMark)
}

// markTags is a PVE tags value with the claim marks of tags replaced by mark ("" for none); the
// user's tags and the record mark stay.
func markTags(tags, mark string) string {
	user := slices.DeleteFunc(kit.TagFields(tags), proxmox.IsClaimMark)
	if mark != "" {
		user = append(user, mark)
	}
	return NormalizeTags(user)
}

// movedMark starts the parenthesis of a summary whose VM no longer runs where it was placed.
const movedMark = "migrated; placed on "

// SummaryOn makes a placement summary ("web-1: pve2 (score 86.56; ...), vmid 500 ...") name
// node, where the VM runs now: after a migration it reads "web-1: pve3 (migrated; placed on
// pve2 with score 86.56; ...), ...", and back on pve2 it is the original again. A summary of
// another form ("imported") is kept.
func SummaryOn(summary, node string) string {
	name, rest, ok := strings.Cut(summary, ": ")
	if !ok {
		return summary
	}
	placed, decision, ok := strings.Cut(rest, " (")
	if !ok {
		return summary
	}
	if moved, ok := strings.CutPrefix(decision, movedMark); ok {
		if placed, decision, ok = strings.Cut(moved, " with "); !ok {
			return summary
		}
	}
	if placed == node {
		return name + ": " + node + " (" + decision
	}
	return name + ": " + node + " (" + movedMark + placed + " with " + decision
}

// ReadInto refreshes the model from PVE. Attributes PVE reports always are set; cloud-init is
// read only when managed (PVE masks the password, so the planned value is kept).
func (m *Model) ReadInto(ctx context.Context, vm *proxmox.VM, diags *diag.Diagnostics) {
	cfg := vm.Config
	m.ID = types.StringValue(strconv.Itoa(vm.VMID))
	m.VMID = types.Int64Value(int64(vm.VMID))
	m.Node = types.StringValue(vm.Node)
	if kit.Known(m.PlacementSummary) {
		m.PlacementSummary = types.StringValue(SummaryOn(m.PlacementSummary.ValueString(), vm.Node))
	}
	m.Name = types.StringValue(cfg["name"])
	m.Description = types.StringValue(userNotes(cfg["description"]))
	m.CPUType = types.StringValue(cfg["cpu"])
	cores, sockets, memory := configSize(cfg)
	m.Cores, m.Sockets, m.Memory = types.Int64Value(int64(cores)), types.Int64Value(int64(sockets)), types.Int64Value(int64(memory))
	m.Balloon = types.Int64Null() // PVE's default: the device on, at the VM's memory; 0 is none
	if b, ok := cfg["balloon"]; ok {
		m.Balloon = types.Int64Value(int64(atoiDefault(b, 0)))
	}
	m.Agent = types.BoolValue(strings.HasPrefix(cfg["agent"], "1") || strings.Contains(cfg["agent"], "enabled=1"))
	m.OnBoot = types.BoolValue(cfg["onboot"] == "1")
	m.Started = types.BoolValue(vm.Status == "running")
	tags, d := types.SetValueFrom(ctx, types.StringType, kit.NonNil(SplitTags(cfg["tags"])))
	diags.Append(d...)
	m.Tags = tags
	m.Disks = disk.Read(m.Disks, cfg)
	m.Networks = network.Read(m.Networks, cfg)
	m.FirmwareModel.ReadFirmware(ctx, cfg, false, diags)
	if m.CloudInit != nil {
		m.CloudInit.Read(ctx, cfg, diags)
	}
}

// importDevices lists the disks and NICs of an imported VM, which Read then keeps refreshed.
// Devices are managed only when listed, so a normal Read never adds them.
func (m *Model) importDevices(ctx context.Context, cfg map[string]string, diags *diag.Diagnostics) {
	m.FirmwareModel.ReadFirmware(ctx, cfg, true, diags)
	m.CloudInit = cloudinit.Import(ctx, cfg, diags)
	slots := slices.Sorted(maps.Keys(cfg))
	m.Disks = disk.Import(cfg, slots)
	m.Networks = network.Import(cfg, slots)
}

// configSize reads a VM's size from its PVE config, where an absent key means PVE's default.
func configSize(cfg map[string]string) (cores, sockets, memoryMiB int) {
	return atoiDefault(cfg["cores"], scheduling.DefaultCores), atoiDefault(cfg["sockets"], scheduling.DefaultSockets),
		atoiDefault(strings.TrimPrefix(cfg["memory"], "current="), scheduling.DefaultMemoryMiB)
}

func atoiDefault(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return def
}

// changed keeps the keys of want whose values differ from have.
func changed(have, want map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range want {
		if have[k] != v {
			out[k] = v
		}
	}
	return out
}

// nullUnknowns sets the computed values still unknown null, so that the state can be saved
// when the VM cannot be read back.
func (m *Model) nullUnknowns() {
	for _, s := range []*types.String{&m.Storage, &m.PlacementSummary, &m.Description, &m.CPUType} {
		if s.IsUnknown() {
			*s = types.StringNull()
		}
	}
	for _, i := range []*types.Int64{&m.Cores, &m.Sockets, &m.Memory, &m.Balloon} {
		if i.IsUnknown() {
			*i = types.Int64Null()
		}
	}
	for _, b := range []*types.Bool{&m.Agent, &m.OnBoot} {
		if b.IsUnknown() {
			*b = types.BoolNull()
		}
	}
	if m.Tags.IsUnknown() {
		m.Tags = types.SetNull(types.StringType)
	}
	network.NullUnknowns(m.Networks)
	m.FirmwareModel.NullFirmwareUnknowns()
	m.AgentModel.emptyUnknownAddresses()
	disk.NullUnknowns(m.Disks)
}

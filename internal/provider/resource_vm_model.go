package provider

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

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
)

type vmModel struct {
	schedulingModel
	firmwareModel
	agentModel
	ID               types.String    `tfsdk:"id"`
	Node             types.String    `tfsdk:"node"`
	VMID             types.Int64     `tfsdk:"vmid"`
	Storage          types.String    `tfsdk:"storage"`
	PlacementSummary types.String    `tfsdk:"placement_summary"`
	Name             types.String    `tfsdk:"name"`
	Description      types.String    `tfsdk:"description"`
	Tags             types.Set       `tfsdk:"tags"`
	Pool             types.String    `tfsdk:"pool"`
	Cores            types.Int64     `tfsdk:"cores"`
	Sockets          types.Int64     `tfsdk:"sockets"`
	CPUType          types.String    `tfsdk:"cpu_type"`
	Memory           types.Int64     `tfsdk:"memory"`
	Balloon          types.Int64     `tfsdk:"balloon"`
	Agent            types.Bool      `tfsdk:"agent"`
	OnBoot           types.Bool      `tfsdk:"on_boot"`
	Started          types.Bool      `tfsdk:"started"`
	Clone            *cloneModel     `tfsdk:"clone"`
	Disks            []diskModel     `tfsdk:"disk"`
	Networks         []networkModel  `tfsdk:"network"`
	CloudInit        *cloudInitModel `tfsdk:"cloud_init"`
	HA               *haModel        `tfsdk:"ha"`
	Timeouts         timeouts.Value  `tfsdk:"timeouts"`
}

// vmConfig renders the VM settings the user manages as PVE config keys, disks and the
// cloud-init drive aside. Only set attributes are sent: PVE (or the cloned template) keeps its
// own value for the rest.
func (m *vmModel) vmConfig(ctx context.Context, diags *diag.Diagnostics) map[string]string {
	cfg := map[string]string{"name": m.Name.ValueString()}
	setString(cfg, "description", m.Description)
	if m.CPUType.ValueString() != "" { // "" is PVE's default: no cpu key (an update deletes it)
		setString(cfg, "cpu", m.CPUType)
	}
	setInt(cfg, "cores", m.Cores)
	setInt(cfg, "sockets", m.Sockets)
	setInt(cfg, "memory", m.Memory)
	setInt(cfg, "balloon", m.Balloon)
	setBool(cfg, "agent", m.Agent)
	setBool(cfg, "onboot", m.OnBoot)
	if !m.Tags.IsNull() && !m.Tags.IsUnknown() {
		var tags []string
		diags.Append(m.Tags.ElementsAs(ctx, &tags, false)...)
		cfg["tags"] = normalizeTags(tags)
	}
	networkConfig(m.Networks, cfg)
	m.firmwareModel.firmwareConfig(ctx, cfg, diags)
	if m.CloudInit != nil {
		m.CloudInit.config(ctx, cfg, diags)
	}
	return cfg
}

// setString, setInt and setBool render an attribute into cfg when it is set.
func setString(cfg map[string]string, key string, v types.String) {
	if known(v) {
		cfg[key] = v.ValueString()
	}
}

func setInt(cfg map[string]string, key string, v types.Int64) {
	if !v.IsNull() && !v.IsUnknown() {
		cfg[key] = strconv.FormatInt(v.ValueInt64(), 10)
	}
}

func setBool(cfg map[string]string, key string, v types.Bool) {
	if !v.IsNull() && !v.IsUnknown() {
		cfg[key] = boolString(v.ValueBool())
	}
}

// normalizeTags sorts, lowercases and de-duplicates, as PVE does on write.
func normalizeTags(tags []string) string {
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

func tagFields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' || r == ' ' })
}

// hasTag tells whether a PVE tags value holds tag.
func hasTag(tags, tag string) bool { return slices.Contains(tagFields(tags), tag) }

// splitTags lists the user's tags in a PVE tags value: the provider's own marks
// (proxmox.ClaimTag, proxmox.PendingTag, proxmox.RecordTag) are left out, so they never show
// as drift.
func splitTags(s string) []string {
	return slices.DeleteFunc(tagFields(s), proxmox.IsMark)
}

// markTags is a PVE tags value with the claim marks of tags replaced by mark ("" for none); the
// user's tags and the record mark stay.
func markTags(tags, mark string) string {
	user := slices.DeleteFunc(tagFields(tags), proxmox.IsClaimMark)
	if mark != "" {
		user = append(user, mark)
	}
	return normalizeTags(user)
}

func boolString(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// movedMark starts the parenthesis of a summary whose VM no longer runs where it was placed.
const movedMark = "migrated; placed on "

// summaryOn makes a placement summary ("web-1: pve2 (score 86.56; ...), vmid 500 ...") name
// node, where the VM runs now: after a migration it reads "web-1: pve3 (migrated; placed on
// pve2 with score 86.56; ...), ...", and back on pve2 it is the original again. A summary of
// another form ("imported") is kept.
func summaryOn(summary, node string) string {
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

// readInto refreshes the model from PVE. Attributes PVE reports always are set; cloud-init is
// read only when managed (PVE masks the password, so the planned value is kept).
func (m *vmModel) readInto(ctx context.Context, vm *proxmox.VM, diags *diag.Diagnostics) {
	cfg := vm.Config
	m.ID = types.StringValue(strconv.Itoa(vm.VMID))
	m.VMID = types.Int64Value(int64(vm.VMID))
	m.Node = types.StringValue(vm.Node)
	if known(m.PlacementSummary) {
		m.PlacementSummary = types.StringValue(summaryOn(m.PlacementSummary.ValueString(), vm.Node))
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
	tags, d := types.SetValueFrom(ctx, types.StringType, nonNil(splitTags(cfg["tags"])))
	diags.Append(d...)
	m.Tags = tags
	m.Disks = readDisks(m.Disks, cfg)
	m.Networks = readNetworks(m.Networks, cfg)
	m.firmwareModel.readFirmware(ctx, cfg, false, diags)
	if m.CloudInit != nil {
		m.CloudInit.read(ctx, cfg, diags)
	}
}

// importDevices lists the disks and NICs of an imported VM, which Read then keeps refreshed.
// Devices are managed only when listed, so a normal Read never adds them.
func (m *vmModel) importDevices(ctx context.Context, cfg map[string]string, diags *diag.Diagnostics) {
	m.firmwareModel.readFirmware(ctx, cfg, true, diags)
	m.CloudInit = importCloudInit(ctx, cfg, diags)
	slots := slices.Sorted(maps.Keys(cfg))
	m.Disks = importDisks(cfg, slots)
	m.Networks = importNetworks(cfg, slots)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// configSize reads a VM's size from its PVE config, where an absent key means PVE's default.
func configSize(cfg map[string]string) (cores, sockets, memoryMiB int) {
	return atoiDefault(cfg["cores"], defaultCores), atoiDefault(cfg["sockets"], defaultSockets),
		atoiDefault(strings.TrimPrefix(cfg["memory"], "current="), defaultMemoryMiB)
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
func (m *vmModel) nullUnknowns() {
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
	nullNetworkUnknowns(m.Networks)
	m.firmwareModel.nullFirmwareUnknowns()
	m.agentModel.emptyUnknownAddresses()
	nullDiskUnknowns(m.Disks)
}

package provider

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
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
	ID               types.String `tfsdk:"id"`
	Node             types.String `tfsdk:"node"`
	VMID             types.Int64  `tfsdk:"vmid"`
	Storage          types.String `tfsdk:"storage"`
	PlacementSummary types.String `tfsdk:"placement_summary"`
	schedulingModel
	Name        types.String    `tfsdk:"name"`
	Description types.String    `tfsdk:"description"`
	Tags        types.Set       `tfsdk:"tags"`
	Pool        types.String    `tfsdk:"pool"`
	Cores       types.Int64     `tfsdk:"cores"`
	Sockets     types.Int64     `tfsdk:"sockets"`
	CPUType     types.String    `tfsdk:"cpu_type"`
	Memory      types.Int64     `tfsdk:"memory"`
	Balloon     types.Int64     `tfsdk:"balloon"`
	Agent       types.Bool      `tfsdk:"agent"`
	OnBoot      types.Bool      `tfsdk:"on_boot"`
	Started     types.Bool      `tfsdk:"started"`
	Clone       *cloneModel     `tfsdk:"clone"`
	Disks       []diskModel     `tfsdk:"disk"`
	Networks    []networkModel  `tfsdk:"network"`
	CloudInit   *cloudInitModel `tfsdk:"cloud_init"`
	Timeouts    timeouts.Value  `tfsdk:"timeouts"`
}

type cloneModel struct {
	SourceVMID types.Int64  `tfsdk:"source_vmid"`
	SourceNode types.String `tfsdk:"source_node"`
	Full       types.Bool   `tfsdk:"full"`
	Storage    types.String `tfsdk:"storage"`
}

type diskModel struct {
	Slot    types.String `tfsdk:"slot"`
	Storage types.String `tfsdk:"storage"`
	Size    types.Int64  `tfsdk:"size"`
}

type networkModel struct {
	Slot     types.String `tfsdk:"slot"`
	Model    types.String `tfsdk:"model"`
	Bridge   types.String `tfsdk:"bridge"`
	VLAN     types.Int64  `tfsdk:"vlan"`
	Firewall types.Bool   `tfsdk:"firewall"`
	MAC      types.String `tfsdk:"mac"`
}

type cloudInitModel struct {
	User         types.String `tfsdk:"user"`
	Password     types.String `tfsdk:"password"`
	SSHKeys      types.List   `tfsdk:"ssh_keys"`
	IPConfig     types.List   `tfsdk:"ip_config"`
	Nameserver   types.String `tfsdk:"nameserver"`
	Searchdomain types.String `tfsdk:"searchdomain"`
}

// vmConfig renders the VM settings the user manages as PVE config keys, disks and the
// cloud-init drive aside. Only set attributes are sent: PVE (or the cloned template) keeps its
// own value for the rest.
func (m *vmModel) vmConfig(ctx context.Context, diags *diag.Diagnostics) map[string]string {
	cfg := map[string]string{"name": m.Name.ValueString()}
	setString := func(key string, v types.String) {
		if known(v) {
			cfg[key] = v.ValueString()
		}
	}
	setInt := func(key string, v types.Int64) {
		if !v.IsNull() && !v.IsUnknown() {
			cfg[key] = strconv.FormatInt(v.ValueInt64(), 10)
		}
	}
	setBool := func(key string, v types.Bool) {
		if !v.IsNull() && !v.IsUnknown() {
			cfg[key] = boolString(v.ValueBool())
		}
	}
	setString("description", m.Description)
	setString("cpu", m.CPUType)
	setInt("cores", m.Cores)
	setInt("sockets", m.Sockets)
	setInt("memory", m.Memory)
	setInt("balloon", m.Balloon)
	setBool("agent", m.Agent)
	setBool("onboot", m.OnBoot)
	if !m.Tags.IsNull() && !m.Tags.IsUnknown() {
		var tags []string
		diags.Append(m.Tags.ElementsAs(ctx, &tags, false)...)
		cfg["tags"] = normalizeTags(tags)
	}
	for _, n := range m.Networks {
		cfg[n.Slot.ValueString()] = n.render()
	}
	if ci := m.CloudInit; ci != nil {
		setString("ciuser", ci.User)
		setString("cipassword", ci.Password)
		setString("nameserver", ci.Nameserver)
		setString("searchdomain", ci.Searchdomain)
		if !ci.SSHKeys.IsNull() && !ci.SSHKeys.IsUnknown() {
			var keys []string
			diags.Append(ci.SSHKeys.ElementsAs(ctx, &keys, false)...)
			cfg["sshkeys"] = encodeSSHKeys(keys)
		}
		if !ci.IPConfig.IsNull() && !ci.IPConfig.IsUnknown() {
			var ips []string
			diags.Append(ci.IPConfig.ElementsAs(ctx, &ips, false)...)
			for i, ip := range ips {
				cfg[fmt.Sprintf("ipconfig%d", i)] = ip
			}
		}
	}
	return cfg
}

// render is the PVE netN value: model[=mac],bridge=..,tag=..,firewall=1.
func (n networkModel) render() string {
	model := n.Model.ValueString()
	if known(n.MAC) && n.MAC.ValueString() != "" {
		model += "=" + n.MAC.ValueString()
	}
	parts := []string{model, "bridge=" + n.Bridge.ValueString()}
	if !n.VLAN.IsNull() && !n.VLAN.IsUnknown() {
		parts = append(parts, "tag="+strconv.FormatInt(n.VLAN.ValueInt64(), 10))
	}
	if n.Firewall.ValueBool() {
		parts = append(parts, "firewall=1")
	}
	return strings.Join(parts, ",")
}

// parseNetwork reads a PVE netN value back.
func parseNetwork(slot, value string) networkModel {
	n := networkModel{Slot: types.StringValue(slot), VLAN: types.Int64Null(), Firewall: types.BoolValue(false), MAC: types.StringValue("")}
	for i, part := range strings.Split(value, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch {
		case i == 0:
			n.Model, n.MAC = types.StringValue(k), types.StringValue(v)
		case k == "bridge":
			n.Bridge = types.StringValue(v)
		case k == "tag":
			if tag, err := strconv.ParseInt(v, 10, 64); err == nil {
				n.VLAN = types.Int64Value(tag)
			}
		case k == "firewall":
			n.Firewall = types.BoolValue(v == "1")
		}
	}
	return n
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
// (proxmox.ClaimTag, proxmox.PendingTag) are left out, so they never show as drift.
func splitTags(s string) []string {
	return slices.DeleteFunc(tagFields(s), proxmox.IsMark)
}

// markTags is a PVE tags value with the user's tags of tags and mark ("" for none).
func markTags(tags, mark string) string {
	user := splitTags(tags)
	if mark != "" {
		user = append(user, mark)
	}
	return normalizeTags(user)
}

// encodeSSHKeys joins keys with newlines and URL-encodes them the way PVE stores them (%20,
// never +).
func encodeSSHKeys(keys []string) string {
	return strings.ReplaceAll(url.QueryEscape(strings.Join(keys, "\n")), "+", "%20")
}

func decodeSSHKeys(s string) []string {
	decoded, err := url.PathUnescape(s)
	if err != nil {
		decoded = s
	}
	var keys []string
	for _, k := range strings.Split(decoded, "\n") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

func boolString(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// readInto refreshes the model from PVE. Attributes PVE reports always are set; cloud-init is
// read only when managed (PVE masks the password, so the planned value is kept).
func (m *vmModel) readInto(ctx context.Context, vm *proxmox.VM, diags *diag.Diagnostics) {
	cfg := vm.Config
	m.ID = types.StringValue(strconv.Itoa(vm.VMID))
	m.VMID = types.Int64Value(int64(vm.VMID))
	m.Node = types.StringValue(vm.Node)
	m.Name = types.StringValue(cfg["name"])
	m.Description = types.StringValue(cfg["description"])
	m.CPUType = types.StringValue(cfg["cpu"])
	cores, sockets, memory := configSize(cfg)
	m.Cores, m.Sockets, m.Memory = types.Int64Value(int64(cores)), types.Int64Value(int64(sockets)), types.Int64Value(int64(memory))
	m.Balloon = types.Int64Value(int64(atoiDefault(cfg["balloon"], 0)))
	m.Agent = types.BoolValue(strings.HasPrefix(cfg["agent"], "1") || strings.Contains(cfg["agent"], "enabled=1"))
	m.OnBoot = types.BoolValue(cfg["onboot"] == "1")
	m.Started = types.BoolValue(vm.Status == "running")
	tags, d := types.SetValueFrom(ctx, types.StringType, nonNil(splitTags(cfg["tags"])))
	diags.Append(d...)
	m.Tags = tags
	// Managed devices removed outside Terraform drop out, so the plan adds them back.
	var disks []diskModel
	for _, d := range m.Disks {
		if v, ok := cfg[d.Slot.ValueString()]; ok {
			d.Size = types.Int64Value(diskSizeGiB(v))
			d.Storage = types.StringValue(diskStorage(v))
			disks = append(disks, d)
		}
	}
	m.Disks = disks
	var nets []networkModel
	for _, n := range m.Networks {
		if v, ok := cfg[n.Slot.ValueString()]; ok {
			nets = append(nets, parseNetwork(n.Slot.ValueString(), v))
		}
	}
	m.Networks = nets
	if ci := m.CloudInit; ci != nil {
		readOptional := func(v *types.String, key string) {
			if !v.IsNull() {
				*v = types.StringValue(cfg[key])
			}
		}
		readOptional(&ci.User, "ciuser")
		readOptional(&ci.Nameserver, "nameserver")
		readOptional(&ci.Searchdomain, "searchdomain")
		if !ci.SSHKeys.IsNull() {
			ci.SSHKeys, d = types.ListValueFrom(ctx, types.StringType, nonNil(decodeSSHKeys(cfg["sshkeys"])))
			diags.Append(d...)
		}
		if !ci.IPConfig.IsNull() {
			var ips []string
			for i := 0; ; i++ {
				v, ok := cfg[fmt.Sprintf("ipconfig%d", i)]
				if !ok {
					break
				}
				ips = append(ips, v)
			}
			ci.IPConfig, d = types.ListValueFrom(ctx, types.StringType, nonNil(ips))
			diags.Append(d...)
		}
	}
}

var (
	netSlot  = regexp.MustCompile(`^net\d+$`)
	diskSlot = regexp.MustCompile(`^(scsi|virtio|sata|ide)\d+$`)
)

// importDevices lists the disks and NICs of an imported VM, which Read then keeps refreshed.
// Devices are managed only when listed, so a normal Read never adds them.
func (m *vmModel) importDevices(cfg map[string]string) {
	var slots []string
	for k := range cfg {
		slots = append(slots, k)
	}
	sort.Strings(slots)
	for _, k := range slots {
		v := cfg[k]
		switch {
		case netSlot.MatchString(k):
			m.Networks = append(m.Networks, parseNetwork(k, v))
		case diskSlot.MatchString(k) && !strings.Contains(v, "media=cdrom"):
			m.Disks = append(m.Disks, diskModel{Slot: types.StringValue(k), Storage: types.StringValue(diskStorage(v)), Size: types.Int64Value(diskSizeGiB(v))})
		}
	}
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

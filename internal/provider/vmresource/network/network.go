package network

// The network blocks of qemuscheduler_vm: schema, validation, and the mapping to and from
// PVE's netN keys (net0 = "virtio=BC:24:11:00:00:01,bridge=vmbr0,tag=10,firewall=1").

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
)

type Model struct {
	Slot     types.String `tfsdk:"slot"`
	Model    types.String `tfsdk:"model"`
	Bridge   types.String `tfsdk:"bridge"`
	VLAN     types.Int64  `tfsdk:"vlan"`
	Firewall types.Bool   `tfsdk:"firewall"`
	MAC      types.String `tfsdk:"mac"`
}

func Block() schema.Block {
	return schema.ListNestedBlock{
		Description: "A network device.",
		NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
			"slot": schema.StringAttribute{Required: true,
				Validators: []validator.String{stringvalidator.RegexMatches(kit.NetFormat, "must be net0 to net31")}, Description: "e.g. `net0`."},
			"model": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("virtio"),
				Validators:  []validator.String{stringvalidator.OneOf("virtio", "e1000", "e1000e", "rtl8139", "vmxnet3")},
				Description: "NIC model. Default `virtio`."},
			"bridge": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("vmbr0"),
				Validators:  []validator.String{stringvalidator.RegexMatches(kit.BridgeName, "must be a bridge or SDN VNet name of up to 15 letters, digits, '_', '-' and '.'")},
				Description: "Bridge (or SDN VNet). Default `vmbr0`."},
			"vlan":     schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.Between(1, 4094)}, Description: "VLAN tag."},
			"firewall": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false), Description: "Enable the PVE firewall on this NIC."},
			"mac":      schema.StringAttribute{Computed: true, PlanModifiers: []planmodifier.String{kit.FromSameSlot{}}, Description: "MAC address PVE assigned."},
		}},
	}
}

var netSlot = regexp.MustCompile(`^net\d+$`)

func Validate(nets []Model, diags *diag.Diagnostics) {
	seen := map[string]bool{}
	for i, n := range nets {
		if s := n.Slot.ValueString(); seen[s] {
			diags.AddAttributeError(path.Root("network").AtListIndex(i).AtName("slot"), "Duplicate network slot", s+" is used twice.")
		} else {
			seen[s] = true
		}
	}
}

// Config renders every NIC into cfg.
func Config(nets []Model, cfg map[string]string) {
	for _, n := range nets {
		cfg[n.Slot.ValueString()] = n.render()
	}
}

// render is the PVE netN value: model[=mac],bridge=..,tag=..,firewall=1.
func (n Model) render() string {
	model := n.Model.ValueString()
	if kit.Known(n.MAC) && n.MAC.ValueString() != "" {
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

// Parse reads a PVE netN value back.
func Parse(slot, value string) Model {
	n := Model{Slot: types.StringValue(slot), VLAN: types.Int64Null(), Firewall: types.BoolValue(false), MAC: types.StringValue("")}
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

// Read refreshes the managed NICs from cfg; a NIC removed outside Terraform drops
// out, so that the plan adds it back.
func Read(nets []Model, cfg map[string]string) []Model {
	var out []Model
	for _, n := range nets {
		if v, ok := cfg[n.Slot.ValueString()]; ok {
			out = append(out, Parse(n.Slot.ValueString(), v))
		}
	}
	return out
}

// Import lists the NICs of an imported VM in the order of slots.
func Import(cfg map[string]string, slots []string) []Model {
	var out []Model
	for _, k := range slots {
		if netSlot.MatchString(k) {
			out = append(out, Parse(k, cfg[k]))
		}
	}
	return out
}

// NullUnknowns sets the MACs still unknown null, so that the state can be saved when
// the VM cannot be read back.
func NullUnknowns(nets []Model) {
	for i := range nets {
		if nets[i].MAC.IsUnknown() {
			nets[i].MAC = types.StringNull()
		}
	}
}

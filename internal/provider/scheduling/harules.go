package scheduling

// The HA rules a VM is in, as the resource's ha.rules and the placement data source show them:
// one object per PVE rule, with the names and shape of bpg's proxmox_virtual_environment_harule
// (except `id`, which bpg calls `rule`), so that a rule reads the same in both providers.

import (
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// HARuleType is the object type of one rule.
var HARuleType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"id":        types.StringType,
	"type":      types.StringType,
	"nodes":     types.MapType{ElemType: types.Int64Type},
	"strict":    types.BoolType,
	"affinity":  types.StringType,
	"resources": types.ListType{ElemType: types.StringType},
}}

var haRuleDescriptions = map[string]string{
	"id":   "The rule's id in Proxmox VE (`rule`, as in `/cluster/ha/rules/{rule}`).",
	"type": "`node-affinity` or `resource-affinity`.",
	"nodes": "A `node-affinity` rule's nodes and their priorities (PVE's `node:priority`; 0 where none is set): the HA manager " +
		"prefers the highest class it can use. Null for `resource-affinity`.",
	"strict": "Whether a `node-affinity` rule keeps its resources on its nodes only (otherwise they may run on any other " +
		"node when none of them is usable); `false` for `resource-affinity`, which is always hard.",
	"affinity":  "`positive` (together on a node) or `negative` (on separate nodes) for `resource-affinity`; null for `node-affinity`.",
	"resources": "The rule's HA resources as Proxmox VE writes them (`vm:101`, `ct:102`), by VMID.",
}

// HARulesResourceAttribute is a computed list of rules in a resource's schema.
func HARulesResourceAttribute(description string) rschema.ListNestedAttribute {
	attrs := HARuleAttributes(
		func(d string) rschema.Attribute { return rschema.StringAttribute{Computed: true, Description: d} },
		func(d string) rschema.Attribute { return rschema.BoolAttribute{Computed: true, Description: d} },
		func(e attr.Type, d string) rschema.Attribute {
			return rschema.MapAttribute{Computed: true, ElementType: e, Description: d}
		},
		func(e attr.Type, d string) rschema.Attribute {
			return rschema.ListAttribute{Computed: true, ElementType: e, Description: d}
		})
	return rschema.ListNestedAttribute{Computed: true, Description: description, NestedObject: rschema.NestedAttributeObject{Attributes: attrs}}
}

// HARuleAttributes are HARuleType's attributes, with their descriptions, in one schema package
// (a resource's, a data source's), built by its constructors of computed attributes.
func HARuleAttributes[A any](str, boolean func(string) A, mapOf, listOf func(attr.Type, string) A) map[string]A {
	attrs := map[string]A{}
	for name, t := range HARuleType.AttrTypes {
		d := haRuleDescriptions[name]
		switch t := t.(type) {
		case types.MapType:
			attrs[name] = mapOf(t.ElemType, d)
		case types.ListType:
			attrs[name] = listOf(t.ElemType, d)
		case basetypes.BoolType:
			attrs[name] = boolean(d)
		default:
			attrs[name] = str(d)
		}
	}
	return attrs
}

// HARuleValue is rule r as an object of HARuleType.
func HARuleValue(r scheduler.HARule) types.Object {
	nodes, affinity := types.MapNull(types.Int64Type), types.StringNull()
	if r.Type == scheduler.HANodeAffinity {
		prio := make(map[string]attr.Value, len(r.Nodes))
		for _, n := range r.Nodes {
			prio[n] = types.Int64Value(int64(r.Priorities[n]))
		}
		nodes = types.MapValueMust(types.Int64Type, prio)
	} else {
		affinity = types.StringValue(r.Affinity)
	}
	vmids := slices.Clone(r.VMIDs)
	slices.Sort(vmids)
	vmids = slices.Compact(vmids)
	resources := make([]attr.Value, len(vmids))
	for i, id := range vmids {
		kind := "vm:"
		if slices.Contains(r.CTs, id) {
			kind = "ct:"
		}
		resources[i] = types.StringValue(kind + strconv.Itoa(id))
	}
	return types.ObjectValueMust(HARuleType.AttrTypes, map[string]attr.Value{
		"id":        types.StringValue(r.Name),
		"type":      types.StringValue(r.Type),
		"nodes":     nodes,
		"strict":    types.BoolValue(r.Type == scheduler.HANodeAffinity && r.Strict),
		"affinity":  affinity,
		"resources": types.ListValueMust(types.StringType, resources),
	})
}

// HARulesValue is rules as a list of HARuleType, sorted by id.
func HARulesValue(rules []scheduler.HARule) types.List {
	sorted := slices.Clone(rules)
	slices.SortFunc(sorted, func(a, b scheduler.HARule) int { return strings.Compare(a.Name, b.Name) })
	out := make([]attr.Value, len(sorted))
	for i, r := range sorted {
		out[i] = HARuleValue(r)
	}
	return types.ListValueMust(HARuleType, out)
}

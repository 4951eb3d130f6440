package scheduling

import (
	"context"
	"fmt"
	"maps"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/nodelabels"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/plugins"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// GroupSelectorModel is the group a block picks: kube's label selector over PVE tags.
type GroupSelectorModel struct {
	Tags       types.List `tfsdk:"tags"`
	TagsAnyOf  types.List `tfsdk:"tags_any_of"`
	TagsNoneOf types.List `tfsdk:"tags_none_of"`
}

// VMGroupTermModel is one vm_affinity or vm_anti_affinity block.
type VMGroupTermModel struct {
	GroupSelectorModel
	TopologyKey types.String `tfsdk:"topology_key"`
	Weight      types.Int64  `tfsdk:"weight"`
}

// TopologySpreadModel is one topology_spread block.
type TopologySpreadModel struct {
	GroupSelectorModel
	TopologyKey        types.String `tfsdk:"topology_key"`
	MaxSkew            types.Int64  `tfsdk:"max_skew"`
	WhenUnsatisfiable  types.String `tfsdk:"when_unsatisfiable"`
	MinDomains         types.Int64  `tfsdk:"min_domains"`
	NodeAffinityPolicy types.String `tfsdk:"node_affinity_policy"`
	NodeTaintsPolicy   types.String `tfsdk:"node_taints_policy"`
}

// groupTagFormat is PVE's tag syntax, case-insensitive as PVE compares tags.
var groupTagFormat = regexp.MustCompile(`(?i)^[a-z0-9_][a-z0-9_\-+.]*$`)

var topologyKeyCheck = kit.StringCheck{What: "topology key: \"node\" or a node label key such as \"zone\"", Check: func(s string) error {
	if s == plugins.TopologyNode {
		return nil
	}
	return nodelabels.ValidateKey(s)
}}

const (
	groupTagsDescription = "The group: the guests that carry all of these tags (PVE tags, case-insensitive; kube's `matchLabels`), " +
		"whatever their status (stopped guests count, templates never), plus the VMs placed earlier in the same decision and " +
		"the creates in flight in this provider process that will carry them. With `tags_any_of` and `tags_none_of` the group " +
		"must satisfy all three; at least one of them is needed."
	groupAnyOfDescription  = "The group's guests carry at least one of these tags (kube's `In` with several values)."
	groupNoneOfDescription = "The group's guests carry none of these tags (kube's `NotIn` and `DoesNotExist`)."
	topologyKeyDescription = "The domain: `node` (default) makes every node its own domain; a node label key (e.g. `zone`, from the " +
		"provider's `node` blocks or node Notes) makes the nodes sharing its value one domain. A node without the label is in " +
		"no domain: `vm_affinity` fails it, `vm_anti_affinity` passes it, and `topology_spread` neither counts it nor " +
		"chooses it (as in Kubernetes, a VM there would escape the count)."
	vmAffinityDescription = "Keep the VM in the same domain as a group of guests (kube's pod affinity). Repeatable. Without " +
		"`weight` it is required: a node whose domain holds no guest of the group fails (`VMAffinity` filter), except that the " +
		"first VM of a group it carries itself may go anywhere. With `weight` it is a preference (`VMAffinity` score)."
	vmAntiAffinityDescription = "Keep the VM out of the domains that hold a group of guests (kube's pod anti-affinity): replicas " +
		"apart, so one node failure takes out one of them. Repeatable. Without `weight` it is required (`VMAffinity` filter): " +
		"with more VMs than domains the extra ones cannot be placed, use `topology_spread` instead. With `weight` it is a " +
		"preference (`VMAffinity` score) that still places the VM when it cannot be met."
	topologySpreadDescription = "Spread a group evenly over the domains (kube's topology spread constraint): placing the VM in a " +
		"domain must leave it at most `max_skew` members above the emptiest eligible domain. Only eligible nodes count, for the " +
		"members and the domains, as in kube: online, carrying the keys of all the VM's spreads of that kind and, under the " +
		"policies, passing the node selector and required node affinity and tolerating their NoSchedule taints. Repeatable. " +
		"Unlike anti-affinity it works with more VMs than domains: six VMs with `max_skew = 1` on three nodes land 2-2-2."
	weightDescription = "1..100: a preference, scored and weighted by this number. Unset: a requirement."
)

// groupTagsValid checks every element of a list of tags; groupTags and groupTopologyKey are
// the attributes every group block has.
var (
	GroupTagsValid = listvalidator.ValueStringsAre(stringvalidator.RegexMatches(groupTagFormat,
		"must be a PVE tag: letters, digits and _ - + ., not starting with - + ."))
	groupTopologyKey = StringSpec{Description: topologyKeyDescription, Validators: []validator.String{topologyKeyCheck}, def: plugins.TopologyNode}
)

// groupSelectorAttributes are the attributes every group block has.
func groupSelectorAttributes[A, B any](k SchemaKit[A, B]) map[string]A {
	list := func(description string) A {
		return k.List(ListSpec{Description: description, Validators: []validator.List{listvalidator.SizeAtLeast(1), GroupTagsValid}})
	}
	return map[string]A{
		"tags":         list(groupTagsDescription),
		"tags_any_of":  list(groupAnyOfDescription),
		"tags_none_of": list(groupNoneOfDescription),
		"topology_key": k.String(groupTopologyKey),
	}
}

// groupTermAttributes are the attributes of vm_affinity and vm_anti_affinity.
func groupTermAttributes[A, B any](k SchemaKit[A, B]) map[string]A {
	attrs := groupSelectorAttributes(k)
	attrs["weight"] = k.Int64(Int64Spec{Description: weightDescription, Validators: []validator.Int64{int64validator.Between(1, 100)}})
	return attrs
}

// policyDescription documents node_affinity_policy or node_taints_policy against kube's default.
func policyDescription(what, kubeDefault string) string {
	return fmt.Sprintf("`Honor` (default): members on nodes that fail %s are not counted, nor are those nodes' domains "+
		"eligible. `Ignore`: they count. Kube's default is `%s`.", what, kubeDefault)
}

// SpreadAttributes are the attributes of topology_spread.
func SpreadAttributes[A, B any](k SchemaKit[A, B]) map[string]A {
	attrs := groupSelectorAttributes(k)
	policy := []validator.String{stringvalidator.OneOf(plugins.PolicyHonor, plugins.PolicyIgnore)}
	maps.Copy(attrs, map[string]A{
		"max_skew": k.Int64(Int64Spec{Description: "How many more members one domain may hold than the emptiest eligible one. Default 1.",
			Validators: []validator.Int64{int64validator.AtLeast(1)}, def: 1}),
		"when_unsatisfiable": k.String(StringSpec{Description: "`DoNotSchedule` (default): a node that would break the spread fails " +
			"(`TopologySpread` filter). `ScheduleAnyway`: emptier domains are preferred (`TopologySpread` score).",
			Validators: []validator.String{stringvalidator.OneOf(plugins.DoNotSchedule, plugins.ScheduleAnyway)}, def: plugins.DoNotSchedule}),
		"min_domains": k.Int64(Int64Spec{Description: "`DoNotSchedule` only (kube's `minDomains`): while fewer eligible domains " +
			"exist, the emptiest one counts as holding 0 members, so the group spreads to new domains before it doubles up. Unset: 1.",
			Validators: []validator.Int64{int64validator.AtLeast(1)}}),
		"node_affinity_policy": k.String(StringSpec{Description: policyDescription("the VM's `node_selector` or required `node_affinity`", plugins.PolicyHonor),
			Validators: policy, def: plugins.PolicyHonor}),
		"node_taints_policy": k.String(StringSpec{Description: policyDescription("to tolerate, by the VM's `toleration`s, their `NoSchedule` and `NoExecute` taints (HA maintenance included)", plugins.PolicyIgnore),
			Validators: policy, def: plugins.PolicyHonor}),
	})
	return attrs
}

// selector reads a block's group; ok is false when a list is known only after apply or the
// block selects nothing (an error on the block at).
func (g GroupSelectorModel) selector(ctx context.Context, at path.Path, diags *diag.Diagnostics) (s scheduler.TagSelector, ok bool) {
	all, ok1 := KnownStrings(ctx, g.Tags, diags)
	anyOf, ok2 := KnownStrings(ctx, g.TagsAnyOf, diags)
	noneOf, ok3 := KnownStrings(ctx, g.TagsNoneOf, diags)
	if g.Tags.IsNull() && g.TagsAnyOf.IsNull() && g.TagsNoneOf.IsNull() {
		// On an attribute of the block, so that Terraform shows the block (a path ending at the
		// block shows the whole resource).
		diags.AddAttributeError(at.AtName("tags"), "Missing group", "name the group with tags (carries all of them), tags_any_of (at least one) or tags_none_of (none)")
		return s, false
	}
	return scheduler.TagSelector{Tags: all, TagsAnyOf: anyOf, TagsNoneOf: noneOf}, ok1 && ok2 && ok3
}

// groupTerms converts the vm_affinity or vm_anti_affinity blocks named attr; complete is
// cleared when a value is known only after apply.
func groupTerms(ctx context.Context, attr string, blocks []VMGroupTermModel, complete *bool, diags *diag.Diagnostics) []scheduler.VMGroupTerm {
	var out []scheduler.VMGroupTerm
	for i, b := range blocks {
		errs := diags.ErrorsCount()
		g, ok := b.selector(ctx, path.Root(attr).AtListIndex(i), diags)
		if diags.ErrorsCount() > errs {
			continue
		}
		if !ok || b.TopologyKey.IsUnknown() || b.Weight.IsUnknown() {
			*complete = false
			continue
		}
		out = append(out, scheduler.VMGroupTerm{Tags: g.Tags, TagsAnyOf: g.TagsAnyOf, TagsNoneOf: g.TagsNoneOf,
			TopologyKey: topologyKey(b.TopologyKey), Weight: int(b.Weight.ValueInt64())})
	}
	return out
}

// spreads converts topology_spread blocks, defaults filled in.
func spreads(ctx context.Context, blocks []TopologySpreadModel, complete *bool, diags *diag.Diagnostics) []scheduler.SpreadConstraint {
	var out []scheduler.SpreadConstraint
	for i, b := range blocks {
		at := path.Root("topology_spread").AtListIndex(i)
		errs := diags.ErrorsCount()
		g, ok := b.selector(ctx, at, diags)
		if diags.ErrorsCount() > errs {
			continue
		}
		if !ok || b.TopologyKey.IsUnknown() || b.MaxSkew.IsUnknown() || b.WhenUnsatisfiable.IsUnknown() || b.MinDomains.IsUnknown() ||
			b.NodeAffinityPolicy.IsUnknown() || b.NodeTaintsPolicy.IsUnknown() {
			*complete = false
			continue
		}
		c := scheduler.SpreadConstraint{Tags: g.Tags, TagsAnyOf: g.TagsAnyOf, TagsNoneOf: g.TagsNoneOf, TopologyKey: topologyKey(b.TopologyKey),
			MaxSkew: 1, WhenUnsatisfiable: plugins.DoNotSchedule, MinDomains: int(b.MinDomains.ValueInt64()),
			NodeAffinityPolicy: b.NodeAffinityPolicy.ValueString(), NodeTaintsPolicy: b.NodeTaintsPolicy.ValueString()}
		if !b.MaxSkew.IsNull() {
			c.MaxSkew = int(b.MaxSkew.ValueInt64())
		}
		if !b.WhenUnsatisfiable.IsNull() {
			c.WhenUnsatisfiable = b.WhenUnsatisfiable.ValueString()
		}
		if c.MinDomains > 0 && c.WhenUnsatisfiable != plugins.DoNotSchedule {
			diags.AddAttributeError(at.AtName("min_domains"), "Invalid min_domains",
				"min_domains applies to when_unsatisfiable = \"DoNotSchedule\" only, as kube's minDomains; remove it or use DoNotSchedule")
			continue
		}
		out = append(out, c)
	}
	return out
}

func topologyKey(v types.String) string {
	if v.IsNull() {
		return plugins.TopologyNode
	}
	return v.ValueString()
}

// KnownStrings reads a list or set of strings; ok is false when it or an element is unknown.
func KnownStrings(ctx context.Context, v interface {
	IsUnknown() bool
	IsNull() bool
	ElementsAs(context.Context, any, bool) diag.Diagnostics
}, diags *diag.Diagnostics) ([]string, bool) {
	if v.IsUnknown() {
		return nil, false
	}
	if v.IsNull() {
		return nil, true
	}
	var elems []types.String
	diags.Append(v.ElementsAs(ctx, &elems, false)...)
	out := make([]string, 0, len(elems))
	for _, e := range elems {
		if e.IsUnknown() {
			return nil, false
		}
		out = append(out, e.ValueString())
	}
	return out, true
}

// HonorProxLBDescription documents the provider switch.
var HonorProxLBDescription = fmt.Sprintf("Honour ProxLB's guest tags, on the VM being placed and on existing guests: "+
	"`plb_anti_affinity_<group>` keeps the VMs carrying the same tag on different nodes and `plb_affinity_<group>` on the same "+
	"node (preferences of weight 100, `VMAffinity` score), `plb_pin_<node>` (repeatable) allows only those nodes (`VMAffinity` "+
	"filter). Default true. False sets the `%s` arg of both `VMAffinity` plugins to false.", plugins.ProxLBTagsArg)

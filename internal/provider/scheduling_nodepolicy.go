package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/nodelabels"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// nodeAffinityModel is one node_affinity block: required when weight is unset, a preference
// of that weight otherwise.
type nodeAffinityModel struct {
	Key      types.String `tfsdk:"key"`
	Operator types.String `tfsdk:"operator"`
	Values   types.List   `tfsdk:"values"`
	Weight   types.Int64  `tfsdk:"weight"`
}

// tolerationModel is one toleration block.
type tolerationModel struct {
	Key      types.String `tfsdk:"key"`
	Operator types.String `tfsdk:"operator"`
	Value    types.String `tfsdk:"value"`
	Effect   types.String `tfsdk:"effect"`
}

const (
	nodeSelectorDescription = "Node labels the VM's node must carry, every pair matching (Kubernetes' `nodeSelector`), " +
		"e.g. `{ zone = \"a\" }`. Labels come from the provider's `node` blocks, the nodes' Notes (`read_node_notes`) and the " +
		"built-ins `" + nodelabels.LabelName + "` and `" + nodelabels.LabelArch + "`. The `NodeSelector` filter; a node that " +
		"does not match is rejected with the label it has."
	nodeAffinityDescription = "A node affinity term (Kubernetes' node affinity), repeatable. Without `weight` it is required: " +
		"every required term and `node_selector` must match (the `NodeSelector` filter). With `weight` 1..100 it is a " +
		"preference: the `NodeAffinity` score sums the weights of the terms a node matches, normalised to 0..100 over the " +
		"feasible nodes."
	tolerationDescription = "Lets the VM onto nodes with a matching taint (Kubernetes' toleration), repeatable. A node with a " +
		"`NoSchedule` or `NoExecute` taint the VM does not tolerate is rejected (the `TaintToleration` filter; HA maintenance " +
		"is the taint `" + nodelabels.TaintMaintenance + ":NoSchedule`); `PreferNoSchedule` taints lower the score."
)

// nodeAffinityAttributes are the attributes of node_affinity.
func nodeAffinityAttributes[A, B any](k schemaKit[A, B]) map[string]A {
	return map[string]A{
		"key": k.str(stringSpec{required: true, description: "The node label key."}),
		"operator": k.str(stringSpec{required: true, description: "`In`, `NotIn` (also matches a node without the key), `Exists`, " +
			"`DoesNotExist`, `Gt` or `Lt` (the label and the single value compared as integers; a label that is not one never matches)."}),
		"values": k.list(listSpec{description: "Values for `In` and `NotIn` (one or more) and for `Gt` and `Lt` (exactly one integer); " +
			"none for `Exists` and `DoesNotExist`."}),
		"weight": k.i64(int64Spec{description: "1..100: a preference of that weight. Unset: a requirement."}),
	}
}

// tolerationAttributes are the attributes of toleration.
func tolerationAttributes[A, B any](k schemaKit[A, B]) map[string]A {
	return map[string]A{
		"key":      k.str(stringSpec{description: "The taint key. Empty with `operator = \"Exists\"`: tolerates every taint."}),
		"operator": k.str(stringSpec{description: "`Equal` (the default: key and value must match) or `Exists` (any value)."}),
		"value":    k.str(stringSpec{description: "The taint value for `Equal`; none with `Exists`."}),
		"effect":   k.str(stringSpec{description: "`NoSchedule`, `PreferNoSchedule` or `NoExecute`; empty tolerates every effect."}),
	}
}

// nodePolicyRequest checks node_selector, node_affinity and toleration, each error on its
// attribute path, and copies the known ones into req; complete is cleared when a value is
// known only after apply.
func nodePolicyRequest(ctx context.Context, selector types.Map, affinity []nodeAffinityModel, tolerations []tolerationModel,
	req *scheduler.Request, complete *bool, diags *diag.Diagnostics) {
	if selector.IsUnknown() {
		*complete = false
	} else if !selector.IsNull() {
		var pairs map[string]types.String
		diags.Append(selector.ElementsAs(ctx, &pairs, false)...)
		req.NodeSelector = map[string]string{}
		for k, v := range pairs {
			at := path.Root("node_selector").AtMapKey(k)
			if err := nodelabels.ValidateKey(k); err != nil {
				diags.AddAttributeError(at, "Invalid node_selector key", err.Error())
				continue
			}
			switch err := nodelabels.ValidateValue(v.ValueString()); {
			case v.IsUnknown():
				*complete = false
			case v.IsNull():
				diags.AddAttributeError(at, "Invalid node_selector value", fmt.Sprintf("label %q has a null value; give a value (it may be empty) or remove the key", k))
			case err != nil:
				diags.AddAttributeError(at, "Invalid node_selector value", err.Error())
			default:
				req.NodeSelector[k] = v.ValueString()
			}
		}
	}
	for i, a := range affinity {
		at := path.Root("node_affinity").AtListIndex(i)
		if !known(a.Key) || !known(a.Operator) || a.Values.IsUnknown() || a.Weight.IsUnknown() {
			*complete = false
			continue
		}
		term := scheduler.NodeAffinityTerm{Key: a.Key.ValueString(), Operator: a.Operator.ValueString(), Weight: int(a.Weight.ValueInt64())}
		if !a.Weight.IsNull() && (term.Weight < 1 || term.Weight > nodelabels.MaxWeight) {
			diags.AddAttributeError(at.AtName("weight"), "Invalid node_affinity weight",
				fmt.Sprintf("weight must be 1..%d for a preference, got %d; remove weight to make the term required", nodelabels.MaxWeight, term.Weight))
			continue
		}
		var values []types.String
		diags.Append(a.Values.ElementsAs(ctx, &values, false)...)
		valuesKnown := true
		for _, v := range values {
			valuesKnown = valuesKnown && known(v)
			term.Values = append(term.Values, v.ValueString())
		}
		if !valuesKnown {
			*complete = false
			continue
		}
		if err := nodelabels.ValidateTerm(term); err != nil {
			addFieldError(diags, at, "node_affinity", err)
			continue
		}
		req.NodeAffinity = append(req.NodeAffinity, term)
	}
	for i, t := range tolerations {
		at := path.Root("toleration").AtListIndex(i)
		if t.Key.IsUnknown() || t.Operator.IsUnknown() || t.Value.IsUnknown() || t.Effect.IsUnknown() {
			*complete = false
			continue
		}
		tol := scheduler.Toleration{Key: t.Key.ValueString(), Operator: t.Operator.ValueString(), Value: t.Value.ValueString(), Effect: t.Effect.ValueString()}
		if err := nodelabels.ValidateToleration(tol); err != nil {
			addFieldError(diags, at, "toleration", err)
			continue
		}
		req.Tolerations = append(req.Tolerations, tol)
	}
}

// addFieldError puts a nodelabels.FieldError on its field of the block at.
func addFieldError(diags *diag.Diagnostics, at path.Path, block string, err error) {
	var field string
	if fe, ok := err.(*nodelabels.FieldError); ok {
		field, at = fe.Field, at.AtName(fe.Field)
		err = fmt.Errorf("%s", fe.Message)
	}
	diags.AddAttributeError(at, "Invalid "+strings.TrimSuffix(block+" "+field, " "), err.Error())
}

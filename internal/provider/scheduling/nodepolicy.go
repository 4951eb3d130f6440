package scheduling

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/nodelabels"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/records"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// NodeAffinityModel is one node_affinity block: required when weight is unset, a preference
// of that weight otherwise. Its own expression (key, operator, values) and its
// match_expressions make one term; node_selector_term blocks are terms ORed instead.
type NodeAffinityModel struct {
	Key               types.String            `tfsdk:"key"`
	Operator          types.String            `tfsdk:"operator"`
	Values            types.List              `tfsdk:"values"`
	Weight            types.Int64             `tfsdk:"weight"`
	MatchExpressions  []NodeExpressionModel   `tfsdk:"match_expressions"`
	NodeSelectorTerms []NodeSelectorTermModel `tfsdk:"node_selector_term"`
}

// Form is how the block writes its terms, kept in the placement record for an import.
func (a NodeAffinityModel) Form() records.NodeAffinityForm {
	switch {
	case len(a.NodeSelectorTerms) > 0:
		return records.FormSelectorTerms
	case a.Key.IsNull() && a.Operator.IsNull() && a.Values.IsNull() && len(a.MatchExpressions) > 0:
		return records.FormMatchExpressions
	}
	return records.FormOwn
}

// NodeExpressionModel is one match_expressions block.
type NodeExpressionModel struct {
	Key      types.String `tfsdk:"key"`
	Operator types.String `tfsdk:"operator"`
	Values   types.List   `tfsdk:"values"`
}

// NodeSelectorTermModel is one node_selector_term block: its expressions ANDed.
type NodeSelectorTermModel struct {
	MatchExpressions []NodeExpressionModel `tfsdk:"match_expressions"`
}

// TolerationModel is one toleration block.
type TolerationModel struct {
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
	nodeAffinityDescription = "A node affinity (Kubernetes' node affinity), repeatable. Its expression (`key`, `operator`, " +
		"`values`) and its `match_expressions` blocks make one term, all of which a node must match (kube's `matchExpressions`); " +
		"`node_selector_term` blocks instead give several terms, of which a node must match one (kube's `nodeSelectorTerms`). " +
		"Without `weight` it is required: every required `node_affinity` block and `node_selector` must match (the " +
		"`NodeSelector` filter). With `weight` 1..100 it is a preference of one term (kube's `preferredDuringScheduling`): the " +
		"`NodeAffinity` score sums the weights of the blocks a node matches, normalised to 0..100 over the feasible nodes."
	tolerationDescription = "Lets the VM onto nodes with a matching taint (Kubernetes' toleration), repeatable. A node with a " +
		"`NoSchedule` or `NoExecute` taint the VM does not tolerate is rejected (the `TaintToleration` filter; HA maintenance " +
		"is the taint `" + nodelabels.TaintMaintenance + ":NoSchedule`); `PreferNoSchedule` taints lower the score."
)

// expressionAttributes are the attributes of one node expression; required in a
// match_expressions block, optional as node_affinity's own expression.
func expressionAttributes[A, B any](k SchemaKit[A, B], required bool) map[string]A {
	return map[string]A{
		"key": k.String(StringSpec{Required: required, Description: "The node label key."}),
		"operator": k.String(StringSpec{Required: required, Description: "`In`, `NotIn` (also matches a node without the key), `Exists`, " +
			"`DoesNotExist`, `Gt` or `Lt` (the label and the single value compared as integers; a label that is not one never matches)."}),
		"values": k.List(ListSpec{Description: "Values for `In` and `NotIn` (one or more) and for `Gt` and `Lt` (exactly one integer); " +
			"none for `Exists` and `DoesNotExist`."}),
	}
}

// nodeAffinityAttributes are the attributes of node_affinity.
func nodeAffinityAttributes[A, B any](k SchemaKit[A, B]) map[string]A {
	attrs := expressionAttributes(k, false)
	attrs["weight"] = k.Int64(Int64Spec{Description: "1..100: a preference of that weight. Unset: a requirement."})
	return attrs
}

const matchExpressionsDescription = "One more expression of the term (kube's `matchExpressions`), repeatable: a node must match all of them."

// nodeAffinityBlocks are the nested blocks of node_affinity.
func nodeAffinityBlocks[A, B any](k SchemaKit[A, B]) map[string]B {
	expressions := func() B { return k.Block(matchExpressionsDescription, expressionAttributes(k, true), nil) }
	return map[string]B{
		"match_expressions": expressions(),
		"node_selector_term": k.Block("A term (kube's `nodeSelectorTerms`), repeatable: a node matches the node affinity when it "+
			"matches all the `match_expressions` of one of its terms. Not with the block's own expression or `match_expressions`; "+
			"a preference (`weight`) takes one term.", nil, map[string]B{"match_expressions": expressions()}),
	}
}

// TolerationAttributes are the attributes of toleration.
func TolerationAttributes[A, B any](k SchemaKit[A, B]) map[string]A {
	return map[string]A{
		"key":      k.String(StringSpec{Description: "The taint key. Empty with `operator = \"Exists\"`: tolerates every taint."}),
		"operator": k.String(StringSpec{Description: "`Equal` (the default: key and value must match) or `Exists` (any value).", def: nodelabels.TolEqual}),
		"value":    k.String(StringSpec{Description: "The taint value for `Equal`; none with `Exists`."}),
		"effect":   k.String(StringSpec{Description: "`NoSchedule`, `PreferNoSchedule` or `NoExecute`; empty tolerates every effect."}),
	}
}

// nodePolicyRequest checks node_selector, node_affinity and toleration, each error on its
// attribute path, and copies the known ones into req; complete is cleared when a value is
// known only after apply.
func nodePolicyRequest(ctx context.Context, selector types.Map, affinity []NodeAffinityModel, tolerations []TolerationModel,
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
		if term, ok := affinityTerm(ctx, a, path.Root("node_affinity").AtListIndex(i), complete, diags); ok {
			req.NodeAffinity = append(req.NodeAffinity, term)
		}
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

// affinityTerm converts one node_affinity block; ok is false after an error or when a value is
// known only after apply (complete is then cleared).
func affinityTerm(ctx context.Context, a NodeAffinityModel, at path.Path, complete *bool, diags *diag.Diagnostics) (scheduler.NodeAffinityTerm, bool) {
	if a.Weight.IsUnknown() {
		*complete = false
		return scheduler.NodeAffinityTerm{}, false
	}
	term := scheduler.NodeAffinityTerm{Weight: int(a.Weight.ValueInt64())}
	if !a.Weight.IsNull() && (term.Weight < 1 || term.Weight > nodelabels.MaxWeight) {
		diags.AddAttributeError(at.AtName("weight"), "Invalid node_affinity weight",
			fmt.Sprintf("weight must be 1..%d for a preference, got %d; remove weight to make the block required", nodelabels.MaxWeight, term.Weight))
		return term, false
	}
	own := !a.Key.IsNull() || !a.Operator.IsNull() || !a.Values.IsNull()
	switch {
	case len(a.NodeSelectorTerms) > 0 && (own || len(a.MatchExpressions) > 0):
		diags.AddAttributeError(at.AtName("node_selector_term"), "Invalid node_affinity",
			"node_selector_term blocks give the terms of this node_affinity; move its key, operator, values and match_expressions into one of them")
		return term, false
	case len(a.NodeSelectorTerms) > 1 && term.Weight > 0:
		diags.AddAttributeError(at.AtName("node_selector_term"), "Invalid node_affinity",
			"a preference (weight) takes one term, as kube's preferredDuringScheduling; write one node_affinity block per term")
		return term, false
	case len(a.NodeSelectorTerms) == 0 && !own && len(a.MatchExpressions) == 0:
		// On an attribute of the block, so that Terraform shows the block.
		diags.AddAttributeError(at.AtName("key"), "Invalid node_affinity",
			"a node_affinity needs an expression: key and operator (and values), match_expressions blocks or node_selector_term blocks")
		return term, false
	}
	ok := true
	if len(a.NodeSelectorTerms) == 0 {
		var exprs []scheduler.NodeExpression
		if own {
			e, known := nodeExpression(ctx, NodeExpressionModel{Key: a.Key, Operator: a.Operator, Values: a.Values}, at, complete, diags)
			exprs, ok = append(exprs, e), known
		}
		more, known := nodeExpressions(ctx, a.MatchExpressions, at.AtName("match_expressions"), complete, diags)
		term.Terms = [][]scheduler.NodeExpression{append(exprs, more...)}
		return term, ok && known
	}
	for i, t := range a.NodeSelectorTerms {
		exprs, known := nodeExpressions(ctx, t.MatchExpressions, at.AtName("node_selector_term").AtListIndex(i).AtName("match_expressions"), complete, diags)
		if len(t.MatchExpressions) == 0 {
			diags.AddAttributeError(at.AtName("node_selector_term").AtListIndex(i), "Invalid node_selector_term", "a node_selector_term needs at least one match_expressions block")
			known = false
		}
		term.Terms, ok = append(term.Terms, exprs), ok && known
	}
	return term, ok
}

// nodeExpressions converts match_expressions blocks at the list path at.
func nodeExpressions(ctx context.Context, blocks []NodeExpressionModel, at path.Path, complete *bool, diags *diag.Diagnostics) ([]scheduler.NodeExpression, bool) {
	out, ok := []scheduler.NodeExpression{}, true
	for i, b := range blocks {
		e, known := nodeExpression(ctx, b, at.AtListIndex(i), complete, diags)
		out, ok = append(out, e), ok && known
	}
	return out, ok
}

// nodeExpression converts and checks one expression at the block path at; ok is false after
// an error or when a value is known only after apply.
func nodeExpression(ctx context.Context, b NodeExpressionModel, at path.Path, complete *bool, diags *diag.Diagnostics) (scheduler.NodeExpression, bool) {
	if !kit.Known(b.Key) || !kit.Known(b.Operator) || b.Values.IsUnknown() {
		if missing := "key"; b.Key.IsNull() || b.Operator.IsNull() {
			if !b.Key.IsNull() {
				missing = "operator"
			}
			diags.AddAttributeError(at.AtName(missing), "Invalid node_affinity", "an expression needs both key and operator")
		} else {
			*complete = false
		}
		return scheduler.NodeExpression{}, false
	}
	e := scheduler.NodeExpression{Key: b.Key.ValueString(), Operator: b.Operator.ValueString()}
	var values []types.String
	diags.Append(b.Values.ElementsAs(ctx, &values, false)...)
	for _, v := range values {
		if !kit.Known(v) {
			*complete = false
			return e, false
		}
		e.Values = append(e.Values, v.ValueString())
	}
	if err := nodelabels.ValidateExpression(e); err != nil {
		addFieldError(diags, at, "node_affinity", err)
		return e, false
	}
	return e, true
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

package vmresource

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/defaults"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
)

// vmSchemaVersion 1: the scheduling attributes (profile, annotations, node_selector, and the
// policy blocks' topology_key, max_skew, when_unsatisfiable, node_affinity_policy,
// node_taints_policy, a toleration's operator) plan their default when left out, so that an
// import plans no change. State written by version 0 kept them null: without an upgrade, the
// first plan after updating the provider would update every VM for nothing (and show its
// addresses and ha.rules as known after apply).
const vmSchemaVersion = 1

func (r *Resource) UpgradeState(ctx context.Context) map[int64]resource.StateUpgrader {
	var s resource.SchemaResponse
	r.Schema(ctx, resource.SchemaRequest{}, &s)
	return map[int64]resource.StateUpgrader{0: {StateUpgrader: func(ctx context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
		if req.RawState == nil || req.RawState.JSON == nil {
			resp.Diagnostics.AddError("Cannot upgrade the state of a qemuscheduler_vm",
				"The state has no JSON form (written by a provider older than this one's first release); remove it with "+changeset.CLI("state rm")+" and import the VM by its VMID.")
			return
		}
		dec := json.NewDecoder(bytes.NewReader(req.RawState.JSON))
		dec.UseNumber() // VMIDs and sizes stay integers
		var state map[string]any
		if err := dec.Decode(&state); err != nil {
			resp.Diagnostics.AddError("Cannot upgrade the state of a qemuscheduler_vm", "The state is not a JSON object: "+err.Error())
			return
		}
		fillDefaults(ctx, state, s.Schema.Attributes, s.Schema.Blocks)
		out, err := json.Marshal(state)
		if err != nil {
			resp.Diagnostics.AddError("Cannot upgrade the state of a qemuscheduler_vm", err.Error())
			return
		}
		resp.DynamicValue = &tfprotov6.DynamicValue{JSON: out}
	}}}
}

// fillDefaults gives every attribute with a schema default that the state holds as null (or
// not at all) its default, in obj and in the objects of its nested blocks. Attributes that had
// their default before version 1 are never null, so only the new ones change.
func fillDefaults(ctx context.Context, obj map[string]any, attrs map[string]schema.Attribute, blocks map[string]schema.Block) {
	for name, a := range attrs {
		if obj[name] != nil {
			continue
		}
		if v, ok := defaultValue(ctx, a); ok {
			obj[name] = v
		}
	}
	for name, b := range blocks {
		switch b := b.(type) {
		case schema.ListNestedBlock:
			list, _ := obj[name].([]any)
			for _, e := range list {
				if e, ok := e.(map[string]any); ok {
					fillDefaults(ctx, e, b.NestedObject.Attributes, b.NestedObject.Blocks)
				}
			}
		case schema.SingleNestedBlock:
			if e, ok := obj[name].(map[string]any); ok {
				fillDefaults(ctx, e, b.Attributes, b.Blocks)
			}
		}
	}
}

// defaultValue is the JSON value of attribute a's schema default, if it has one.
func defaultValue(ctx context.Context, a schema.Attribute) (any, bool) {
	switch a := a.(type) {
	case schema.StringAttribute:
		if a.Default != nil {
			var resp defaults.StringResponse
			a.Default.DefaultString(ctx, defaults.StringRequest{}, &resp)
			return resp.PlanValue.ValueString(), !resp.PlanValue.IsNull()
		}
	case schema.Int64Attribute:
		if a.Default != nil {
			var resp defaults.Int64Response
			a.Default.DefaultInt64(ctx, defaults.Int64Request{}, &resp)
			return resp.PlanValue.ValueInt64(), !resp.PlanValue.IsNull()
		}
	case schema.BoolAttribute:
		if a.Default != nil {
			var resp defaults.BoolResponse
			a.Default.DefaultBool(ctx, defaults.BoolRequest{}, &resp)
			return resp.PlanValue.ValueBool(), !resp.PlanValue.IsNull()
		}
	case schema.MapAttribute:
		if a.Default != nil {
			var resp defaults.MapResponse
			a.Default.DefaultMap(ctx, defaults.MapRequest{}, &resp)
			m := map[string]string{}
			ok := !resp.PlanValue.IsNull() && !resp.PlanValue.ElementsAs(ctx, &m, false).HasError()
			return m, ok
		}
	}
	return nil, false
}

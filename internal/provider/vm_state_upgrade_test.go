package provider

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource"
)

// A state written before the scheduling attributes had defaults (schema version 0) gets them
// filled in, so that the first plan after updating the provider changes no VM; what the state
// holds stays as it was, VMIDs as integers.
func TestUpgradeStateV0FillsSchedulingDefaults(t *testing.T) {
	ctx := context.Background()
	r := &vmresource.Resource{}
	v0 := `{"id":"1000","vmid":1000,"name":"web-1","memory":4096,"profile":null,"annotations":null,
		"node_selector":{"zone":"a"},"started":true,
		"vm_anti_affinity":[{"tags":["web"],"topology_key":null}],
		"vm_affinity":[{"tags":["db"],"topology_key":"zone","weight":10}],
		"topology_spread":[{"tags":["web"],"topology_key":null,"max_skew":null,"when_unsatisfiable":null}],
		"toleration":[{"key":"gpu","operator":null,"effect":"NoSchedule"}],
		"ha":{"state":"started","placement_rules":true}}`
	resp := upgradeV0(ctx, r, v0)
	if resp.Diagnostics.HasError() {
		t.Fatalf("upgrade: %v", resp.Diagnostics)
	}
	var s resource.SchemaResponse
	r.Schema(ctx, resource.SchemaRequest{}, &s)
	if _, err := resp.DynamicValue.Unmarshal(s.Schema.Type().TerraformType(ctx)); err != nil {
		t.Fatalf("the upgraded state does not fit the schema: %v", err)
	}
	var got map[string]any
	if err := json.Unmarshal(resp.DynamicValue.JSON, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"profile":     `"default"`,
		"annotations": `{}`,
		// set values stay as they were
		"node_selector":    `{"zone":"a"}`,
		"vmid":             `1000`,
		"vm_anti_affinity": `[{"tags":["web"],"topology_key":"node"}]`,
		"vm_affinity":      `[{"tags":["db"],"topology_key":"zone","weight":10}]`,
		"topology_spread": `[{"max_skew":1,"node_affinity_policy":"Honor","node_taints_policy":"Honor","tags":["web"],` +
			`"topology_key":"node","when_unsatisfiable":"DoNotSchedule"}]`,
		"toleration": `[{"effect":"NoSchedule","key":"gpu","operator":"Equal"}]`,
	}
	for k, w := range want {
		b, err := json.Marshal(got[k])
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != w {
			t.Errorf("%s = %s, want %s", k, b, w)
		}
	}
	if resp := upgradeV0(ctx, r, `[1]`); !resp.Diagnostics.HasError() {
		t.Error("a state that is not an object upgraded without an error")
	}
}

// upgradeV0 runs the upgrader from schema version 0 on a raw JSON state.
func upgradeV0(ctx context.Context, r *vmresource.Resource, raw string) resource.UpgradeStateResponse {
	var resp resource.UpgradeStateResponse
	r.UpgradeState(ctx)[0].StateUpgrader(ctx, resource.UpgradeStateRequest{RawState: &tfprotov6.RawState{JSON: []byte(raw)}}, &resp)
	return resp
}

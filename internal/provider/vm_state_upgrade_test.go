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

// A state of version 0 or 1 holds ha.rules as ids: each becomes a rule of that id with
// nothing else known, which the refresh after the upgrade reads (TestAccVMHARulesStateUpgrade).
func TestUpgradeStateRulesFromIDs(t *testing.T) {
	ctx := context.Background()
	r := &vmresource.Resource{}
	var s resource.SchemaResponse
	r.Schema(ctx, resource.SchemaRequest{}, &s)
	raw := `{"id":"150","vmid":150,"name":"db","ha":{"state":"started","placement_rules":true,"rules":["qemuscheduler-vm-150"]}}`
	for version := range int64(2) {
		resp := upgradeFrom(ctx, r, version, raw)
		if resp.Diagnostics.HasError() {
			t.Fatalf("upgrade from %d: %v", version, resp.Diagnostics)
		}
		if _, err := resp.DynamicValue.Unmarshal(s.Schema.Type().TerraformType(ctx)); err != nil {
			t.Fatalf("the state upgraded from %d does not fit the schema: %v", version, err)
		}
		var got struct {
			HA struct {
				Rules json.RawMessage `json:"rules"`
			} `json:"ha"`
		}
		if err := json.Unmarshal(resp.DynamicValue.JSON, &got); err != nil {
			t.Fatal(err)
		}
		want := `[{"affinity":null,"id":"qemuscheduler-vm-150","nodes":null,"resources":null,"strict":null,"type":null}]`
		if string(got.HA.Rules) != want {
			t.Errorf("from %d: ha.rules = %s, want %s", version, got.HA.Rules, want)
		}
	}
}

// upgradeV0 runs the upgrader from schema version 0 on a raw JSON state.
func upgradeV0(ctx context.Context, r *vmresource.Resource, raw string) resource.UpgradeStateResponse {
	return upgradeFrom(ctx, r, 0, raw)
}

// upgradeFrom runs the upgrader from schema version on a raw JSON state.
func upgradeFrom(ctx context.Context, r *vmresource.Resource, version int64, raw string) resource.UpgradeStateResponse {
	var resp resource.UpgradeStateResponse
	r.UpgradeState(ctx)[version].StateUpgrader(ctx, resource.UpgradeStateRequest{RawState: &tfprotov6.RawState{JSON: []byte(raw)}}, &resp)
	return resp
}

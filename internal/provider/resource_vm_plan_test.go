package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/scheduling"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/disk"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/firmware"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/reservations"
)

// existingVM is the state of web-1, VM 101 on pve2, with one 20 GiB disk.
func existingVM() *vmresource.Model {
	m := &vmresource.Model{
		ID: types.StringValue("101"), Node: types.StringValue("pve2"), VMID: types.Int64Value(101),
		Storage: types.StringValue("ceph"), PlacementSummary: types.StringValue("web-1: pve2"),
		SchedulingModel: scheduling.NullScheduling(), FirmwareModel: firmware.Null(), AgentModel: vmresource.EmptyAgent(),
		Name: types.StringValue("web-1"), Description: types.StringValue(""), Tags: types.SetValueMust(types.StringType, nil),
		Pool: types.StringNull(), Cores: types.Int64Value(1), Sockets: types.Int64Value(1), CPUType: types.StringValue(""),
		Memory: types.Int64Value(512), Balloon: types.Int64Value(0), Agent: types.BoolValue(false), OnBoot: types.BoolValue(false),
		Started: types.BoolValue(true),
		Disks:   []disk.Model{{Slot: types.StringValue("scsi0"), Storage: types.StringValue("ceph"), Size: types.Int64Value(20)}},
	}
	m.Timeouts.Object = types.ObjectNull(vmresource.TimeoutTypes)
	return m
}

// newVM is the plan of a VM to create: what the scheduler decides is unknown.
func newVM() *vmresource.Model {
	m := existingVM()
	m.ID, m.Node, m.VMID, m.Storage, m.PlacementSummary = types.StringUnknown(), types.StringUnknown(), types.Int64Unknown(), types.StringUnknown(), types.StringUnknown()
	m.Description, m.CPUType, m.Tags = types.StringUnknown(), types.StringUnknown(), types.SetUnknown(types.StringType)
	m.Cores, m.Sockets, m.Balloon, m.Agent, m.OnBoot = types.Int64Unknown(), types.Int64Unknown(), types.Int64Unknown(), types.BoolUnknown(), types.BoolUnknown()
	m.Disks[0].Storage = types.StringUnknown()
	return m
}

func withAnnotations(m *vmresource.Model, kv map[string]string) *vmresource.Model {
	elems := map[string]attr.Value{}
	for k, v := range kv {
		elems[k] = types.StringValue(v)
	}
	m.Annotations = types.MapValueMust(types.StringType, elems)
	return m
}

// planWith runs the resource's ModifyPlan against a simulated lab cluster, as Terraform does
// before every apply, and returns its diagnostics.
func planWith(t *testing.T, state, plan *vmresource.Model) diag.Diagnostics {
	t.Helper()
	sim := pvesim.NewTestServer(t, labCluster())
	resp := modifyPlan(t, planResource(simClient(t, sim)), state, plan)
	return resp.Diagnostics
}

// planResource is the VM resource of a provider configured for client, reading the cluster
// anew for each plan.
func planResource(client *proxmox.Client) *vmresource.Resource {
	return &vmresource.Resource{Data: &config.Data{Client: client, Ledger: reservations.New(), Changes: changeset.New(nil, nil)}}
}

// modifyPlan runs r's ModifyPlan for the change from state to plan (nil: none), the plan
// also being the configuration, and returns the response.
func modifyPlan(t *testing.T, r *vmresource.Resource, state, plan *vmresource.Model) resource.ModifyPlanResponse {
	t.Helper()
	ctx := context.Background()
	var sch resource.SchemaResponse
	r.Schema(ctx, resource.SchemaRequest{}, &sch)
	objType := sch.Schema.Type().TerraformType(ctx)
	var diags diag.Diagnostics
	req := resource.ModifyPlanRequest{
		State: tfsdk.State{Schema: sch.Schema, Raw: tftypes.NewValue(objType, nil)},
		Plan:  tfsdk.Plan{Schema: sch.Schema, Raw: tftypes.NewValue(objType, nil)},
	}
	if state != nil {
		diags.Append(req.State.Set(ctx, state)...)
	}
	if plan != nil {
		diags.Append(req.Plan.Set(ctx, plan)...)
	}
	req.Config = tfsdk.Config{Schema: sch.Schema, Raw: req.Plan.Raw} // as configured: what the tests plan
	if diags.HasError() {
		t.Fatalf("building the request: %v", diags)
	}
	resp := resource.ModifyPlanResponse{Plan: req.Plan}
	r.ModifyPlan(ctx, req, &resp)
	return resp
}

func TestModifyPlan(t *testing.T) {
	tests := []struct {
		name        string
		state, plan *vmresource.Model
		wantError   []string // substrings of one error's summary + detail; nil = no error
		wantWarning []string // substrings of one warning; nil = no warning
	}{
		{name: "create that fits", plan: newVM()},
		{name: "create that fits nowhere fails the plan with the explanation",
			plan: func() *vmresource.Model { m := newVM(); m.Memory = types.Int64Value(65536); return m }(),
			wantError: []string{`No placement for "web-1"`, "0/4 nodes are available", "exceeded memory overcommit ratio 1", "were offline",
				"If this is a destroy (terraform destroy, tofu destroy), which plans the configuration first, run terraform destroy -refresh=false (tofu destroy -refresh=false under OpenTofu)."}},
		{name: "create pinned to a node the annotations exclude",
			plan: func() *vmresource.Model {
				m := withAnnotations(newVM(), map[string]string{"node.qemu-scheduler/regex": "pve[12]"})
				m.Node = types.StringValue("pve3")
				return m
			}(),
			wantError: []string{"0/4 nodes are available", `didn't match pinned node "pve3"`}},
		{name: "create with a pinned vmid already in use",
			plan:      func() *vmresource.Model { m := newVM(); m.VMID = types.Int64Value(100); return m }(),
			wantError: []string{"VMID 100 is already in use; choose a free id or remove the pin"}},
		{name: "no change", state: existingVM(), plan: existingVM()},
		{name: "sticky placement: annotations that now exclude the node only warn",
			state: existingVM(), plan: withAnnotations(existingVM(), map[string]string{"node.qemu-scheduler/regex": "pve3"}),
			wantWarning: []string{"VM 101 no longer fits its node", "web-1 on pve2", `NodeRegex: "pve2" does not match "pve3"`, "Placement is sticky"}},
		{name: "sticky placement: a node selector the node no longer matches only warns",
			state: existingVM(), plan: func() *vmresource.Model {
				m := existingVM()
				m.NodeSelector = types.MapValueMust(types.StringType, map[string]attr.Value{"node.qemu-scheduler/name": types.StringValue("pve3")})
				return m
			}(),
			wantWarning: []string{"VM 101 no longer fits its node", "NodeSelector: label node.qemu-scheduler/name=pve2, node_selector node.qemu-scheduler/name=pve3", "Placement is sticky"}},
		{name: "migration to an offline node fails the plan",
			state: existingVM(), plan: func() *vmresource.Model { m := existingVM(); m.Node = types.StringValue("pve4"); return m }(),
			wantError: []string{"Cannot migrate to pve4", "NodeOnline", changeset.DestroyAnyway}},
		{name: "migration to a node that fits",
			state: existingVM(), plan: func() *vmresource.Model { m := existingVM(); m.Node = types.StringValue("pve3"); return m }()},
		{name: "shrinking a disk warns at plan (so that destroy is not blocked) and fails the apply",
			state: existingVM(), plan: func() *vmresource.Model { m := existingVM(); m.Disks[0].Size = types.Int64Value(10); return m }(),
			wantWarning: []string{"Disks cannot shrink: the apply will fail", "scsi0 is 20 GiB", "cannot shrink disks, so 10 GiB is refused", "(terraform apply -replace=ADDRESS (tofu apply -replace=ADDRESS under OpenTofu))"}},
		{name: "growing a disk", state: existingVM(), plan: func() *vmresource.Model { m := existingVM(); m.Disks[0].Size = types.Int64Value(40); return m }()},
		{name: "destroy", state: existingVM()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diags := planWith(t, tt.state, tt.plan)
			check := func(kind string, got diag.Diagnostics, want []string) {
				if want == nil {
					if len(got) > 0 {
						t.Errorf("unexpected %s: %v", kind, got)
					}
					return
				}
				if len(got) != 1 {
					t.Fatalf("%d %ss, want 1 containing %q: %v", len(got), kind, want, diags)
				}
				text := got[0].Summary() + ": " + got[0].Detail()
				for _, w := range want {
					if !strings.Contains(text, w) {
						t.Errorf("%s %q does not contain %q", kind, text, w)
					}
				}
			}
			check("error", diags.Errors(), tt.wantError)
			check("warning", diags.Warnings(), tt.wantWarning)
		})
	}
}

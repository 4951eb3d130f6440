package provider

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// A delete drops the shared cluster view: the ledger carries this process's creates, not its
// deletes, so a decision on a view read before the delete would count the gone VM. A
// replacement (destroy, then create) in a full cluster failed so when its peer's create had
// read the view while this VM's delete was still running (TestAccChangeSetReplaceInFullCluster,
// OpenTofu, a loaded machine).
func TestDeleteDropsTheSharedView(t *testing.T) {
	ctx := context.Background()
	sim := pvesim.NewTestServer(t, labCluster())
	data := &config.Data{Client: simClient(t, sim), Nodes: config.NewNodePolicy(nil, nil), MaxAge: time.Hour}
	r := &vmresource.Resource{Data: data}
	lists := func(vmid int) bool {
		snap, err := data.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(snap.Guests, func(g scheduler.Guest) bool { return g.VMID == vmid })
	}
	if !lists(100) {
		t.Fatal("the view does not list VM 100 before its delete")
	}

	state := existingVM()
	state.ID, state.VMID, state.Node = types.StringValue("100"), types.Int64Value(100), types.StringValue("pve1")
	var sch resource.SchemaResponse
	r.Schema(ctx, resource.SchemaRequest{}, &sch)
	req := resource.DeleteRequest{State: tfsdk.State{Schema: sch.Schema, Raw: tftypes.NewValue(sch.Schema.Type().TerraformType(ctx), nil)}}
	if diags := req.State.Set(ctx, state); diags.HasError() {
		t.Fatal(diags)
	}
	var resp resource.DeleteResponse
	r.Delete(ctx, req, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatal(resp.Diagnostics)
	}
	if _, ok := sim.Guest(100); ok {
		t.Fatal("VM 100 is still in the cluster")
	}
	if lists(100) {
		t.Error("the shared view still lists VM 100 after this process deleted it")
	}
}

package vmresource

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// replacesKey is the private-state key under which a planned VM names the VMID it would be
// replaced from: Terraform plans a replacement's create with the update plan's private data.
const replacesKey = "replaces"

// recordReplaced notes vmid as the VM a replacement of this instance would replace.
func recordReplaced(ctx context.Context, vmid int, priv kit.PrivateState, diags *diag.Diagnostics) {
	raw, err := json.Marshal(vmid)
	if err != nil {
		diags.AddError("Cannot record the VM being planned", err.Error())
		return
	}
	diags.Append(priv.SetKey(ctx, replacesKey, raw)...)
}

// replacedVMID is the VM a new VM's plan replaces, 0 for a plain create.
func replacedVMID(ctx context.Context, priv kit.PrivateState, diags *diag.Diagnostics) int {
	raw, d := priv.GetKey(ctx, replacesKey)
	diags.Append(d...)
	var vmid int
	if len(raw) == 0 || json.Unmarshal(raw, &vmid) != nil {
		return 0
	}
	return vmid
}

// WithNamesake adds a line to a refused new VM's error when a guest of its name exists that is
// not the VM it replaces. Terraform tells the provider nothing of two replacements: one with
// lifecycle create_before_destroy, whose create at apply comes after the old VM was deposed, as
// a plain create, while the old VM still runs and counts (the plan, which cannot tell it from
// the default destroy-then-create, passed); and a tainted VM's, planned as a plain create,
// which without a pinned VMID (taintedPredecessor) cannot be told from a new VM of that name.
func WithNamesake(err error, snap scheduler.Snapshot, r scheduler.Request, replaces int) error {
	if err == nil || replaces != 0 {
		return err
	}
	for _, g := range snap.Guests {
		if g.Name != r.Name || g.VMID == r.VMID || g.Template || g.Type != scheduler.GuestQEMU {
			continue
		}
		return changeset.Reworded(err, func(ue *scheduler.UnschedulableError) string {
			if ue.Request != r.Name {
				return ue.Message
			}
			msg := ue.Message + fmt.Sprintf("\nVM %d on %s already has this name.", g.VMID, g.Node)
			if r.VMID == 0 {
				msg += " If it is this resource's VM, tainted, Terraform plans its replacement as a new VM and does not say which VM it replaces, " +
					"so the old one still counts: untaint the resource (" + changeset.CLI("untaint ADDRESS") + "), then replace it (" + changeset.CLI("apply -replace=ADDRESS") + "; a replaced VM frees its room " +
					"for its replacement)."
			}
			msg += " If it is this resource's VM being replaced with create_before_destroy, it runs until its replacement is created, so it " +
				"counts: leave room for both, or replace it without create_before_destroy (Terraform's default destroys it first); the VMs of " +
				"a failed replacement stay, deposed, until an apply succeeds or " + changeset.DestroyRefreshFalse + " removes them."
			return msg
		})
	}
	return err
}

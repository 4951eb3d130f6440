package vmresource

// The node, pool and storages a qemuscheduler_vm names, checked at plan against the cluster view, so
// that a typo fails the plan rather than the create.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// CheckReferences fails the plan on a node, pool or storage that the create would fail on: a
// pinned node the cluster does not have, a pool it does not have (PVE: 403 "pool 'x' does not
// exist"), a disk, EFI disk or full clone storage it does not have or that holds no VM disks.
// Only what the plan sets anew is checked (all of a new VM's, a value that changes, a new
// disk), so that a node, pool or storage removed after the VM was made fails no plan:
// terraform destroy plans first. The view tells what the token may see; one that lists no
// storage at all (no Datastore.Audit anywhere) cannot tell storages.
func CheckReferences(plan, state *Model, creating bool, snap scheduler.Snapshot, diags *diag.Diagnostics) {
	if setAnew(plan.Pool, state.Pool, creating) && snap.Pools != nil && !slices.Contains(snap.Pools, plan.Pool.ValueString()) {
		diags.AddAttributeError(path.Root("pool"), "Pool does not exist",
			fmt.Sprintf("pool = %q: the cluster has no such pool (pools this token can see: %s), so Proxmox VE would refuse the create. "+
				"Fix the name, or create the pool first (pveum pool add %s); a pool the token lacks Pool.Audit on is not listed. %s",
				plan.Pool.ValueString(), kit.ListOrNone(snap.Pools), plan.Pool.ValueString(), changeset.DestroyAnyway))
	}
	if setAnew(plan.Node, state.Node, creating) {
		kit.CheckNodeExists(plan.Node.ValueString(), snap, diags)
	}
	content := storageContent(snap)
	if len(content) == 0 {
		return
	}
	check := func(at path.Path, v types.String) {
		name := v.ValueString()
		have, ok := content[name]
		switch {
		case !ok:
			diags.AddAttributeError(at, "Storage does not exist",
				fmt.Sprintf("%s = %q: the cluster has no such storage (storages: %s). Fix the name, or add the storage in Proxmox VE (Datacenter > Storage). %s",
					at, name, strings.Join(slices.Sorted(maps.Keys(content)), ", "), changeset.DestroyAnyway))
		case !slices.Contains(have, "images"):
			diags.AddAttributeError(at, "Storage holds no VM disks",
				fmt.Sprintf("%s = %q: the storage has no images content type (content: %s), so Proxmox VE would refuse the disk. Use a storage with images, or enable it on %s. %s",
					at, name, kit.ListOrNone(have), name, changeset.DestroyAnyway))
		}
	}
	stateDisks := map[string]types.String{}
	for _, d := range state.Disks {
		stateDisks[d.Slot.ValueString()] = d.Storage
	}
	for i, d := range plan.Disks {
		prior, existed := stateDisks[d.Slot.ValueString()]
		if kit.Known(d.Storage) && (!existed || !prior.Equal(d.Storage)) {
			check(path.Root("disk").AtListIndex(i).AtName("storage"), d.Storage)
		}
	}
	// The single blocks with a storage: nil blocks leave theirs null.
	var cloneStorage, priorClone, efiStorage, priorEFI types.String
	if plan.Clone != nil {
		cloneStorage = plan.Clone.Storage
	}
	if state.Clone != nil {
		priorClone = state.Clone.Storage
	}
	if plan.EFIDisk != nil {
		efiStorage = plan.EFIDisk.Storage
	}
	if state.EFIDisk != nil {
		priorEFI = state.EFIDisk.Storage
	}
	for _, b := range []struct {
		block       string
		plan, prior types.String
	}{{"clone", cloneStorage, priorClone}, {"efi_disk", efiStorage, priorEFI}} {
		if setAnew(b.plan, b.prior, creating) {
			check(path.Root(b.block).AtName("storage"), b.plan)
		}
	}
}

// CheckReferencesNow is checkReferences on the shared view, and again on a view read now when
// that one lacks what the plan names: at apply Terraform plans a VM again right after the
// resources it depends on, such as a pool another provider creates in the same apply, which a
// view read before them does not show. A read now that fails leaves the shared view's errors,
// with a warning saying why they were not checked again.
func CheckReferencesNow(ctx context.Context, p *config.Data, plan, state *Model, creating bool, snap scheduler.Snapshot, diags *diag.Diagnostics) {
	var found diag.Diagnostics
	CheckReferences(plan, state, creating, snap, &found)
	if found.HasError() {
		if now, err := p.SnapshotSince(ctx, time.Now()); err != nil {
			found.AddWarning("Cannot read the Proxmox VE cluster again",
				fmt.Sprintf("This VM's errors naming a missing pool, storage or node come from a view of the cluster read up to %s ago; reading it again, in case what they name was created since, failed: %v",
					p.MaxAge, err))
		} else {
			found = nil
			CheckReferences(plan, state, creating, now, &found)
		}
	}
	diags.Append(found...)
}

// setAnew tells whether a plan sets v anew: known and not empty, and for an existing VM other
// than prior.
func setAnew(v, prior types.String, creating bool) bool {
	return kit.Known(v) && v.ValueString() != "" && (creating || !v.Equal(prior))
}

// storageContent is the content types of every storage in the view, by name (a storage's
// configuration, and so its content, is the cluster's, whichever node lists it).
func storageContent(snap scheduler.Snapshot) map[string][]string {
	content := map[string][]string{}
	for _, n := range snap.Nodes {
		for _, st := range n.Storages {
			if _, seen := content[st.Name]; !seen {
				content[st.Name] = st.Content
			}
		}
	}
	return content
}

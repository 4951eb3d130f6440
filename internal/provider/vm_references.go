package provider

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

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// checkReferences fails the plan on a node, pool or storage that the create would fail on: a
// pinned node the cluster does not have, a pool it does not have (PVE: 403 "pool 'x' does not
// exist"), a disk, EFI disk or full clone storage it does not have or that holds no VM disks.
// Only what the plan sets anew is checked (all of a new VM's, a value that changes, a new
// disk), so that a node, pool or storage removed after the VM was made fails no plan:
// terraform destroy plans first. The view tells what the token may see; one that lists no
// storage at all (no Datastore.Audit anywhere) cannot tell storages.
func checkReferences(plan, state *vmModel, creating bool, snap scheduler.Snapshot, diags *diag.Diagnostics) {
	if setAnew(plan.Pool, state.Pool, creating) && snap.Pools != nil && !slices.Contains(snap.Pools, plan.Pool.ValueString()) {
		diags.AddAttributeError(path.Root("pool"), "Pool does not exist",
			fmt.Sprintf("pool = %q: the cluster has no such pool (pools this token can see: %s), so Proxmox VE would refuse the create. "+
				"Fix the name, or create the pool first (pveum pool add %s); a pool the token lacks Pool.Audit on is not listed. %s",
				plan.Pool.ValueString(), listOrNone(snap.Pools), plan.Pool.ValueString(), destroyAnyway))
	}
	if setAnew(plan.Node, state.Node, creating) {
		checkNodeExists(plan.Node.ValueString(), snap, diags)
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
					at, name, strings.Join(slices.Sorted(maps.Keys(content)), ", "), destroyAnyway))
		case !slices.Contains(have, "images"):
			diags.AddAttributeError(at, "Storage holds no VM disks",
				fmt.Sprintf("%s = %q: the storage has no images content type (content: %s), so Proxmox VE would refuse the disk. Use a storage with images, or enable it on %s. %s",
					at, name, listOrNone(have), name, destroyAnyway))
		}
	}
	stateDisks := map[string]types.String{}
	for _, d := range state.Disks {
		stateDisks[d.Slot.ValueString()] = d.Storage
	}
	for i, d := range plan.Disks {
		prior, existed := stateDisks[d.Slot.ValueString()]
		if known(d.Storage) && (!existed || !prior.Equal(d.Storage)) {
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

// checkReferencesNow is checkReferences on the shared view, and again on a view read now when
// that one lacks what the plan names: at apply Terraform plans a VM again right after the
// resources it depends on, such as a pool another provider creates in the same apply, which a
// view read before them does not show. A read now that fails leaves the shared view's errors,
// with a warning saying why they were not checked again.
func checkReferencesNow(ctx context.Context, p *providerData, plan, state *vmModel, creating bool, snap scheduler.Snapshot, diags *diag.Diagnostics) {
	var found diag.Diagnostics
	checkReferences(plan, state, creating, snap, &found)
	if found.HasError() {
		if now, err := p.snapshotSince(ctx, time.Now()); err != nil {
			found.AddWarning("Cannot read the Proxmox VE cluster again",
				fmt.Sprintf("This VM's errors naming a missing pool, storage or node come from a view of the cluster read up to %s ago; reading it again, in case what they name was created since, failed: %v",
					p.maxAge, err))
		} else {
			found = nil
			checkReferences(plan, state, creating, now, &found)
		}
	}
	diags.Append(found...)
}

// checkNodeExists fails the plan on a pinned node the cluster does not have: a typo, not a
// full cluster, so not a placement error that says to make room.
func checkNodeExists(node string, snap scheduler.Snapshot, diags *diag.Diagnostics) {
	if slices.ContainsFunc(snap.Nodes, func(n scheduler.Node) bool { return n.Name == node }) {
		return
	}
	names := make([]string, len(snap.Nodes))
	for i, n := range snap.Nodes {
		names[i] = n.Name
	}
	diags.AddAttributeError(path.Root("node"), "Node does not exist",
		fmt.Sprintf("node = %q: the cluster has no such node (nodes: %s). Fix the name, or remove node to let the scheduler choose. %s",
			node, listOrNone(names), destroyAnyway))
}

// setAnew tells whether a plan sets v anew: known and not empty, and for an existing VM other
// than prior.
func setAnew(v, prior types.String, creating bool) bool {
	return known(v) && v.ValueString() != "" && (creating || !v.Equal(prior))
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

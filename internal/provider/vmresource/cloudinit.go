package vmresource

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/cloudinit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/disk"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// CompleteCloudInit completes the cloud-init settings in set for a VM whose config is cfg
// (nil before it exists): a cicustom meta file set outside Terraform is kept, and a cloud-init
// drive is added unless cfg has one, on ide2 as PVE's GUI does, else on the first IDE slot
// that neither cfg nor the planned disks use.
func (m *Model) CompleteCloudInit(cfg, set map[string]string, storage string) error {
	if m.CloudInit == nil {
		return nil
	}
	if meta := kit.PropertyString(cfg["cicustom"], "")["meta"]; meta != "" && set["cicustom"] != "" {
		set["cicustom"] += ",meta=" + meta
	}
	if cloudinit.HasDrive(cfg) {
		return nil
	}
	for _, slot := range []string{"ide2", "ide0", "ide1", "ide3"} {
		if _, used := cfg[slot]; !used && !disk.HasSlot(m.Disks, slot) {
			set[slot] = storage + ":cloudinit"
			return nil
		}
	}
	return errors.New("the cloud-init drive needs a free IDE slot, but ide0 to ide3 are all in use; free one of them")
}

// CheckSnippets checks the snippet volumes a plan sets (all of a new VM's, those that change
// or move to another node for an existing one, state then being its prior state) against the
// cluster view, as PVE would when it starts the VM: the storage must exist and have the
// snippets content type, be available on the VM's node (none while the scheduler has not
// chosen it), and hold the file. The file is looked for where it can be told: on the VM's
// node, or on an online node for a shared storage.
func (r *Resource) CheckSnippets(ctx context.Context, plan, state *Model, snap scheduler.Snapshot, diags *diag.Diagnostics) {
	ci, node := plan.CloudInit, plan.Node.ValueString()
	if ci == nil {
		return
	}
	prior := state.CloudInit
	if node != state.Node.ValueString() {
		prior = nil
	}
	for _, c := range cloudinit.CicustomAttrs {
		v := *ci.Snippet(c.Attr)
		m := cloudinit.SnippetVolume.FindStringSubmatch(v.ValueString())
		switch {
		case !kit.Known(v) || m == nil:
			continue // unknown until apply, or malformed (the validator says so)
		case prior != nil && prior.Snippet(c.Attr).Equal(v):
			continue
		}
		volid, storage, at := m[0], m[1], path.Root("cloud_init").AtName(c.Attr)
		var found, onNode bool
		var content []string
		lister := ""
		for _, n := range snap.Nodes {
			for _, st := range n.Storages {
				if st.Name != storage {
					continue
				}
				found, content = true, st.Content
				onNode = onNode || n.Name == node
				// Any node lists a shared storage: the first online one, so that VMs share it.
				if st.Shared && n.Online && lister == "" || !st.Shared && n.Name == node {
					lister = n.Name
				}
			}
		}
		switch {
		case !found:
			diags.AddAttributeError(at, "Snippet storage does not exist",
				fmt.Sprintf("cloud_init.%s = %q: the cluster has no storage %q. Use a storage with the snippets content type, e.g. local:snippets/FILE. %s", c.Attr, volid, storage, changeset.DestroyAnyway))
			continue
		case !slices.Contains(content, "snippets"):
			diags.AddAttributeError(at, "Storage holds no snippets",
				fmt.Sprintf("cloud_init.%s = %q: storage %q has no snippets content type (content: %s). Enable snippets on it (Datacenter > Storage > Edit > Content), or use a storage that has it. %s",
					c.Attr, volid, storage, strings.Join(content, ", "), changeset.DestroyAnyway))
			continue
		case node != "" && !onNode:
			diags.AddAttributeError(at, "Snippet storage not on the VM's node",
				fmt.Sprintf("cloud_init.%s = %q: storage %q is not available on node %s, where the VM runs. Use a storage the node has. %s", c.Attr, volid, storage, node, changeset.DestroyAnyway))
			continue
		case lister == "":
			continue // a local storage of a node the scheduler has still to choose
		}
		files, err := r.Data.SnippetFiles(ctx, lister, storage, false)
		if err == nil && !slices.Contains(files, volid) {
			// The shared listing may predate the file: Terraform plans the VM again at apply right
			// after the resource that uploads it (bpg's proxmox_virtual_environment_file).
			files, err = r.Data.SnippetFiles(ctx, lister, storage, true)
		}
		if err != nil {
			diags.AddAttributeWarning(at, "Cannot check the snippet", fmt.Sprintf("Listing the snippets of %s on %s failed, so %s is not checked: %s", storage, lister, volid, err))
			continue
		}
		if !slices.Contains(files, volid) {
			diags.AddAttributeError(at, "Snippet not found",
				fmt.Sprintf("cloud_init.%s = %q: storage %s on %s has no such snippet, so PVE would fail to start the VM. Copy the file into the storage's snippets directory, or fix the name (snippets there: %s). %s",
					c.Attr, volid, storage, lister, kit.ListOrNone(files), changeset.DestroyAnyway))
		}
	}
}

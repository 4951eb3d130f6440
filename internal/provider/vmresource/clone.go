package vmresource

// The clone block of qemuscheduler_vm: schema, validation, the source (looked up once per
// plan or create), the node pin its local disks impose, and the clone request.

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/disk"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

type CloneModel struct {
	SourceVMID types.Int64  `tfsdk:"source_vmid"`
	SourceNode types.String `tfsdk:"source_node"`
	Full       types.Bool   `tfsdk:"full"`
	Storage    types.String `tfsdk:"storage"`
}

func cloneBlock() schema.Block {
	return schema.SingleNestedBlock{
		Description: "Create by cloning a VM or template instead of from scratch. Changing it replaces the VM, except on the first apply " +
			"after an import: PVE does not record what a VM was cloned from, so that apply takes the block as it is, in place.",
		PlanModifiers: []planmodifier.Object{objectplanmodifier.RequiresReplaceIf(replaceOnCloneChange,
			"Changing the clone block replaces the VM, except on the first apply after an import.",
			"Changing the `clone` block replaces the VM, except on the first apply after an import.")},
		Attributes: map[string]schema.Attribute{
			"source_vmid": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.Between(scheduler.MinVMID, scheduler.MaxVMID)},
				Description: "VMID of the template or VM to clone. Required in a clone block."},
			"source_node": schema.StringAttribute{Optional: true, Description: "Node of the source. Default: looked up.",
				Validators: []validator.String{stringvalidator.RegexMatches(kit.NodeName, "must be a node name: letters, digits and '-'")}},
			"full": schema.BoolAttribute{Optional: true, Description: "Full clone (default true); false makes a linked clone of a template."},
			"storage": schema.StringAttribute{Optional: true, Validators: kit.StorageValidators(),
				Description: "Target storage of a full clone; checked at plan like a disk's. Default: the scheduler's storage. To clone onto another node the source's disks must be on shared storage."},
		},
	}
}

// importedKey marks, in the private state, a VM imported and not applied since: its clone
// block is unknown to PVE, so the configuration's is taken as it is.
const importedKey = "imported"

// replaceOnCloneChange replaces the VM when its clone block changes, unless the VM was
// imported without one since the last apply: the configuration then names the source it was
// cloned from (the docs' import example), which re-cloning would destroy the VM for.
func replaceOnCloneChange(ctx context.Context, req planmodifier.ObjectRequest, resp *objectplanmodifier.RequiresReplaceIfFuncResponse) {
	raw, diags := req.Private.GetKey(ctx, importedKey)
	resp.Diagnostics.Append(diags...)
	resp.RequiresReplace = !req.StateValue.IsNull() || len(raw) == 0
}

// markImported sets (or, on an apply, clears) the mark replaceOnCloneChange reads.
func markImported(ctx context.Context, priv kit.PrivateState, imported bool, diags *diag.Diagnostics) {
	var value []byte
	if imported {
		value = []byte("true")
	}
	diags.Append(priv.SetKey(ctx, importedKey, value)...)
}

func (c *CloneModel) validate(diags *diag.Diagnostics) {
	if c.SourceVMID.IsNull() {
		diags.AddAttributeError(path.Root("clone").AtName("source_vmid"), "Missing clone source",
			"A clone block needs source_vmid, the VMID of the template or VM to clone.")
	}
	if !c.Full.IsNull() && !c.Full.IsUnknown() && !c.Full.ValueBool() && kit.Known(c.Storage) {
		diags.AddAttributeError(path.Root("clone").AtName("storage"), "Storage of a linked clone",
			"A linked clone (full = false) keeps its disks on the template's storage, so clone.storage cannot be set. Remove storage, or make a full clone.")
	}
}

// cloneSource reads the source of a clone block (nil without one, or while its VMID is
// unknown), looking its node up unless source_node names it.
func (r *Resource) cloneSource(ctx context.Context, c *CloneModel, diags *diag.Diagnostics) *proxmox.VM {
	if c == nil || c.SourceVMID.IsUnknown() {
		return nil
	}
	src, err := r.Data.ReadVM(ctx, int(c.SourceVMID.ValueInt64()), c.SourceNode.ValueString())
	if err != nil {
		// The source may be gone from the cluster since the VMs that exist were created: an
		// error a destroy's plan of the remaining new VMs (a half-applied count) meets too.
		diags.AddAttributeError(path.Root("clone").AtName("source_vmid"), "Cannot read the clone source",
			fmt.Sprintf("clone.source_vmid = %d: %v. %s", c.SourceVMID.ValueInt64(), err, changeset.DestroyAnyway))
	}
	return src
}

// CloneNode pins the request to the clone source's node when the source has a disk on storage
// that is not shared: PVE can clone such a VM only onto its own node.
func CloneNode(snap scheduler.Snapshot, src *proxmox.VM, req scheduler.Request) (scheduler.Request, error) {
	if src == nil {
		return req, nil
	}
	shared := map[string]bool{}
	for _, n := range snap.Nodes {
		if n.Name == src.Node {
			for _, st := range n.Storages {
				shared[st.Name] = st.Shared
			}
		}
	}
	for k, v := range src.Config {
		if !disk.Slot.MatchString(k) || strings.Contains(v, "media=cdrom") || shared[kit.DiskStorage(v)] {
			continue
		}
		if req.Node != "" && req.Node != src.Node {
			// Cluster: the source may have moved since the pin was written.
			return req, &scheduler.InputError{Attribute: "node", Message: fmt.Sprintf(
				"the clone source %d keeps %s on storage %q, which is local to %s: Proxmox VE can clone it only onto %s. Pin node = %q, or clone from a template on shared storage",
				src.VMID, k, kit.DiskStorage(v), src.Node, src.Node, src.Node), Cluster: true}
		}
		req.Node = src.Node
		return req, nil
	}
	return req, nil
}

// full reports a full clone (this provider's default), which copies the
// disks onto a storage of the target node.
func (c *CloneModel) full() bool { return c.Full.IsNull() || c.Full.ValueBool() }

// CloneRequest clones src to the placement: a full clone onto clone.storage, else the
// scheduler's storage; a linked clone stays on the template's storage.
func (g *NewGuest) CloneRequest(p scheduler.Placement) proxmox.CloneRequest {
	m := g.M
	full := m.Clone.full()
	storage := ""
	if full {
		storage = kit.StorageOr(m.Clone.Storage, p.Storage)
	}
	return proxmox.CloneRequest{SourceNode: g.Src.Node, SourceVMID: g.Src.VMID, NewID: p.VMID,
		Target: p.Node, Name: m.Name.ValueString(), Pool: m.Pool.ValueString(), Storage: storage, Full: full}
}

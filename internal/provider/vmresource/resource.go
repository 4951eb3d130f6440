package vmresource

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/scheduling"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/disk"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/firmware"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/network"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provision"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// qemuscheduler_vm: this file holds the resource's methods, in the order Terraform calls
// them; the rest lives by concern:
//
//	resource_vm_schema.go      schema, and the plan modifier the device blocks share
//	resource_vm_model.go       model: VM settings to PVE config and back
//	scheduling_model.go        scheduling attributes, shared with qemuscheduler_placement
//	vm_clone.go, vm_disk.go,   one block each: schema, validation, create/update/read mapping
//	vm_network.go, vm_cloudinit.go
//	vm_create.go               the create path around internal/provision
//	vm_update.go               the in-place update
//	locate.go                  finding a VM wherever it runs now
//	resource_vm_validators.go  formats of PVE identifiers and values

// maxCreateAttempts bounds how often a create decides again: after PVE says the VMID exists
// (another Terraform run or a human took it between our snapshot and the create), or after
// the node filled up under a concurrent create. Three runs of 20 VMs in one range need a few.
const maxCreateAttempts = 20

// NewResource returns the qemuscheduler_vm resource.
func NewResource() resource.Resource { return &Resource{} }

type Resource struct{ Data *config.Data }

var (
	_ resource.ResourceWithModifyPlan   = (*Resource)(nil)
	_ resource.ResourceWithImportState  = (*Resource)(nil)
	_ resource.ResourceWithUpgradeState = (*Resource)(nil)
)

func (r *Resource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_vm"
}

func (r *Resource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.Data = config.DataFrom(req.ProviderData, &resp.Diagnostics)
}

func (r *Resource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m Model
	if !kit.ConfigReadable(req.Config.Get(ctx, &m)) {
		return
	}
	m.Validate(ctx, &resp.Diagnostics)
	kit.CheckVCPUs(m.Cores, m.Sockets, &resp.Diagnostics)
	if !m.Balloon.IsNull() && !m.Memory.IsNull() && !m.Balloon.IsUnknown() && !m.Memory.IsUnknown() && m.Balloon.ValueInt64() > m.Memory.ValueInt64() {
		resp.Diagnostics.AddAttributeError(path.Root("balloon"), "Balloon larger than memory",
			fmt.Sprintf("balloon (%d MiB) must not exceed memory (%d MiB).", m.Balloon.ValueInt64(), m.Memory.ValueInt64()))
	}
	if m.Clone != nil {
		m.Clone.validate(&resp.Diagnostics)
	}
	disk.Validate(m.Disks, &resp.Diagnostics)
	network.Validate(m.Networks, &resp.Diagnostics)
	m.FirmwareModel.ValidateFirmware(ctx, m.Clone != nil, &resp.Diagnostics)
	ValidateHA(m.Started, m.HA, &resp.Diagnostics)
	checkPlannedNotes(ctx, &m, m.Description, nil, &resp.Diagnostics) // the profile's defaults are unknown here
	if m.CloudInit != nil {
		m.CloudInit.Validate(&resp.Diagnostics)
	}
}

// Request is the scheduling request for the model and, for a VM still to be created, the
// clone source if any: unset sizes of a clone come from it, so the overcommit filters see what
// the VM will really use. (An existing VM no longer needs its source, which may be gone.)
// complete is false when some scheduling value is known only after apply.
func (r *Resource) Request(ctx context.Context, m *Model, creating bool, diags *diag.Diagnostics) (req scheduler.Request, src *proxmox.VM, complete bool) {
	req, complete = m.SchedulingModel.Request(ctx, diags)
	r.Data.WithDefaults(m.Profile, &req)
	req.Name, req.Node, req.VMID = m.Name.ValueString(), m.Node.ValueString(), int(m.VMID.ValueInt64())
	// Tags still unknown (not configured, read back after create) make no group membership.
	req.Tags, _ = scheduling.KnownStrings(ctx, m.Tags, diags)
	if creating {
		if src = r.cloneSource(ctx, m.Clone, diags); src != nil {
			req.Cores, req.Sockets, req.MemoryMiB = configSize(src.Config)
			if m.Clone.full() {
				req.CloneFrom = src.Node
				if kit.Known(m.Clone.Storage) {
					req.Storage = m.Clone.Storage.ValueString()
				}
			}
		}
		req.DiskBytes = NewDiskBytes(m.Disks, m.Clone, src)
	}
	return scheduling.Sized(req, m.Cores, m.Sockets, m.Memory), src, complete
}

// ModifyPlan checks at plan time that a new VM fits somewhere, that disks only grow, and warns
// when an existing VM's node no longer passes the hard filters.
func (r *Resource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if r.Data == nil {
		return
	}
	if !req.State.Raw.IsNull() {
		// Refreshed just before: the plans of growth that wait for it (changeset.Set.Reading) go on.
		var vmid types.Int64
		resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("vmid"), &vmid)...)
		defer r.Data.Changes.Planning(int(vmid.ValueInt64()))
	}
	if req.Plan.Raw.IsNull() {
		return
	}
	if !req.State.Raw.IsNull() {
		r.unpinPlan(ctx, req, resp)
	}
	var plan Model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	planNoAddresses(ctx, &plan, resp)
	r.warnAutoRebalance(ctx, req.Config, &plan, &resp.Diagnostics)
	if plan.Node.IsUnknown() && !plan.ID.IsUnknown() || plan.Name.IsUnknown() {
		return
	}
	profile := r.Data.Pipeline(ctx, &plan.SchedulingModel, &resp.Diagnostics)
	if profile == nil {
		return
	}
	// With the profile's defaults in the record, as Create and Update write it. An unset
	// description is unknown in a create's plan: the create writes none.
	notes := plan.Description
	if notes.IsUnknown() {
		resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("description"), &notes)...)
	}
	checkPlannedNotes(ctx, &plan, notes, r.Data, &resp.Diagnostics)
	creating := req.State.Raw.IsNull()
	var state Model
	if !creating {
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		disk.CheckDiskShrink(state.Disks, plan.Disks, &resp.Diagnostics, false)
		disk.WarnPendingDiskOptions(state.Disks, plan.Disks, state.Started.ValueBool(), &resp.Diagnostics)
		WarnPendingSizes(&state, &plan, state.Started.ValueBool(), &resp.Diagnostics)
	}
	schedReq, src, complete := r.Request(ctx, &plan, creating, &resp.Diagnostics)
	disk.CheckIOThread(plan.Disks, PlannedController(&plan, &state, creating, src), &resp.Diagnostics)
	if resp.Diagnostics.HasError() || !complete {
		return
	}
	if creating {
		scheduling.WarnIgnoredAnnotations(profile, &schedReq, &plan.SchedulingModel, &resp.Diagnostics)
	}
	snap, err := r.Data.Snapshot(ctx)
	resp.Diagnostics.Append(r.Data.Nodes.Warnings()...)
	if err != nil {
		resp.Diagnostics.AddError("Cannot read the Proxmox VE cluster", err.Error())
		return
	}
	r.CheckSnippets(ctx, &plan, &state, snap, &resp.Diagnostics)
	CheckReferencesNow(ctx, r.Data, &plan, &state, creating, snap, &resp.Diagnostics)
	if !creating {
		planRecordSync(ctx, resp, &plan, &state, r.Data, snap, int(state.VMID.ValueInt64()))
	}
	var rec RulesRecord
	if !creating {
		rec = rulesRecordIn(ctx, req.Private, &resp.Diagnostics)
	}
	breaks := r.planHARules(ctx, resp, &plan, &state, creating, rec, snap, haPolicy{Profile: profile, req: schedReq, Name: plan.Name.ValueString(), strict: failoverStrict(plan.HA)})
	if resp.Diagnostics.HasError() {
		return // a wrong name, not the cluster's capacity: no placement error besides
	}
	if creating {
		switch r.Data.NewNames.Claim(schedReq.Name) {
		case 1:
		case 2:
			resp.Diagnostics.AddAttributeError(path.Root("name"), "Duplicate VM name",
				fmt.Sprintf("name = %q is the name of another new VM of this plan. The scheduler tells the plan's VMs apart by name, so each needs its own: "+
					"with count, e.g. name = \"%s-${count.index}\"; with for_each, name = each.key. %s", schedReq.Name, schedReq.Name, changeset.DestroyAnyway))
			return
		default:
			return // the clash is reported once, on the second VM of the name; the plan fails on it
		}
	}
	if creating {
		// Placed with the plan's other new VMs: all of them fit, or the plan fails.
		replaces := replacedVMID(ctx, req.Private, &resp.Diagnostics)
		if replaces == 0 {
			replaces = changeset.TaintedPredecessor(snap, schedReq)
		}
		if schedReq, err = CloneNode(snap, src, schedReq); err == nil {
			err = r.Data.Changes.Plan(ctx, snap, changeset.Member{Profile: profile, Req: schedReq, Replaces: replaces})
		}
		if err != nil {
			err = WithNamesake(config.UnderProfile(err, plan.Profile), snap, schedReq, replaces)
			kit.AddSetError(&resp.Diagnostics, r.Data.Changes, err, plan.Name.ValueString(), changeset.ReduceNewVMs)
		}
		return
	}
	// Should Terraform replace the VM, its create is planned next with this as prior private
	// data: the replacement then does not count the VM it replaces against itself.
	if resp.Private != nil { // the framework always sets it; hand-built test responses do not
		recordReplaced(ctx, int(state.VMID.ValueInt64()), resp.Private, &resp.Diagnostics)
	}
	vmid, current := int(state.VMID.ValueInt64()), state.Node.ValueString()
	// Growth in place is checked against the node's totals after all the plan's changes.
	size := changeset.SizeOf(schedReq)
	size.Node, size.Added = current, disk.GrownDisks(state.Disks, plan.Disks, state.Storage.ValueString())
	snap, err = r.Data.Changes.Grow(ctx, snap, vmid, size)
	if err != nil {
		kit.AddPlanError(&resp.Diagnostics, changeset.BesideGrowth(err, state.Name.ValueString()), "", r.Data.Changes.Hint(changeset.ReduceNewVMs))
		return
	}
	if at := LeaveHAFrom(snap, &plan, &state, &resp.Diagnostics); at != "" {
		current = at
	}
	schedReq.Node, schedReq.VMID = "", 0
	// A changed pin is a migration: the target must pass the hard filters.
	if target := plan.Node.ValueString(); kit.Known(plan.Node) && target != current {
		if reasons := profile.CheckNode(snap, schedReq, target, vmid); len(reasons) > 0 {
			resp.Diagnostics.AddAttributeError(path.Root("node"), "Cannot migrate to "+target,
				fmt.Sprintf("%s fails the scheduling rules for this VM: %s. %s", target, strings.Join(reasons, "; "), changeset.DestroyAnyway))
		} else if kit.Known(state.PlacementSummary) {
			resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("placement_summary"), SummaryOn(state.PlacementSummary.ValueString(), target))...)
		}
		return
	}
	if checkNodeCPUs(snap, current, schedReq.VCPUs(), &plan, &state, &resp.Diagnostics); resp.Diagnostics.HasError() {
		return
	}
	if reasons := append(profile.CheckNode(snap, schedReq, current, vmid), r.Data.Changes.StorageShort(snap, vmid)...); len(reasons) > 0 {
		stays := "Placement is sticky, so the VM stays; pin or change node to move it."
		if breaks != "" {
			stays = "Placement is sticky, but " + breaks + ": PVE's HA manager moves a VM that breaks an HA rule to a node the rules " +
				"allow (when there is one), so this VM or its peer leaves once the rule is written. Pin the nodes to choose where they go."
		}
		detail := fmt.Sprintf("%s on %s: %s. %s", state.Name.ValueString(), current, strings.Join(reasons, "; "), stays)
		if note := r.Data.Changes.GrowthNote(snap, current); note != "" {
			detail += " " + note
		}
		resp.Diagnostics.AddWarning("VM "+state.ID.ValueString()+" no longer fits its node under the current scheduling rules", detail)
	}
}

func (r *Resource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan Model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := plan.Timeouts.Create(ctx, 30*time.Minute)
	resp.Diagnostics.Append(d...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer r.Data.Wrote()
	profile := r.Data.Pipeline(ctx, &plan.SchedulingModel, &resp.Diagnostics)
	schedReq, src, _ := r.Request(ctx, &plan, true, &resp.Diagnostics) // a create runs on a known plan
	guest := &NewGuest{M: &plan, config: plan.VMConfig(ctx, &resp.Diagnostics), Src: src, record: r.record(ctx, &plan, &resp.Diagnostics)}
	withRecord(guest.config, guest.record)
	checkNotesSize(guest.config, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx = tflog.NewSubsystem(ctx, kit.LogSubsystem)
	prov := &provision.Provisioner{
		Client: &vmClient{r: r, g: guest}, Ledger: r.Data.Ledger, Request: schedReq, Clone: plan.Clone != nil,
		// Decided jointly with the creates of the same burst still to be decided.
		Decide: func(snap scheduler.Snapshot) (scheduler.Placement, error) {
			pinned, err := CloneNode(snap, src, schedReq)
			if err != nil {
				return scheduler.Placement{}, err
			}
			return r.Data.Changes.Decide(snap, changeset.Member{Profile: profile, Req: pinned})
		},
		Check: func(snap scheduler.Snapshot, node string, vmid int) []string {
			return profile.CheckNode(snap, schedReq, node, vmid)
		},
		Setup:       func(ctx context.Context, p scheduler.Placement) error { return r.configureNew(ctx, guest, p) },
		MaxAttempts: maxCreateAttempts,
		Log: func(ctx context.Context, msg string, fields map[string]any) {
			tflog.SubsystemInfo(ctx, kit.LogSubsystem, msg, fields)
		},
	}
	r.Data.Changes.Settle(ctx)
	res, err := prov.Run(ctx)
	r.Data.Changes.Done(schedReq.Name)
	// A plan with unknown values skipped the cluster read, so node warnings may wait here.
	resp.Diagnostics.Append(r.Data.Nodes.Warnings()...)
	switch {
	case res.Created:
	case res.Placement.VMID == 0:
		var pe *proxmox.APIError
		if errors.As(err, &pe) {
			resp.Diagnostics.AddError("Cannot read the Proxmox VE cluster", err.Error())
		} else {
			// Refused at its decision, after its plan passed: what holds at apply, as for a
			// refusal of the create's plan.
			kit.AddPlanError(&resp.Diagnostics, config.UnderProfile(err, plan.Profile), plan.Name.ValueString(), r.Data.Changes.Hint(changeset.ReduceNewVMs))
		}
		return
	default:
		resp.Diagnostics.AddError(fmt.Sprintf("Cannot create VM %q", plan.Name.ValueString()), createErrorDetail(err, schedReq.VMID, res.Attempts))
		return
	}
	// The guest exists: record it whatever happened, so that a failure taints it instead of
	// orphaning it.
	p := res.Placement
	r.Data.Records.Remember(p.VMID, guest.record)
	if err == nil && plan.HA != nil {
		hp, since := haPolicy{Profile: profile, req: schedReq, Name: plan.Name.ValueString(), strict: failoverStrict(plan.HA), node: p.Node, placing: true}, time.Now()
		err = r.syncHARules(ctx, &plan, p.VMID, ruleMode(plan.HA), hp, since)
		setRulesDue(ctx, resp.Private, err != nil, &resp.Diagnostics)
		if err == nil {
			// Its home counts in its peers' classes whether or not it keeps rules itself.
			r.syncPeers(ctx, p.VMID, hp, since, &resp.Diagnostics)
		}
	}
	plan.Storage = types.StringValue(p.Storage)
	plan.PlacementSummary = types.StringValue(config.WithProfile(p.Summary, plan.Profile))
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("VM %d was created on %s but could not be set up", p.VMID, p.Node),
			err.Error()+"\n\nThe VM is kept in the state as tainted: the next apply replaces it, "+changeset.CLI("destroy")+" removes it.")
	}
	cleanupCtx, cancelCleanup := provision.CleanupContext(ctx)
	defer cancelCleanup()
	r.readBack(cleanupCtx, &plan, p.Node, p.VMID, &resp.Diagnostics)
	r.ReadAgent(cleanupCtx, &plan, err == nil, &resp.Diagnostics)
	RecordPin(ctx, &plan, req.Config, err == nil, resp.Private, &resp.Diagnostics)
	plan.HA.knownRules()
	r.settleAutoRebalance(cleanupCtx, plan.HA, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, plan)...)
}

func (r *Resource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state Model
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	vmid := int(state.VMID.ValueInt64())
	// In a plan, Terraform plans the VM right after this read: a growth planned meanwhile waits
	// for it, unless the read ends the VM (gone) or fails.
	r.Data.Changes.Reading(vmid)
	defer func() {
		if resp.Diagnostics.HasError() || resp.State.Raw.IsNull() {
			r.Data.Changes.Planning(vmid)
		}
	}()
	vm, err := r.Data.ReadVM(ctx, vmid, state.Node.ValueString())
	if errors.Is(err, proxmox.ErrNotFound) {
		tflog.Warn(ctx, "VM is gone; removing it from state", map[string]any{"vmid": vmid})
		resp.State.RemoveResource(ctx)
		return
	}
	if errors.Is(err, proxmox.ErrNodeOffline) {
		// A failed node must not stop every plan of the configuration (nor its destroy):
		// the VM is still there, only out of reach.
		resp.Diagnostics.AddWarning(fmt.Sprintf("VM %d cannot be read", vmid),
			fmt.Sprintf("Its node %s is offline or unreachable, so the state keeps what was last read. Changes to the VM (and its destroy) fail until the node is back or the VM runs elsewhere (HA recovery, or a migration in Proxmox VE). %v",
				state.Node.ValueString(), err))
		return
	}
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Cannot read VM %d", vmid), err.Error())
		return
	}
	state.ReadInto(ctx, vm, &resp.Diagnostics)
	r.Data.Records.Seen(vm)
	r.readHA(ctx, &state, false, &resp.Diagnostics)
	r.readRulesDue(ctx, &state, resp.Private, &resp.Diagnostics)
	r.ReadAgent(ctx, &state, false, &resp.Diagnostics)
	KeepPin(ctx, &state, req.Private, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// readBack refreshes the model after a write, from node or wherever the VM runs now (the HA
// manager may have moved it since); if PVE cannot be read, computed values that are still
// unknown are set null so that the state can be saved.
func (r *Resource) readBack(ctx context.Context, m *Model, node string, vmid int, diags *diag.Diagnostics) {
	m.ID, m.VMID, m.Node = types.StringValue(strconv.Itoa(vmid)), types.Int64Value(int64(vmid)), types.StringValue(node)
	vm, err := r.Data.ReadVM(ctx, vmid, node)
	if err != nil {
		diags.AddError(fmt.Sprintf("Cannot read VM %d back", vmid), err.Error())
		m.nullUnknowns()
		return
	}
	m.ReadInto(ctx, vm, diags)
}

func (r *Resource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state Model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := plan.Timeouts.Update(ctx, 30*time.Minute)
	resp.Diagnostics.Append(d...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer r.Data.Invalidate()
	vmid := int(state.VMID.ValueInt64())
	node := state.Node.ValueString()
	plannedNode, plannedSummary := plan.Node, plan.PlacementSummary
	if plan.PlacementSummary.IsUnknown() { // planned so to rewrite the placement record (planRecordSync)
		plan.PlacementSummary = state.PlacementSummary
	}
	want := plan.VMConfig(ctx, &resp.Diagnostics)
	old := state.VMConfig(ctx, &resp.Diagnostics)
	rec := r.record(ctx, &plan, &resp.Diagnostics)
	withRecord(want, rec)
	withRecord(old, r.record(ctx, &state, &resp.Diagnostics))
	checkNotesSize(want, &resp.Diagnostics)
	disk.CheckDiskShrink(state.Disks, plan.Disks, &resp.Diagnostics, true)
	if resp.Diagnostics.HasError() {
		return
	}
	err := r.haBeforeMove(ctx, &plan, &state, vmid, &resp.Diagnostics)
	if err == nil {
		err = r.update(ctx, &plan, &state, want, old, node, vmid)
	}
	if err == nil {
		r.Data.Records.Remember(vmid, rec)
	}
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Cannot update VM %d", vmid), err.Error())
	}
	// Record what PVE now has, even after a timeout: a migration may have finished.
	cleanupCtx, cancelCleanup := provision.CleanupContext(ctx)
	defer cancelCleanup()
	expected := node
	if kit.Known(plan.Node) {
		expected = plan.Node.ValueString()
	}
	r.readBack(cleanupCtx, &plan, expected, vmid, &resp.Diagnostics)
	// A VM this update started has a guest agent to wait for; one that ran on is asked once.
	plan.keepAddresses(state.AgentModel)
	r.ReadAgent(cleanupCtx, &plan, err == nil && !state.Started.ValueBool(), &resp.Diagnostics)
	RecordPin(ctx, &plan, req.Config, err == nil, resp.Private, &resp.Diagnostics)
	if err == nil {
		markImported(ctx, resp.Private, false, &resp.Diagnostics)
	}
	if err == nil && plan.HA != nil {
		// The rules last, after the state is read: a rule the placement breaks makes the HA
		// manager move the VM or a peer (the plan warned), which must not change the node
		// Terraform holds the apply to; the next refresh reads where it went.
		planned, synced := plan.HA.Rules, false
		if p, ok := r.HAPolicy(ctx, &plan, &resp.Diagnostics); ok {
			if err := r.syncHARules(ctx, &plan, vmid, haUpdateMode(plan.HA, state.HA), p, time.Now()); err != nil {
				resp.Diagnostics.AddError(fmt.Sprintf("Cannot update the HA rules of VM %d", vmid), err.Error())
			} else {
				synced = true
			}
		}
		setRulesDue(ctx, resp.Private, !synced, &resp.Diagnostics)
		if !planned.IsUnknown() && !planned.IsNull() {
			// Terraform holds the apply to a known planned value (plannedRules); a peer of the
			// same apply may have changed the VM's rules since, which the next refresh reads.
			plan.HA.Rules = planned
		}
	}
	plan.HA.knownRules()
	r.settleAutoRebalance(cleanupCtx, plan.HA, &resp.Diagnostics)
	// A pinned VM keeps its pin as its node, and an unpinned one may be planned with its node
	// unknown, but the summary says where it runs.
	moved := kit.Known(plannedNode) && !plan.Node.Equal(plannedNode) || kit.Known(plannedSummary) && !plan.PlacementSummary.Equal(plannedSummary)
	if HAManaged(plan.HA) && moved {
		// The HA manager moved the VM while it was applied (a failover, a rule this apply or
		// a peer's wrote): Terraform holds the apply to the planned node and summary, and the
		// next refresh reads where it runs (not drift).
		tflog.Info(ctx, "the HA manager moved the VM during the apply", map[string]any{"vmid": vmid, "node": plan.Node.ValueString()})
		if kit.Known(plannedNode) {
			plan.Node = plannedNode
		}
		if kit.Known(plannedSummary) {
			plan.PlacementSummary = plannedSummary
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *Resource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state Model
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := state.Timeouts.Delete(ctx, 10*time.Minute)
	resp.Diagnostics.Append(d...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer r.Data.Wrote()
	// A later decision (a replacement's create) must not count the VM from a view read before.
	defer r.Data.Invalidate()
	vmid := int(state.VMID.ValueInt64())
	c := r.Data.Client
	vm, err := r.Data.ReadVM(ctx, vmid, state.Node.ValueString())
	if errors.Is(err, proxmox.ErrNotFound) {
		return
	}
	if err == nil && vm.Config["protection"] == "1" {
		// PVE refuses to destroy a protected VM: fail before shutting it down.
		resp.Diagnostics.AddError(fmt.Sprintf("VM %d is protected", vmid),
			"Proxmox VE refuses to destroy a VM with protection set. Set protection = false and apply first, then destroy; nothing was changed.")
		return
	}
	if err == nil && state.HA != nil {
		// Out of its HA rules and HA first: the HA manager would answer the shutdown below with
		// an hastop that returns before the VM stops.
		if err = r.syncHARules(ctx, nil, vmid, haRulesLeave, haPolicy{}, time.Time{}); err == nil {
			err = c.RemoveHAResource(ctx, vmid)
		}
	}
	if err == nil && vm.Status == "running" {
		err = c.ShutdownVM(ctx, vm.Node, vmid, timeout/2)
	}
	if err == nil {
		err = c.DeleteVM(ctx, vm.Node, vmid)
	}
	if errors.Is(err, proxmox.ErrNodeOffline) {
		resp.Diagnostics.AddError(fmt.Sprintf("Cannot delete VM %d", vmid),
			fmt.Sprintf("%v\n\nProxmox VE destroys a VM only on its node, which is out of reach; nothing was changed. Destroy again once the node is back. "+
				"If the node is gone for good, remove it from the cluster in Proxmox VE (pvecm delnode) and the VM from the state ("+changeset.CLI("state rm")+").", err))
		return
	}
	if err != nil && !errors.Is(err, proxmox.ErrNotFound) {
		resp.Diagnostics.AddError(fmt.Sprintf("Cannot delete VM %d", vmid), err.Error())
		return
	}
	r.Data.Records.Forget(vmid)
}

// TimeoutTypes is the object type of the timeouts block.
var TimeoutTypes = map[string]attr.Type{"create": types.StringType, "update": types.StringType, "delete": types.StringType}

// ImportState accepts "123" or "pve2/123". The VM's disks and NICs become managed blocks.
func (r *Resource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	node, idText, ok := strings.Cut(req.ID, "/")
	if !ok {
		node, idText = "", req.ID
	}
	vmid, err := strconv.Atoi(idText)
	if err != nil || vmid < scheduler.MinVMID || vmid > scheduler.MaxVMID {
		resp.Diagnostics.AddError("Invalid import ID", fmt.Sprintf("%q is not a VMID; use 123 or node/123, e.g. pve2/123.", req.ID))
		return
	}
	vm, err := r.Data.ReadVM(ctx, vmid, node)
	if err == nil && vm.Config["template"] == "1" {
		// Managed as a VM, a template would be started by the next apply (PVE refuses) and
		// removed by terraform destroy, with the base its clones are made from.
		err = fmt.Errorf("VM %d is a template, which qemuscheduler_vm does not manage: clone VMs from it with clone { source_vmid = %d }", vmid, vmid)
	}
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Cannot import VM %d", vmid), err.Error())
		return
	}
	m := Model{Storage: types.StringNull(), PlacementSummary: types.StringValue("imported"), SchedulingModel: scheduling.NullScheduling(), FirmwareModel: firmware.Null(), AgentModel: EmptyAgent(), Pool: types.StringNull()}
	m.Timeouts.Object = types.ObjectNull(TimeoutTypes)
	m.importDevices(ctx, vm.Config, &resp.Diagnostics)
	if len(m.Disks) > 0 {
		m.Storage = m.Disks[0].Storage
	}
	m.ReadInto(ctx, vm, &resp.Diagnostics)
	importRecord(ctx, &m, vm, r.Data, &resp.Diagnostics)
	r.readHA(ctx, &m, true, &resp.Diagnostics)
	ImportPin(ctx, &m, node, resp.Private, &resp.Diagnostics)
	markImported(ctx, resp.Private, true, &resp.Diagnostics)
	r.ReadAgent(ctx, &m, false, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

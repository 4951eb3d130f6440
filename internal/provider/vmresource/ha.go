package vmresource

// The ha block of qemuscheduler_vm: the VM as a PVE HA resource (/cluster/ha/resources,
// sid vm:<vmid>), registered after create, updated in place and removed before destroy.
// While the VM is HA-managed (a resource not "ignored"), PVE hands its start, stop and
// migrate to the HA manager (hastart, hastop, hamigrate tasks that end before anything
// happens), so those are followed by polling the guest until it is where and as wanted.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/harules"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/scheduling"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

type HAModel struct {
	State          types.String `tfsdk:"state"`
	MaxRestart     types.Int64  `tfsdk:"max_restart"`
	MaxRelocate    types.Int64  `tfsdk:"max_relocate"`
	Comment        types.String `tfsdk:"comment"`
	AutoRebalance  types.Bool   `tfsdk:"auto_rebalance"`
	PlacementRules types.Bool   `tfsdk:"placement_rules"`
	Failover       types.String `tfsdk:"failover"`
	Rules          types.List   `tfsdk:"rules"`
}

// failoverStrict tells a block whose rules are kept through failover: ha.failover = "strict".
func failoverStrict(h *HAModel) bool {
	return h != nil && h.Failover.ValueString() == harules.FailoverStrict
}

// PVE's defaults for a resource's requested state and its restart and relocate counts.
const (
	defaultHAState = "started"
	defaultHACount = 1
)

func haBlock() schema.Block {
	return schema.SingleNestedBlock{
		Description: "Make the VM highly available: a PVE HA resource (`vm:<vmid>`) registered after create, updated in place and " +
			"removed before destroy. While HA manages the VM (`state` other than `ignored`), its start, stop and migrations go " +
			"through the HA manager, and a move by the HA manager is not drift: a pinned `node` stays the VM's node in the state " +
			"while the HA manager runs it elsewhere. Ending HA management (removing the block or `state = \"ignored\"`) of a VM " +
			"running away from its pinned node migrates it back there, which the plan warns of.",
		Attributes: map[string]schema.Attribute{
			"state": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(defaultHAState),
				Validators: []validator.String{stringvalidator.OneOf("started", "stopped", "ignored")},
				Description: "The state the HA manager keeps the VM in: `started`, `stopped` (each must agree with `started`), " +
					"or `ignored` (HA leaves the VM alone, as if it were not a resource). Default `started`."},
			"max_restart": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(defaultHACount),
				Validators:  []validator.Int64{int64validator.AtLeast(0)},
				Description: "How often the HA manager restarts the VM on its node after a failed start. Default 1."},
			"max_relocate": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(defaultHACount),
				Validators:  []validator.Int64{int64validator.AtLeast(0)},
				Description: "How often the HA manager moves the VM to another node after failed starts. Default 1."},
			"comment": schema.StringAttribute{Optional: true, Validators: []validator.String{stringvalidator.LengthBetween(1, 4096)},
				Description: "Comment of the HA resource."},
			// Optional and computed, without a default: PVE's default (on) is the HA resource's own,
			// an admin may turn it off in PVE, and releases before 9.2 have no flag at all. A schema
			// default would undo the admin's choice at every apply and claim a flag older PVE lacks;
			// unset, the provider leaves the flag to PVE and shows what PVE has.
			"auto_rebalance": schema.BoolAttribute{Optional: true, Computed: true, PlanModifiers: []planmodifier.Bool{keptEvenNull{}},
				Description: "Whether the HA manager's automatic rebalancing (the datacenter's CRS option `ha-auto-rebalance`, " +
					"PVE 9.2) may migrate the VM: the HA resource's `auto-rebalance` flag. `false` keeps the VM out of the " +
					"rebalancing's migrations; recovery, maintenance, HA rules and manual migrations still move it. Unset, the " +
					"provider leaves the flag as PVE has it (PVE's default is `true`) and shows it here; removing it from the " +
					"configuration leaves PVE's value as it is. PVE before 9.2 has no such flag: the provider leaves it out, " +
					"and the plan warns when it is set."},
			"placement_rules": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				Description: "Keep PVE 9 HA rules that make the HA manager honour the VM's hard placement rules when it recovers or " +
					"moves the VM, as `failover` says: a `node-affinity` rule listing the nodes the VM's node-level rules " +
					"(`node_selector`, required `node_affinity`, untolerated `NoSchedule`/`NoExecute` taints, the node regex " +
					"annotation) allow, ranked or restricted by its required terms with another topology key and its " +
					"`topology_spread`, with the node it runs on first (placement is sticky: a changed `node_selector` does not make " +
					"the HA manager move it), none when every node is in one class; a node of a domain rule that lost the topology key " +
					"(a Notes typo, a removed label) is a plan error, never a wider rule, and an offline node keeps its place in it; " +
					"a negative `resource-affinity` rule for a required " +
					"`vm_anti_affinity` over nodes under `failover = \"strict\"`; a positive one for a required `vm_affinity` over " +
					"nodes, with the one VM it was placed next to. Rule ids start with `qemuscheduler-`; other rules are read, never " +
					"changed. A rule Proxmox VE would refuse is a plan error; on PVE 8 (no HA rules) a warning. `false` writes no " +
					"rule for this VM, and turning it off takes the VM out of the rules it was in (a peer that keeps its rules puts " +
					"it back into their group's rule). Default `true`."},
			"failover": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(harules.FailoverPreferred),
				Validators: []validator.String{stringvalidator.OneOf(harules.FailoverPreferred, harules.FailoverStrict)},
				Description: "What the HA manager may do with the VM's hard placement rules when it recovers or moves the VM " +
					"(with `placement_rules`). `preferred` (availability first): the VM's `node-affinity` rule is non-strict, its nodes " +
					"in priority classes (PVE's `node:priority`: 2, 1, 0): its own domain first, then the domains that keep its terms " +
					"(for a `topology_spread`, fewer members than its own; for a `vm_anti_affinity`, no other member), then the other " +
					"nodes its node-level rules allow; when none of them is up, PVE runs it on any node rather than leave it down, and " +
					"with failback moves it back once its domain is up. A required `vm_anti_affinity` over nodes only ranks the nodes " +
					"without another member first. `strict` (the rules first): the `node-affinity` rule is strict, a required term " +
					"with another topology key keeps the VM in its domain, and a required `vm_anti_affinity` over nodes is a negative " +
					"`resource-affinity` rule: the HA manager leaves the VM down (recovery) rather than break one, as a quorum " +
					"database tier wants. A `topology_spread` is a distribution goal under both: it ranks the nodes and never pins " +
					"the VM to its domain. A required `vm_affinity` over nodes is, under both, a `positive` rule over the VM and the " +
					"one VM of the group it was placed next to, which share that VM's node rule in one priority class. The plan warns " +
					"where a rule leaves the VM no failover target. The rules are those of the VM's home, the node the provider " +
					"placed it on (at its create or a move it made; recorded in its node rule's comment), so an HA recovery " +
					"changes no rule and no plan. Changing it rewrites the rules in place, with no change to the VM; an import " +
					"reads it from the rules. Default `preferred`."},
			"rules": scheduling.HARulesResourceAttribute("The HA rules this provider keeps that hold the VM, as Proxmox VE has them, " +
				"sorted by id (the names and shape of bpg's `proxmox_virtual_environment_harule`). A rule deleted or changed outside " +
				"Terraform shows as a change here, and the next apply restores it. An update that changes only what the rules do not read " +
				"(the description, the memory, a tag no group selects by) plans them as the state has them; one that changes what they " +
				"read plans them as the apply will write them, decided by the configuration, the state and the cluster read at plan; " +
				"known after apply only where a VM they are computed from changes in the same plan (a VM its required terms or " +
				"`DoNotSchedule` spreads select by tag, or another VM of its rules: created, destroyed, moved, or with its tags, `ha` " +
				"block or scheduling terms changed), since that VM's apply may change them before this one's."),
		},
	}
}

// HAManaged tells whether PVE's HA manager acts on the VM: a resource not ignored.
func HAManaged(h *HAModel) bool { return h != nil && h.State.ValueString() != "ignored" }

// ValidateHA checks that started and ha.state ask for the same: the HA manager would undo
// the other.
func ValidateHA(started types.Bool, h *HAModel, diags *diag.Diagnostics) {
	if h == nil || h.State.IsUnknown() || started.IsUnknown() {
		return
	}
	state := kit.CmpOr(h.State.ValueString(), defaultHAState)
	run := started.IsNull() || started.ValueBool() // started defaults to true
	if state == "ignored" || (state == "started") == run {
		return
	}
	want := map[bool]string{true: "started", false: "stopped"}
	diags.AddAttributeError(path.Root("ha").AtName("state"), "started and ha.state disagree",
		fmt.Sprintf("started = %t but ha.state = %q: the HA manager keeps the VM %s whatever Terraform does. "+
			"Set ha.state = %q, or started = %t.", run, state, state, want[run], !run))
}

// Settings is the block as PVE's resource options; an unset (or not yet known) auto_rebalance
// leaves PVE's flag alone.
func (h *HAModel) Settings() proxmox.HASettings {
	s := proxmox.HASettings{State: h.State.ValueString(), MaxRestart: int(h.MaxRestart.ValueInt64()),
		MaxRelocate: int(h.MaxRelocate.ValueInt64()), Comment: h.Comment.ValueString()}
	if !h.AutoRebalance.IsNull() && !h.AutoRebalance.IsUnknown() {
		s.AutoRebalance = proxmox.FlagOf(h.AutoRebalance.ValueBool())
	}
	return s
}

// AutoRebalanceOf is ha.auto_rebalance for PVE's flag f, on a release that has the flag
// (rebalancing: PVE 9.2 or later) or not. Unset is PVE's default, on. Before 9.2 there is no
// flag to read: the block keeps prior, what the configuration set (and the provider left out),
// null when nothing was.
func AutoRebalanceOf(f proxmox.Flag, rebalancing bool, prior types.Bool) types.Bool {
	switch {
	case !rebalancing && prior.IsUnknown():
		return types.BoolNull()
	case !rebalancing:
		return prior
	}
	return types.BoolValue(f != proxmox.FlagOff)
}

// HAFromSettings is the block for PVE's resource s (nil: none) on a release with the
// auto-rebalance flag (rebalancing) or not; an empty comment is null unless prior, the block
// known before, has one set.
func HAFromSettings(s *proxmox.HASettings, prior *HAModel, rebalancing bool) *HAModel {
	if s == nil {
		return nil
	}
	h := &HAModel{State: types.StringValue(s.State), MaxRestart: types.Int64Value(int64(s.MaxRestart)),
		MaxRelocate: types.Int64Value(int64(s.MaxRelocate)), Comment: types.StringValue(s.Comment),
		PlacementRules: types.BoolValue(true), Failover: types.StringValue(harules.FailoverPreferred), Rules: rulesValue(nil)}
	if s.Comment == "" && (prior == nil || prior.Comment.IsNull()) {
		h.Comment = types.StringNull()
	}
	priorRebalance := types.BoolNull()
	if prior != nil {
		priorRebalance = prior.AutoRebalance
	}
	h.AutoRebalance = AutoRebalanceOf(s.AutoRebalance, rebalancing, priorRebalance)
	if prior != nil && !prior.PlacementRules.IsNull() && !prior.PlacementRules.IsUnknown() {
		h.PlacementRules = prior.PlacementRules
	}
	if prior != nil && !prior.Failover.IsNull() && !prior.Failover.IsUnknown() {
		h.Failover = prior.Failover
	}
	if prior != nil && !prior.Rules.IsNull() && !prior.Rules.IsUnknown() {
		h.Rules = prior.Rules
	}
	return h
}

// readHA refreshes m.HA from PVE: when managed, or with all (an import) whatever it is. A
// VM without the block costs no request.
func (r *Resource) readHA(ctx context.Context, m *Model, all bool, diags *diag.Diagnostics) {
	if m.HA == nil && !all {
		return
	}
	vmid := int(m.VMID.ValueInt64())
	s, err := r.Data.Client.HAResource(ctx, vmid)
	if err != nil {
		diags.AddError(fmt.Sprintf("Cannot read the HA resource of VM %d", vmid), err.Error())
		return
	}
	var release proxmox.Release
	if s != nil {
		if release, err = r.Data.Client.Release(ctx); err != nil {
			diags.AddError("Cannot read the Proxmox VE version", err.Error())
			return
		}
	}
	imported := all && (m.HA == nil || m.HA.Failover.IsNull())
	m.HA = HAFromSettings(s, m.HA, release.HasAutoRebalance())
	r.readHARules(ctx, m, diags, imported)
}

// settleAutoRebalance gives an auto_rebalance the plan left unknown (unset in a new block, so
// the write left the flag out) what PVE has now: its default, on, from PVE 9.2; before, null.
func (r *Resource) settleAutoRebalance(ctx context.Context, h *HAModel, diags *diag.Diagnostics) {
	if h == nil || !h.AutoRebalance.IsUnknown() {
		return
	}
	release, err := r.Data.Client.Release(ctx)
	if err != nil {
		diags.AddError("Cannot read the Proxmox VE version", err.Error())
	}
	h.AutoRebalance = AutoRebalanceOf(proxmox.FlagUnset, err == nil && release.HasAutoRebalance(), h.AutoRebalance)
}

// warnAutoRebalance warns at plan time of an ha.auto_rebalance that the configuration sets on
// a release without the flag (before PVE 9.2), which refuses it: the provider leaves it out.
func (r *Resource) warnAutoRebalance(ctx context.Context, config tfsdk.Config, plan *Model, diags *diag.Diagnostics) {
	if plan.HA == nil {
		return
	}
	at := path.Root("ha").AtName("auto_rebalance")
	var set types.Bool
	if diags.Append(config.GetAttribute(ctx, at, &set)...); set.IsNull() {
		return
	}
	release, err := r.Data.Client.Release(ctx)
	if err != nil {
		diags.AddError("Cannot read the Proxmox VE version", err.Error())
		return
	}
	if !release.HasAutoRebalance() {
		diags.AddAttributeWarning(at, "ha.auto_rebalance needs Proxmox VE 9.2",
			fmt.Sprintf("The cluster runs Proxmox VE %s, whose HA resources have no auto-rebalance flag (PVE 9.2 added it with the "+
				"HA manager's automatic rebalancing), so the provider leaves ha.auto_rebalance out and it has no effect. Remove "+
				"ha.auto_rebalance, or upgrade to PVE 9.2 or later, where the next apply sets it.", release))
	}
}

// addHA registers a new VM as an HA resource, waiting until the HA manager knows it.
func (r *Resource) addHA(ctx context.Context, m *Model, vmid int) error {
	if m.HA == nil {
		return nil
	}
	return r.Data.Client.AddHAResource(ctx, vmid, m.HA.Settings())
}

// haBefore, before anything else in an update, ends HA management that the plan ends, so
// that the migration and power changes that follow are the VM's own.
func (r *Resource) haBefore(ctx context.Context, plan, state *Model, vmid int) error {
	switch {
	case state.HA != nil && plan.HA == nil:
		if err := r.syncHARules(ctx, nil, vmid, haRulesLeave, haPolicy{}, time.Time{}); err != nil {
			return err
		}
		return r.Data.Client.RemoveHAResource(ctx, vmid)
	case HAManaged(state.HA) && plan.HA != nil && !HAManaged(plan.HA):
		return r.Data.Client.UpdateHAResource(ctx, vmid, plan.HA.Settings())
	}
	return nil
}

// haAfter, once the VM is configured, registers it or brings its resource to the plan.
func (r *Resource) haAfter(ctx context.Context, plan, state *Model, vmid int) error {
	switch {
	case plan.HA == nil:
		return nil
	case state.HA == nil:
		return r.addHA(ctx, plan, vmid)
	case plan.HA.Settings() != state.HA.Settings():
		return r.Data.Client.UpdateHAResource(ctx, vmid, plan.HA.Settings())
	}
	return nil
}

// migrate moves the VM to target: through the HA manager while it manages the VM (before and
// after this update), as PVE requires, else directly.
func (r *Resource) migrate(ctx context.Context, plan, state *Model, vm *proxmox.VM, target string) error {
	if HAManaged(state.HA) && HAManaged(plan.HA) {
		return r.Data.Client.MigrateHA(ctx, vm.VMID, target)
	}
	return r.Data.Client.MigrateVM(ctx, vm.Node, vm.VMID, target, vm.Status == "running")
}

// setPower starts or shuts down the VM. For an HA-managed VM PVE only hands the request to
// the HA manager, so the guest is polled until it is in the wanted state, on whichever node:
// the HA manager may have moved it (the request then followed it there).
func (r *Resource) setPower(ctx context.Context, ha *HAModel, node string, vmid int, run bool) error {
	c := r.Data.Client
	var err error
	if run {
		err = c.StartVM(ctx, node, vmid)
	} else {
		err = c.ShutdownVM(ctx, node, vmid, time.Minute)
	}
	if err != nil || !HAManaged(ha) {
		return err
	}
	return c.WaitGuest(ctx, vmid, "", map[bool]string{true: "running", false: "stopped"}[run])
}

// While the HA manager manages a VM whose node is pinned, the state keeps the pin as the
// VM's node: the HA manager moving it (a failover) is no drift, and only a changed pin
// migrates it, through the HA manager. The pin is kept in the resource's private state, as
// Read cannot see the configuration; it lives as long as HA manages the VM.
const HAPinKey = "ha_pin"

// HAPin is the pin recorded for an HA-managed VM; "" for none.
func HAPin(ctx context.Context, priv kit.PrivateState, diags *diag.Diagnostics) string {
	raw, d := priv.GetKey(ctx, HAPinKey)
	diags.Append(d...)
	var pin string
	if len(raw) > 0 && json.Unmarshal(raw, &pin) != nil {
		return ""
	}
	return pin
}

// setPin records node as the pin and keeps it as m's node; "" forgets any pin.
func setPin(ctx context.Context, m *Model, node string, priv kit.PrivateState, diags *diag.Diagnostics) {
	if node == "" {
		diags.Append(priv.SetKey(ctx, HAPinKey, nil)...)
		return
	}
	raw, err := json.Marshal(node)
	if err != nil {
		diags.AddError("Cannot record the pinned node", err.Error())
		return
	}
	diags.Append(priv.SetKey(ctx, HAPinKey, raw)...)
	m.Node = types.StringValue(node)
}

// RecordPin, after a create or update that reached its end (ok), records the configured node
// of an HA-managed VM, or forgets the pin of one that is not pinned or not HA-managed. A
// failed apply keeps the pin it had: the failure must not turn a failover into drift.
func RecordPin(ctx context.Context, m *Model, config tfsdk.Config, ok bool, priv kit.PrivateState, diags *diag.Diagnostics) {
	if !ok {
		KeepPin(ctx, m, priv, diags)
		return
	}
	var node types.String
	diags.Append(config.GetAttribute(ctx, path.Root("node"), &node)...)
	if !kit.Known(node) || !HAManaged(m.HA) {
		setPin(ctx, m, "", priv, diags)
		return
	}
	setPin(ctx, m, node.ValueString(), priv, diags)
}

// ImportPin pins an imported HA-managed VM to the node its import ID names (node/VMID): the
// configuration's node, which the HA manager may have moved it away from.
func ImportPin(ctx context.Context, m *Model, node string, priv kit.PrivateState, diags *diag.Diagnostics) {
	if node != "" && HAManaged(m.HA) {
		setPin(ctx, m, node, priv, diags)
	}
}

// KeepPin, on a refresh, keeps the recorded pin as the node of a VM that the HA manager
// manages and has moved; a VM that HA no longer manages forgets its pin.
func KeepPin(ctx context.Context, m *Model, priv kit.PrivateState, diags *diag.Diagnostics) {
	pin := HAPin(ctx, priv, diags)
	switch {
	case pin == "":
	case !HAManaged(m.HA):
		setPin(ctx, m, "", priv, diags)
	case m.Node.ValueString() != pin:
		tflog.Info(ctx, "the HA manager runs the VM away from its pinned node; not drift", map[string]any{"vmid": m.VMID.ValueInt64(), "node": m.Node.ValueString(), "pin": pin})
		m.Node = types.StringValue(pin)
	}
}

// LeaveHAFrom is where a VM runs whose HA management the plan ends away from the node the
// plan keeps, "" otherwise: the apply then migrates it to that node, which the plan warns of.
func LeaveHAFrom(snap scheduler.Snapshot, plan, state *Model, diags *diag.Diagnostics) string {
	if !HAManaged(state.HA) || HAManaged(plan.HA) || !kit.Known(plan.Node) {
		return ""
	}
	vmid, pin := int(state.VMID.ValueInt64()), plan.Node.ValueString()
	at, err := proxmox.LocateIn(snap, vmid)
	if err != nil || at == pin {
		return ""
	}
	diags.AddAttributeWarning(path.Root("node"), "VM "+strconv.Itoa(vmid)+" goes back to its node "+pin,
		fmt.Sprintf("VM %d runs on %s, where the HA manager moved it. Without HA management it belongs on its node %s, "+
			"so this apply migrates it there. To keep it on %s, set node = %q.", vmid, at, pin, at, at))
	return at
}

// PinKept tells an update that leaves the pin of a VM the HA manager manages alone: where the
// HA manager runs it is then not the update's business.
func PinKept(plan, state *Model) bool {
	return HAManaged(state.HA) && HAManaged(plan.HA) && plan.Node.Equal(state.Node)
}

// unpinPlan plans the node of a VM whose pin the configuration drops unknown when the HA
// manager runs it elsewhere: the state's node is the pin, and the apply records where it runs.
// On its pinned node (a pin a move set, then dropped) nothing changes: the node stays, and so
// does the recorded pin until an apply of the VM forgets it (RecordPin), as good as none while
// the VM runs there; should the HA manager move it later, that plan records where it went.
func (r *Resource) unpinPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	pin := HAPin(ctx, req.Private, &resp.Diagnostics)
	if pin == "" {
		return
	}
	var node types.String
	var vmid types.Int64
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("node"), &node)...)
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("vmid"), &vmid)...)
	if !node.IsNull() {
		return
	}
	// Where it runs; a failed read plans unknown, as before the VM was looked up.
	if snap, err := r.Data.Snapshot(ctx); err == nil {
		if at, err := proxmox.LocateIn(snap, int(vmid.ValueInt64())); err == nil && at == pin {
			return
		}
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("node"), types.StringUnknown())...)
}

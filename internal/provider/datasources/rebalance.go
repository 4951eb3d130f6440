package datasources

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/scheduling"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/rebalance"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Defaults of the rebalance data source.
const (
	defaultMaxMoves         = 10
	defaultMaxMovesPerNode  = 2
	defaultMaxMovesPerGroup = 1
	defaultMinGain          = 5
)

func NewRebalanceDataSource() datasource.DataSource { return &rebalanceDataSource{} }

type rebalanceDataSource struct{ data *config.Data }

type rebalanceModel struct {
	scheduling.SchedulingModel
	Tags                   types.List                `tfsdk:"tags"`
	RemovePolicyViolations types.Bool                `tfsdk:"remove_policy_violations"`
	LowNodeUtilization     *lowNodeUtilizationModel  `tfsdk:"low_node_utilization"`
	HighNodeUtilization    *highNodeUtilizationModel `tfsdk:"high_node_utilization"`
	MaxMoves               types.Int64               `tfsdk:"max_moves"`
	MaxMovesPerNode        types.Int64               `tfsdk:"max_moves_per_node"`
	MaxMovesPerGroup       types.Int64               `tfsdk:"max_moves_per_group"`
	MinGain                types.Float64             `tfsdk:"min_gain"`
	DrainNodes             types.List                `tfsdk:"drain_nodes"`
	Moves                  []moveOut                 `tfsdk:"moves"`
	Kept                   []keptOut                 `tfsdk:"kept"`
	NodesBefore            []nodeUsageOut            `tfsdk:"nodes_before"`
	NodesAfter             []nodeUsageOut            `tfsdk:"nodes_after"`
	Summary                types.String              `tfsdk:"summary"`
	ID                     types.String              `tfsdk:"id"`
}

type lowNodeUtilizationModel struct {
	CPUThreshold    types.Float64 `tfsdk:"cpu_threshold"`
	MemoryThreshold types.Float64 `tfsdk:"memory_threshold"`
	CPUTarget       types.Float64 `tfsdk:"cpu_target"`
	MemoryTarget    types.Float64 `tfsdk:"memory_target"`
	Balanciness     types.Float64 `tfsdk:"balanciness"`
	Resources       types.List    `tfsdk:"resources"`
}

type highNodeUtilizationModel struct {
	CPUThreshold    types.Float64 `tfsdk:"cpu_threshold"`
	MemoryThreshold types.Float64 `tfsdk:"memory_threshold"`
}

type moveOut struct {
	VMID   types.Int64  `tfsdk:"vmid"`
	Name   types.String `tfsdk:"name"`
	From   types.String `tfsdk:"from"`
	To     types.String `tfsdk:"to"`
	Reason types.String `tfsdk:"reason"`
	Step   types.Int64  `tfsdk:"step"`
}

type keptOut struct {
	VMID   types.Int64  `tfsdk:"vmid"`
	Name   types.String `tfsdk:"name"`
	Node   types.String `tfsdk:"node"`
	Reason types.String `tfsdk:"reason"`
}

type nodeUsageOut struct {
	Node          types.String  `tfsdk:"node"`
	CPUPercent    types.Float64 `tfsdk:"cpu_percent"`
	MemoryPercent types.Float64 `tfsdk:"memory_percent"`
	RunningGuests types.Int64   `tfsdk:"running_guests"`
}

func (d *rebalanceDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_rebalance"
}

func (d *rebalanceDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	percent := func(what string) schema.Float64Attribute {
		return schema.Float64Attribute{Optional: true, Validators: []validator.Float64{float64validator.Between(0, 100)}, Description: what + " Required in the block."}
	}
	pair := func(what, other string) schema.Float64Attribute {
		return schema.Float64Attribute{Optional: true, Validators: []validator.Float64{float64validator.Between(0, 100)}, Description: what + " Set with `" + other + "`."}
	}
	usage := schema.ListNestedAttribute{Computed: true, NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
		"node":           schema.StringAttribute{Computed: true, Description: "Node name."},
		"cpu_percent":    schema.Float64Attribute{Computed: true, Description: "vCPUs of running guests in percent of the node's CPUs."},
		"memory_percent": schema.Float64Attribute{Computed: true, Description: "Configured memory of running guests in percent of the node's memory."},
		"running_guests": schema.Int64Attribute{Computed: true, Description: "Running guests on the node."},
	}}}
	before, after := usage, usage
	before.Description = "Every node's allocation now."
	after.Description = "Every node's allocation once the moves are done."
	resp.Schema = schema.Schema{
		Description: "The descheduler, read-only: which opted-in VMs should move, and where, because their node now breaks " +
			"their placement policies or is overloaded. It decides with the same scheduler, profile and policies the VMs " +
			"are placed with and moves nothing itself: feed `moves` to `qemuscheduler_vm.node` (a pinned node migrates) " +
			"or to another provider's `node_name`, and give the data source `depends_on` on those VMs so that the apply that moves them " +
			"reads it after the moves (else its outputs lag one apply). Let one loop own a VM: do not run PVE's CRS rebalancing or ProxLB on the same guests. " +
			"A `qemuscheduler_placement` with `move_existing = \"violations\"` plans with the same planner and answers the same moves for the VMs it names.",
		Attributes: map[string]schema.Attribute{
			"tags": schema.ListAttribute{Required: true, ElementType: types.StringType,
				Validators: []validator.List{listvalidator.SizeAtLeast(1), listvalidator.ValueStringsAre(stringvalidator.RegexMatches(kit.TagFormat,
					"must be a PVE tag: lowercase letters, digits and _ - + ."))},
				Description: "The opt-in: only guests carrying all of these tags may move (KubeVirt's `descheduler.alpha.kubernetes.io/evict`)."},
			"remove_policy_violations": schema.BoolAttribute{Optional: true,
				Description: "Move guests whose node fails their hard policies: node selector, required affinities, an untolerated NoSchedule or NoExecute taint, HA maintenance. Default true."},
			"max_moves": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.AtLeast(0)},
				Description: fmt.Sprintf("At most this many moves in all. Default %d.", defaultMaxMoves)},
			"max_moves_per_node": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.AtLeast(1)},
				Description: fmt.Sprintf("At most this many moves off one node. Default %d.", defaultMaxMovesPerNode)},
			"max_moves_per_group": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.AtLeast(1)},
				Description: fmt.Sprintf("The disruption budget (kube's PodDisruptionBudget): at most this many members of one group move in one plan, "+
					"a group being the guests carrying the tags of a required `vm_anti_affinity` or a `topology_spread` of the moving guest's "+
					"policy (its placement record's, or this data source's) that the guest carries itself. The others are `kept` with a "+
					"reason naming the budget. Default %d.", defaultMaxMovesPerGroup)},
			"min_gain": schema.Float64Attribute{Optional: true, Validators: []validator.Float64{float64validator.Between(0, 100)},
				Description: fmt.Sprintf("A utilization move must narrow the gap between its two nodes by at least this many percentage points (no ping-pong). Default %d.", defaultMinGain)},
			"drain_nodes": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				Validators: []validator.List{listvalidator.UniqueValues(), listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1))},
				Description: "Nodes to empty for maintenance: every opted-in guest on them moves off under its own rules, `max_moves`, " +
					"`max_moves_per_node` and `max_moves_per_group`, to the node its profile ranks best; no move of any strategy goes onto them. " +
					"What stays (not opted in, locked, a template, no node takes it, a cap) is in `kept` with why. Runs before the other strategies."},
			"moves": schema.ListNestedAttribute{Computed: true, Description: "The moves, in the order to run them: applied top to bottom " +
				"(or step by step) they never break a hard rule nor overfill a node. A guest parked on a third node to make room appears twice, " +
				"its last move where it ends: key a map by `vmid` with `...` (or take the last `to`).",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"vmid":   schema.Int64Attribute{Computed: true, Description: "The guest's VMID."},
					"name":   schema.StringAttribute{Computed: true, Description: "The guest's name."},
					"from":   schema.StringAttribute{Computed: true, Description: "The node it is on."},
					"to":     schema.StringAttribute{Computed: true, Description: "The node it should move to."},
					"reason": schema.StringAttribute{Computed: true, Description: "Why, with numbers."},
					"step":   schema.Int64Attribute{Computed: true, Description: "The step the move belongs to, from 1: the moves of one step may run together once every earlier step is done."},
				}}},
			"kept": schema.ListNestedAttribute{Computed: true, Description: "Guests that should move but stay: no feasible target, a cap (`max_moves`, `max_moves_per_node`, `max_moves_per_group`) reached, " +
				"or, for `low_node_utilization`, the guests of a node that stays above target that no node takes; the guests of `drain_nodes` that stay; " +
				"guests outside the opt-in (`tags`) whose node breaks their own placement record or repels every guest (a NoSchedule or NoExecute taint, " +
				"HA maintenance), with the reason ending in `not opted in`. Each guest once, with all its reasons joined by `; `.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"vmid":   schema.Int64Attribute{Computed: true, Description: "The guest's VMID."},
					"name":   schema.StringAttribute{Computed: true, Description: "The guest's name."},
					"node":   schema.StringAttribute{Computed: true, Description: "The node it stays on."},
					"reason": schema.StringAttribute{Computed: true, Description: "Why it should move and why no node takes it."},
				}}},
			"nodes_before": before,
			"nodes_after":  after,
			"summary":      schema.StringAttribute{Computed: true, Description: "One human line: the moves and the kept guests."},
			"id":           schema.StringAttribute{Computed: true, Description: "Identifies the plan: vmid:from>to per move."},
		},
		Blocks: map[string]schema.Block{
			"high_node_utilization": schema.SingleNestedBlock{
				Description: "Empty the least-used nodes, like the kube descheduler's HighNodeUtilization (for maintenance or power " +
					"saving): every online node under both thresholds gives its opted-in guests, least-used node first, to the fullest " +
					"other node that passes their rules; a node under the thresholds never receives. The guests' rules, " +
					"`max_moves_per_group` and the move caps apply as for the other strategies; what cannot move is `kept`. " +
					"Not with `low_node_utilization`, which fills the nodes this empties.",
				Attributes: map[string]schema.Attribute{
					"cpu_threshold":    percent("A node is emptied when its vCPU allocation, in percent of its CPUs, is below this (and its memory below memory_threshold)."),
					"memory_threshold": percent("A node is emptied when its memory allocation, in percent, is below this (and its vCPUs below cpu_threshold)."),
				},
			},
			"low_node_utilization": schema.SingleNestedBlock{
				Description: "Balance by configured allocation of running guests, like the kube descheduler's LowNodeUtilization: nodes above " +
					"a target give guests to nodes under every threshold, one move at a time, the move that narrows the gap between its two " +
					"nodes most first (on equal gain the one carrying less memory and local disk), until they are at target. A receiver " +
					"may end above target only below the giving node's level after the move, so that the spread narrows and the next plan " +
					"never moves the guest back. Only the resources configured count, in the thresholds and in the gain: set the CPU pair, " +
					"the memory pair or both; or, instead of thresholds, `balanciness`.",
				Attributes: map[string]schema.Attribute{
					"cpu_threshold":    pair("A node is underused below this vCPU allocation, in percent of its CPUs.", "cpu_target"),
					"memory_threshold": pair("A node is underused below this memory allocation, in percent.", "memory_target"),
					"cpu_target":       pair("A node is overused above this vCPU allocation, in percent.", "cpu_threshold"),
					"memory_target":    pair("A node is overused above this memory allocation, in percent.", "memory_threshold"),
					"balanciness": schema.Float64Attribute{Optional: true, Validators: []validator.Float64{float64validator.Between(0, 100)},
						Description: "ProxLB's balanciness, instead of thresholds and targets: act when the fullest and the emptiest online node " +
							"are more than this many percentage points apart on a balanced resource; a node more than this above the emptiest gives, " +
							"a node more than this below the fullest receives. No threshold to compute from the cluster's mean."},
					"resources": schema.ListAttribute{Optional: true, ElementType: types.StringType,
						Validators:  []validator.List{listvalidator.SizeAtLeast(1), listvalidator.UniqueValues(), listvalidator.ValueStringsAre(stringvalidator.OneOf("cpu", "memory"))},
						Description: "With `balanciness`: the resources balanced, `cpu` and/or `memory`. Default both."},
				},
			},
		},
	}
	scheduling.DataSourceScheduling(&resp.Schema)
	kit.MarkWholeNumbers(resp.Schema.Attributes, resp.Schema.Blocks)
}

// ValidateConfig checks the policies and the utilization thresholds at plan time.
func (d *rebalanceDataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var m rebalanceModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	m.Validate(ctx, &resp.Diagnostics)
	if u := m.LowNodeUtilization; u != nil {
		u.validate(&resp.Diagnostics)
	}
	if m.LowNodeUtilization != nil && m.HighNodeUtilization != nil {
		// One plan would move guests onto a node and then empty it: kube's descheduler pairs
		// each with an opposite scoring strategy and never both.
		resp.Diagnostics.AddAttributeError(path.Root("high_node_utilization"), "Opposite utilization strategies",
			"low_node_utilization fills the nodes under its thresholds and high_node_utilization empties them, so one plan would move "+
				"guests onto a node and off it again. Use one per data source: low_node_utilization to spread the load, "+
				"high_node_utilization to free nodes for maintenance or power saving.")
	}
	if u := m.HighNodeUtilization; u != nil {
		for attr, v := range map[string]types.Float64{"cpu_threshold": u.CPUThreshold, "memory_threshold": u.MemoryThreshold} {
			if v.IsNull() {
				resp.Diagnostics.AddAttributeError(path.Root("high_node_utilization").AtName(attr), "Missing utilization bound",
					fmt.Sprintf("high_node_utilization needs %s (percent of configured allocation, 0-100)", attr))
			}
		}
	}
}

// validate checks the block's bounds: each resource's threshold and target together, or
// balanciness instead of them, and something to balance.
func (u *lowNodeUtilizationModel) validate(diags *diag.Diagnostics) {
	block := path.Root("low_node_utilization")
	pairs := []struct {
		name              string
		threshold, target types.Float64
	}{{"cpu", u.CPUThreshold, u.CPUTarget}, {"memory", u.MemoryThreshold, u.MemoryTarget}}
	set := 0
	for _, pair := range pairs {
		th, tg := pair.name+"_threshold", pair.name+"_target"
		switch {
		case pair.threshold.IsNull() && pair.target.IsNull():
			continue
		case pair.threshold.IsNull() || pair.target.IsNull():
			missing, given := th, tg
			if pair.target.IsNull() {
				missing, given = tg, th
			}
			diags.AddAttributeError(block.AtName(missing), "Missing utilization bound",
				fmt.Sprintf("low_node_utilization has %s but not %s: set %s too (percent of configured allocation, 0-100), or remove %s to leave %s unbalanced",
					given, missing, missing, given, pair.name))
		case knownFloat(pair.threshold) && knownFloat(pair.target) && pair.threshold.ValueFloat64() > pair.target.ValueFloat64():
			diags.AddAttributeError(block.AtName(th), "Threshold above target",
				fmt.Sprintf("%s (%s) must not exceed %s (%s): a node cannot be underused and overused at once",
					th, scheduler.FormatNumber(pair.threshold.ValueFloat64()), tg, scheduler.FormatNumber(pair.target.ValueFloat64())))
		}
		set++
	}
	switch {
	case !u.Balanciness.IsNull() && set > 0:
		diags.AddAttributeError(block.AtName("balanciness"), "Balanciness with thresholds",
			"balanciness replaces cpu_threshold, cpu_target, memory_threshold and memory_target: remove either balanciness or the thresholds and targets "+
				"(with balanciness, resources names what is balanced)")
	case u.Balanciness.IsNull() && set == 0:
		diags.AddAttributeError(block, "Nothing to balance",
			"low_node_utilization needs cpu_threshold and cpu_target, memory_threshold and memory_target (percent of configured allocation, 0-100), "+
				"or balanciness (percentage points between the fullest and the emptiest node)")
	case u.Balanciness.IsNull() && !u.Resources.IsNull():
		diags.AddAttributeError(block.AtName("resources"), "Resources without balanciness",
			"resources goes with balanciness; with thresholds the resources balanced are those whose threshold and target are set: remove resources")
	}
}

// utilization is the planner's form of the block.
func (u *lowNodeUtilizationModel) utilization(ctx context.Context, diags *diag.Diagnostics) *rebalance.Utilization {
	band := func(threshold, target types.Float64) *rebalance.Band {
		if threshold.IsNull() {
			return nil
		}
		return &rebalance.Band{Threshold: threshold.ValueFloat64(), Target: target.ValueFloat64()}
	}
	out := &rebalance.Utilization{CPU: band(u.CPUThreshold, u.CPUTarget), Memory: band(u.MemoryThreshold, u.MemoryTarget)}
	if u.Balanciness.IsNull() {
		return out
	}
	out.Balanciness = u.Balanciness.ValueFloat64()
	resources := []string{"cpu", "memory"}
	if !u.Resources.IsNull() {
		diags.Append(u.Resources.ElementsAs(ctx, &resources, false)...)
	}
	for _, r := range resources {
		if r == "cpu" {
			out.CPU = &rebalance.Band{}
		} else {
			out.Memory = &rebalance.Band{}
		}
	}
	return out
}

func knownFloat(v types.Float64) bool { return !v.IsNull() && !v.IsUnknown() }

func (d *rebalanceDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = config.DataFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *rebalanceDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m rebalanceModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	in := rebalance.Input{
		Profile:                d.data.Pipeline(ctx, &m.SchedulingModel, &resp.Diagnostics),
		RemovePolicyViolations: m.RemovePolicyViolations.IsNull() || m.RemovePolicyViolations.ValueBool(),
		MaxMoves:               int(int64Or(m.MaxMoves, defaultMaxMoves)),
		MaxMovesPerNode:        int(int64Or(m.MaxMovesPerNode, defaultMaxMovesPerNode)),
		MaxMovesPerGroup:       int(int64Or(m.MaxMovesPerGroup, defaultMaxMovesPerGroup)),
		Profiles:               d.data.RecordProfiles(),
		MinGain:                defaultMinGain,
	}
	if !m.MinGain.IsNull() {
		in.MinGain = m.MinGain.ValueFloat64()
	}
	if u := m.LowNodeUtilization; u != nil {
		in.LowNodeUtilization = u.utilization(ctx, &resp.Diagnostics)
	}
	if !m.DrainNodes.IsNull() {
		resp.Diagnostics.Append(m.DrainNodes.ElementsAs(ctx, &in.DrainNodes, false)...)
	}
	if u := m.HighNodeUtilization; u != nil {
		in.HighNodeUtilization = &rebalance.HighUtilization{CPUThreshold: u.CPUThreshold.ValueFloat64(), MemoryThreshold: u.MemoryThreshold.ValueFloat64()}
	}
	in.Policy, _ = m.Request(ctx, &resp.Diagnostics) // a read only runs on a known config
	d.data.WithDefaults(m.Profile, &in.Policy)
	resp.Diagnostics.Append(m.Tags.ElementsAs(ctx, &in.OptIn, false)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var err error
	in.Snapshot, err = d.data.ReadView(ctx)
	resp.Diagnostics.Append(d.data.Nodes.Warnings()...)
	if err != nil {
		resp.Diagnostics.AddError("Cannot read the Proxmox VE cluster", err.Error())
		return
	}
	if !readHAState(ctx, d.data, &in.Snapshot, &resp.Diagnostics) {
		return
	}
	in.Disks = guestDisks(ctx, d.data)
	plan, err := rebalance.PlanMoves(in)
	var unknown *rebalance.UnknownNodeError
	switch {
	case errors.As(err, &unknown):
		resp.Diagnostics.AddAttributeError(path.Root("drain_nodes"), "Unknown node to drain", err.Error()+": correct the name or remove it from drain_nodes")
		return
	case err != nil:
		resp.Diagnostics.AddError("Cannot plan the moves", err.Error())
		return
	}
	for _, w := range plan.Warnings {
		resp.Diagnostics.AddWarning("Placement record not fully honoured", w)
	}
	m.fill(plan)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func int64Or(v types.Int64, def int64) int64 {
	if v.IsNull() || v.IsUnknown() {
		return def
	}
	return v.ValueInt64()
}

func (m *rebalanceModel) fill(plan rebalance.Plan) {
	m.Moves, m.Kept = []moveOut{}, []keptOut{}
	ids := make([]string, 0, len(plan.Moves))
	for _, mv := range plan.Moves {
		m.Moves = append(m.Moves, moveOut{VMID: types.Int64Value(int64(mv.VMID)), Name: types.StringValue(mv.Name),
			From: types.StringValue(mv.From), To: types.StringValue(mv.To), Reason: types.StringValue(mv.Reason), Step: types.Int64Value(int64(mv.Step))})
		ids = append(ids, fmt.Sprintf("%d:%s>%s", mv.VMID, mv.From, mv.To))
	}
	for _, k := range plan.Kept {
		m.Kept = append(m.Kept, keptOut{VMID: types.Int64Value(int64(k.VMID)), Name: types.StringValue(k.Name),
			Node: types.StringValue(k.Node), Reason: types.StringValue(k.Reason)})
	}
	m.NodesBefore, m.NodesAfter = usageOut(plan.Before), usageOut(plan.After)
	m.Summary = types.StringValue(config.WithProfile(plan.Summary, m.Profile))
	if len(ids) == 0 {
		ids = []string{"no-moves"}
	}
	m.ID = types.StringValue(strings.Join(ids, ","))
}

func usageOut(us []rebalance.NodeUsage) []nodeUsageOut {
	out := make([]nodeUsageOut, len(us))
	for i, u := range us {
		out[i] = nodeUsageOut{Node: types.StringValue(u.Node), CPUPercent: types.Float64Value(u.CPUPercent),
			MemoryPercent: types.Float64Value(u.MemoryPercent), RunningGuests: types.Int64Value(int64(u.RunningGuests))}
	}
	return out
}

package datasources

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/datasourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/harules"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/scheduling"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

func NewPlacementDataSource() datasource.DataSource { return &placementDataSource{} }

type placementDataSource struct{ data *config.Data }

type placementModel struct {
	scheduling.SchedulingModel
	Name    types.String `tfsdk:"name"`
	Names   types.List   `tfsdk:"names"`
	Cores   types.Int64  `tfsdk:"cores"`
	Sockets types.Int64  `tfsdk:"sockets"`
	Memory  types.Int64  `tfsdk:"memory"`
	Node    types.String `tfsdk:"node"`
	VMID    types.Int64  `tfsdk:"vmid"`
	Storage types.String `tfsdk:"storage"`
	DiskGiB types.Int64  `tfsdk:"disk_gib"`
	Tags    types.List   `tfsdk:"tags"`
	// MoveExisting and MaxMovesPerGroup say whether and how the existing VMs that break their
	// rules move (move_existing).
	MoveExisting     types.String   `tfsdk:"move_existing"`
	MaxMovesPerGroup types.Int64    `tfsdk:"max_moves_per_group"`
	Violations       []violationOut `tfsdk:"violations"`
	// HAFailover and HARules: the HA rules the names need (harules.go).
	HAFailover types.String   `tfsdk:"ha_failover"`
	HARules    types.List     `tfsdk:"ha_rules"`
	Placements []placementOut `tfsdk:"placements"`
	Candidates []candidateOut `tfsdk:"candidates"`
	Summary    types.String   `tfsdk:"summary"`
	ID         types.String   `tfsdk:"id"`
}

type placementOut struct {
	Name    types.String `tfsdk:"name"`
	Node    types.String `tfsdk:"node"`
	VMID    types.Int64  `tfsdk:"vmid"`
	Storage types.String `tfsdk:"storage"`
}

type candidateOut struct {
	Node     types.String  `tfsdk:"node"`
	Feasible types.Bool    `tfsdk:"feasible"`
	Reasons  []string      `tfsdk:"reasons"`
	Score    types.Float64 `tfsdk:"score"`
	Scores   types.Map     `tfsdk:"scores"`
}

func (d *placementDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_placement"
}

func (d *placementDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Runs the scheduler at plan time, read-only: which node and VMID a VM (or several) would get, with the " +
			"full explanation. Feed `node` and `vmid` to any Proxmox resource. A VM that already exists with the requested " +
			"name is answered where it runs (its node, VMID and the storage of its disks), whatever the cluster did to it: " +
			"the answer does not change after the VM is created or moved, and a cluster event (HA maintenance, a failover) " +
			"moves nothing by itself. The existing VMs that break their rules where they run are listed in `violations`; " +
			"`move_existing = \"violations\"` moves them as `qemuscheduler_rebalance` would. A name several guests carry " +
			"is placed as a new VM, with a warning naming them.",
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{Optional: true, Validators: []validator.String{kit.DNSNameCheck},
				Description: "The VM's name, a DNS name as `qemuscheduler_vm` requires: seed of the tie-break and key of the sticky lookup. Exactly one of `name` and `names`."},
			"names": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				Validators:  []validator.List{listvalidator.SizeAtLeast(1), listvalidator.UniqueValues(), listvalidator.ValueStringsAre(kit.DNSNameCheck)},
				Description: "Several VMs of the same size placed in one decision, in order: each debits capacity and takes its VMID before the next. All or nothing. Each a DNS name, as `name`."},
			"cores": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.Between(1, proxmox.MaxVCPUs)},
				Description: "vCPU cores per socket (1-4096; cores x sockets at most 4096). Default 1."},
			"sockets": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.Between(1, proxmox.MaxVCPUs)},
				Description: "CPU sockets (1-4096). Default 1."},
			"memory": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{kit.MemoryMiB{}},
				Description: "Memory in MiB (16 to 4194304, PVE's 4 TiB; under 64 warns, as a value meant in GiB). Default 512."},
			"node": schema.StringAttribute{Optional: true, Computed: true,
				Description: "Input: pin the node of a new VM (the NodeName filter; the other filters still apply); an existing VM is answered where it runs. Output: the chosen node (of the first name)."},
			"vmid": schema.Int64Attribute{Optional: true, Computed: true, Validators: []validator.Int64{int64validator.Between(scheduler.MinVMID, scheduler.MaxVMID)},
				Description: "Input: pin the VMID of a new VM; it must be free, and beats both vmid annotations (a VM of the name under another VMID is then not this one). Output: the chosen VMID (of the first name)."},
			"storage": schema.StringAttribute{Optional: true, Computed: true,
				Description: "Input: pin the disk storage; it must exist on the node, be active and hold `images`. Output: the chosen storage, by default the active images storage with the most free space; for an existing VM of that name, unless pinned, the storage that holds most of its disks (read from its config, one request per such VM), so that a resource fed it does not move them."},
			"disk_gib": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.AtLeast(1)},
				Description: "Total GiB of the disks each VM puts on the chosen storage: the StorageCapacity filter requires them to fit its free space, and each of `names` debits it (a shared storage once for the cluster). Omitted: not checked."},
			"tags": schema.ListAttribute{Optional: true, ElementType: types.StringType, Validators: []validator.List{scheduling.GroupTagsValid},
				Description: "The tags the VMs will carry: their membership in the groups of `vm_affinity`, `vm_anti_affinity` and " +
					"`topology_spread` (theirs and other VMs'), and the ProxLB tags they honour. Give the VMs the same tags."},
			"move_existing": schema.StringAttribute{Optional: true, Validators: []validator.String{stringvalidator.OneOf(moveNone, moveViolations)},
				Description: "What happens to the existing VMs this data source names that break their rules where they run (`violations`). " +
					"`none` (the default): they stay, answered where they run, and the plan lists them. `violations`: they move with the planner, " +
					"defaults and HA view of `qemuscheduler_rebalance` with `remove_policy_violations` over the same VMs and rules: the fewest " +
					"moves (of two VMs that break an anti-affinity together, one moves and the other keeps its node), never a VM that keeps its " +
					"rules, at most `max_moves_per_group` members of a group, 10 in all and 2 off one node; a VM no node takes, or past a cap, stays. " +
					"The resource fed the answer must migrate the VM (bpg: `migrate = true`), else it is re-created."},
			"max_moves_per_group": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.AtLeast(1)},
				Description: fmt.Sprintf("With `move_existing = \"violations\"`: at most this many members of one group (the VMs carrying the tags of a "+
					"required `vm_anti_affinity` or a `topology_spread` of the policy that the VM carries itself) move in one plan, as "+
					"`qemuscheduler_rebalance`'s disruption budget. Default %d.", defaultMaxMovesPerGroup)},
			"ha_failover": schema.StringAttribute{Optional: true, Validators: []validator.String{stringvalidator.OneOf(harules.FailoverPreferred, harules.FailoverStrict)},
				Description: haFailoverDescription},
			"ha_rules": schema.ListNestedAttribute{Computed: true, Description: haRulesDescription,
				NestedObject: schema.NestedAttributeObject{Attributes: haRuleAttributes()}},
			"violations": schema.ListNestedAttribute{Computed: true,
				Description: "The existing VMs named that break their rules where this answer puts them: where they run, or, with " +
					"`move_existing = \"violations\"`, where the moves leave them. One entry per VM and broken rule, in the order of the names. " +
					"Empty when every VM keeps its rules.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name": schema.StringAttribute{Computed: true, Description: "VM name."},
					"rule": schema.StringAttribute{Computed: true, Description: "The filter it fails, e.g. `VMAntiAffinity`, `NodeSelector`, `TaintToleration` (HA maintenance is a taint), `NodeOnline`."},
					"why":  schema.StringAttribute{Computed: true, Description: "Why, with the numbers and the guests involved."},
				}}},
			"placements": schema.ListNestedAttribute{Computed: true, Description: "One placement per name, in order. Once a VM exists, its placement stays as it is on the next plans (it is answered where it runs).",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":    schema.StringAttribute{Computed: true, Description: "VM name."},
					"node":    schema.StringAttribute{Computed: true, Description: "Chosen node."},
					"vmid":    schema.Int64Attribute{Computed: true, Description: "Chosen VMID."},
					"storage": schema.StringAttribute{Computed: true, Description: "Chosen storage for disks; for an existing VM of that name, the storage that holds most of its disks."},
				}}},
			"candidates": schema.ListNestedAttribute{Computed: true, Description: "Every node of the cluster and its verdict for the (first) VM, an existing one with its own usage left out: the explanation of this read, whose scores change with the cluster (not an answer to keep in an output).",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"node":     schema.StringAttribute{Computed: true, Description: "Node name."},
					"feasible": schema.BoolAttribute{Computed: true, Description: "Whether every filter passed."},
					"reasons":  schema.ListAttribute{Computed: true, ElementType: types.StringType, Description: "Each failing filter, with its numbers."},
					"score":    schema.Float64Attribute{Computed: true, Description: "Weighted total score (feasible nodes)."},
					"scores":   schema.MapAttribute{Computed: true, ElementType: types.Float64Type, Description: "Score per score plugin, 0..100."},
				}}},
			"summary": schema.StringAttribute{Computed: true, Description: "One human line per placement: how this read decided, so it changes once a new VM exists (not an answer to keep in an output)."},
			"id":      schema.StringAttribute{Computed: true, Description: "Identifies the decision: name=node/vmid per placement."},
		},
	}
	scheduling.DataSourceScheduling(&resp.Schema)
	kit.MarkWholeNumbers(resp.Schema.Attributes, resp.Schema.Blocks)
}

func (d *placementDataSource) ConfigValidators(context.Context) []datasource.ConfigValidator {
	return []datasource.ConfigValidator{
		datasourcevalidator.ExactlyOneOf(path.MatchRoot("name"), path.MatchRoot("names")),
	}
}

// ValidateConfig catches malformed annotations and plugin config at plan time.
func (d *placementDataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var m placementModel
	if kit.ConfigReadable(req.Config.Get(ctx, &m)) {
		m.Validate(ctx, &resp.Diagnostics)
		kit.CheckVCPUs(m.Cores, m.Sockets, &resp.Diagnostics)
	}
}

func (d *placementDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = config.DataFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *placementDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m placementModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !m.MaxMovesPerGroup.IsNull() && m.MoveExisting.ValueString() != moveViolations {
		resp.Diagnostics.AddAttributeWarning(path.Root("max_moves_per_group"), "max_moves_per_group without moves",
			"max_moves_per_group bounds the moves of move_existing = \"violations\", and nothing moves without it: set move_existing = \"violations\" "+
				"to move the existing VMs that break their rules, or remove max_moves_per_group.")
	}
	profile := d.data.Pipeline(ctx, &m.SchedulingModel, &resp.Diagnostics)
	reqs := m.requests(ctx, &resp.Diagnostics)
	for i := range reqs {
		d.data.WithDefaults(m.Profile, &reqs[i])
	}
	if resp.Diagnostics.HasError() {
		return
	}
	snap, err := d.data.ReadView(ctx)
	resp.Diagnostics.Append(d.data.Nodes.Warnings()...)
	if err == nil {
		err = preferGuestStorages(ctx, d.data.Client, snap, reqs)
	}
	if err != nil {
		resp.Diagnostics.AddError("Cannot read the Proxmox VE cluster", err.Error())
		return
	}
	if kit.Known(m.Node) {
		if kit.CheckNodeExists(m.Node.ValueString(), snap, &resp.Diagnostics); resp.Diagnostics.HasError() {
			return
		}
	}
	warnSharedNames(snap, reqs, &resp.Diagnostics)
	if len(reqs) > 0 { // the requests share their annotations
		scheduling.WarnIgnoredAnnotations(profile, &reqs[0], &m.SchedulingModel, &resp.Diagnostics)
	}
	ctx = tflog.NewSubsystem(ctx, kit.LogSubsystem)
	decision, violations, err := d.decide(ctx, &m, snap, profile, reqs, &resp.Diagnostics)
	if err != nil {
		tflog.SubsystemInfo(ctx, kit.LogSubsystem, "no placement", map[string]any{"error": err.Error()})
		kit.AddPlanError(&resp.Diagnostics, config.UnderProfile(err, m.Profile), "", d.data.Changes.Hint(changeset.ReadReduce(err)))
	}
	if resp.Diagnostics.HasError() {
		return
	}
	m.Violations = violations
	m.fill(ctx, decision, &resp.Diagnostics)
	if m.HARules = d.haRules(ctx, &m, snap, profile, reqs, decision, &resp.Diagnostics); resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// warnSharedNames warns of each requested name that several guests carry (templates aside):
// the scheduler cannot tell them apart and keeps none in place, so the name is placed anew,
// and a resource fed the answer would move or replace the VM it meant.
func warnSharedNames(snap scheduler.Snapshot, reqs []scheduler.Request, diags *diag.Diagnostics) {
	for _, r := range reqs {
		var guests []string
		for _, g := range snap.Guests {
			if g.Name == r.Name && !g.Template {
				guests = append(guests, fmt.Sprintf("%d (%s)", g.VMID, g.Node))
			}
		}
		if len(guests) > 1 {
			diags.AddWarning(fmt.Sprintf("Several guests are named %q", r.Name),
				fmt.Sprintf("Guests %s all carry the name %q, so none of them can be taken for the VM this data source describes: %q is placed "+
					"as a new VM, and a resource fed its node and VMID would move or replace the VM it manages. "+
					"Rename or remove the others in Proxmox VE so that one guest carries the name.", strings.Join(guests, ", "), r.Name, r.Name))
		}
	}
}

// requests builds one scheduler request per name.
func (m *placementModel) requests(ctx context.Context, diags *diag.Diagnostics) []scheduler.Request {
	var names []string
	if kit.Known(m.Name) {
		names = []string{m.Name.ValueString()}
	} else {
		diags.Append(m.Names.ElementsAs(ctx, &names, false)...)
	}
	base, _ := m.Request(ctx, diags) // a read only runs on a known config
	base = scheduling.Sized(base, m.Cores, m.Sockets, m.Memory)
	base.Node, base.VMID, base.Storage = m.Node.ValueString(), int(m.VMID.ValueInt64()), m.Storage.ValueString()
	base.DiskBytes = uint64(m.DiskGiB.ValueInt64()) * scheduler.GiB
	base.Tags, _ = scheduling.KnownStrings(ctx, m.Tags, diags)
	reqs := make([]scheduler.Request, len(names))
	for i, n := range names {
		reqs[i] = base
		reqs[i].Name = n
	}
	return reqs
}

func (m *placementModel) fill(ctx context.Context, d scheduler.Decision, diags *diag.Diagnostics) {
	m.Placements = nil
	ids := make([]string, 0, len(d.Placements))
	summaries := make([]string, 0, len(d.Placements))
	for _, p := range d.Placements {
		m.Placements = append(m.Placements, placementOut{
			Name: types.StringValue(p.Name), Node: types.StringValue(p.Node), VMID: types.Int64Value(int64(p.VMID)),
			Storage: types.StringValue(p.Storage),
		})
		ids = append(ids, fmt.Sprintf("%s=%s/%d", p.Name, p.Node, p.VMID))
		summaries = append(summaries, config.WithProfile(p.Summary, m.Profile))
		tflog.SubsystemInfo(ctx, kit.LogSubsystem, "placement decided", map[string]any{"name": p.Name, "node": p.Node, "vmid": p.VMID, "storage": p.Storage})
		tflog.SubsystemDebug(ctx, kit.LogSubsystem, "placement explanation", map[string]any{"name": p.Name, "summary": p.Summary, "candidates": kit.ExplainCandidates(p.Candidates)})
	}
	first := d.Placements[0]
	m.Node, m.VMID, m.Storage = types.StringValue(first.Node), types.Int64Value(int64(first.VMID)), types.StringValue(first.Storage)
	m.Candidates = candidatesOut(ctx, first.Candidates, diags)
	m.Summary = types.StringValue(strings.Join(summaries, "\n"))
	m.ID = types.StringValue(strings.Join(ids, ","))
}

// candidatesOut renders every node's verdict (kept placements carry them too).
func candidatesOut(ctx context.Context, cands []scheduler.Candidate, diags *diag.Diagnostics) []candidateOut {
	out := make([]candidateOut, 0, len(cands))
	for _, c := range cands {
		scores := map[string]types.Float64{}
		for k, v := range c.Scores {
			scores[k] = types.Float64Value(v)
		}
		sm, d := types.MapValueFrom(ctx, types.Float64Type, scores)
		diags.Append(d...)
		reasons := c.Reasons
		if reasons == nil {
			reasons = []string{}
		}
		out = append(out, candidateOut{Node: types.StringValue(c.Node), Feasible: types.BoolValue(c.Feasible), Reasons: reasons,
			Score: types.Float64Value(c.Score), Scores: sm})
	}
	return out
}

// preferGuestStorages gives each request that names an existing VM (the only guest of that
// name, templates aside, on an online node) the storage that holds most of its disks, read
// from its config (one request per such VM), as its preferred storage: kept in place or moved,
// the placement answers where the disks are, not where a new VM's would go. Fed to a
// resource's storage (bpg's datastore_id), that other answer moved the disks, and back once
// the move left the other storage with more free space.
func preferGuestStorages(ctx context.Context, c *proxmox.Client, snap scheduler.Snapshot, reqs []scheduler.Request) error {
	at := map[string]int{}
	for i, g := range snap.Guests {
		if g.Template || g.Assumed {
			continue
		}
		if _, seen := at[g.Name]; seen {
			at[g.Name] = -1 // several guests: none is the request's
		} else {
			at[g.Name] = i
		}
	}
	online := map[string]bool{}
	for _, n := range snap.Nodes {
		online[n.Name] = n.Online
	}
	for i := range reqs {
		gi, ok := at[reqs[i].Name]
		if !ok || gi < 0 {
			continue
		}
		g := snap.Guests[gi]
		if g.Type != scheduler.GuestQEMU || !online[g.Node] {
			continue
		}
		storage, err := c.MainDiskStorage(ctx, g.Node, g.VMID)
		switch {
		case errors.Is(err, proxmox.ErrNotFound), errors.Is(err, proxmox.ErrNodeOffline):
			// Gone or unreachable since the view: the decision finds out by itself.
		case err != nil:
			return err
		default:
			reqs[i].PreferStorage = storage
		}
	}
	return nil
}

package datasources

import (
	"context"
	"math"
	"regexp"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/nodelabels"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

func NewNodesDataSource() datasource.DataSource { return &nodesDataSource{} }

// nodesDataSource is the scheduler's view of the cluster, one object per node.
type nodesDataSource struct{ data *config.Data }

type nodesModel struct {
	NamesRegex types.String `tfsdk:"names_regex"`
	Nodes      []nodeOut    `tfsdk:"nodes"`
}

type nodeOut struct {
	Name               string            `tfsdk:"name"`
	Online             bool              `tfsdk:"online"`
	Maintenance        bool              `tfsdk:"maintenance"`
	Labels             map[string]string `tfsdk:"labels"`
	Taints             []string          `tfsdk:"taints"`
	CPUs               int64             `tfsdk:"cpus"`
	MemoryMiB          int64             `tfsdk:"memory_mib"`
	CPULoad            float64           `tfsdk:"cpu_load"`
	MemoryUsedMiB      int64             `tfsdk:"memory_used_mib"`
	AllocatedVCPUs     float64           `tfsdk:"allocated_vcpus"`
	AllocatedMemoryMiB int64             `tfsdk:"allocated_memory_mib"`
	RunningGuests      int64             `tfsdk:"running_guests"`
	Guests             int64             `tfsdk:"guests"`
	Storages           []storageOut      `tfsdk:"storages"`
}

type storageOut struct {
	Name     string  `tfsdk:"name"`
	Shared   bool    `tfsdk:"shared"`
	FreeGiB  float64 `tfsdk:"free_gib"`
	TotalGiB float64 `tfsdk:"total_gib"`
}

func (d *nodesDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_nodes"
}

func (d *nodesDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "The scheduler's view of the cluster, one object per node: labels and taints (provider `node` blocks, " +
			"Notes, built-ins), HA maintenance, capacity, what is allocated, live load, guests and storages. Read-only: one " +
			"read of the cluster, plus the node Notes once per provider process when `read_node_notes` is on.",
		Attributes: map[string]schema.Attribute{
			"names_regex": schema.StringAttribute{Optional: true,
				Description: "Only nodes whose whole name matches this regular expression, e.g. `pve[1-4]`."},
			"nodes": schema.ListNestedAttribute{Computed: true, Description: "The nodes, sorted by name.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":   schema.StringAttribute{Computed: true, Description: "Node name."},
					"online": schema.BoolAttribute{Computed: true, Description: "Whether PVE reports the node online."},
					"maintenance": schema.BoolAttribute{Computed: true,
						Description: "Whether the node is in HA maintenance (its `hastate`); it then has the taint `" + nodelabels.TaintMaintenance + ":NoSchedule`."},
					"labels": schema.MapAttribute{Computed: true, ElementType: types.StringType,
						Description: "Labels: the provider's `node` block over the Notes, plus `" + nodelabels.LabelName + "` and `" + nodelabels.LabelArch + "`."},
					"taints": schema.ListAttribute{Computed: true, ElementType: types.StringType,
						Description: "Taints `key[=value]:Effect`, sorted, built-ins included."},
					"cpus":       schema.Int64Attribute{Computed: true, Description: "Logical CPUs."},
					"memory_mib": schema.Int64Attribute{Computed: true, Description: "Total memory, MiB."},
					"cpu_load":   schema.Float64Attribute{Computed: true, Description: "Live CPU use, a fraction 0..1."},
					"memory_used_mib": schema.Int64Attribute{Computed: true,
						Description: "Live used memory, MiB."},
					"allocated_vcpus": schema.Float64Attribute{Computed: true,
						Description: "vCPUs configured on the guests that count for capacity (running, or being created), and on the running guests being migrated to the node."},
					"allocated_memory_mib": schema.Int64Attribute{Computed: true,
						Description: "Memory configured on the same guests, MiB."},
					"running_guests": schema.Int64Attribute{Computed: true, Description: "Running guests (VMs and containers)."},
					"guests":         schema.Int64Attribute{Computed: true, Description: "Guests on the node, any status, templates left out."},
					"storages": schema.ListNestedAttribute{Computed: true, Description: "Storages enabled on the node, sorted by name.",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"name":      schema.StringAttribute{Computed: true, Description: "Storage name."},
							"shared":    schema.BoolAttribute{Computed: true, Description: "Whether the storage is shared between nodes."},
							"free_gib":  schema.Float64Attribute{Computed: true, Description: "Free space, GiB (two decimals)."},
							"total_gib": schema.Float64Attribute{Computed: true, Description: "Size, GiB (two decimals)."},
						}}},
				}}},
		},
	}
}

func (d *nodesDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = config.DataFrom(req.ProviderData, &resp.Diagnostics)
}

// ValidateConfig checks names_regex at plan time.
func (d *nodesDataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var m nodesModel
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("names_regex"), &m.NamesRegex)...)
	if kit.Known(m.NamesRegex) {
		if _, err := wholeNameRegex(m.NamesRegex.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("names_regex"), "Invalid names_regex", err.Error())
		}
	}
}

func wholeNameRegex(expr string) (*regexp.Regexp, error) {
	return regexp.Compile(`^(?:` + expr + `)$`)
}

func (d *nodesDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m nodesModel
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("names_regex"), &m.NamesRegex)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var keep *regexp.Regexp
	if !m.NamesRegex.IsNull() {
		var err error
		if keep, err = wholeNameRegex(m.NamesRegex.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("names_regex"), "Invalid names_regex", err.Error())
			return
		}
	}
	snap, err := d.data.ReadView(ctx)
	resp.Diagnostics.Append(d.data.Nodes.Warnings()...)
	if err != nil {
		resp.Diagnostics.AddError("Cannot read the Proxmox VE cluster", err.Error())
		return
	}
	m.Nodes = []nodeOut{}
	for _, ni := range scheduler.NodeInfos(&snap) {
		if keep == nil || keep.MatchString(ni.Node.Name) {
			m.Nodes = append(m.Nodes, describeNode(ni))
		}
	}
	sort.Slice(m.Nodes, func(i, j int) bool { return m.Nodes[i].Name < m.Nodes[j].Name })
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func describeNode(ni *scheduler.NodeInfo) nodeOut {
	n := ni.Node
	out := nodeOut{
		Name: n.Name, Online: n.Online, Maintenance: n.HAState == "maintenance", Labels: n.Labels, Taints: []string{},
		CPUs: int64(n.MaxCPU), MemoryMiB: int64(n.MaxMem / scheduler.MiB), CPULoad: round2(n.CPU), MemoryUsedMiB: int64(n.Mem / scheduler.MiB),
		AllocatedVCPUs: round2(ni.AllocCPU), AllocatedMemoryMiB: int64(ni.AllocMem / scheduler.MiB), Storages: []storageOut{},
	}
	for _, t := range n.Taints {
		out.Taints = append(out.Taints, nodelabels.FormatTaint(t))
	}
	for _, g := range ni.Guests {
		if g.Assumed || g.Arriving() {
			continue
		}
		out.Guests++
		if g.Status == "running" {
			out.RunningGuests++
		}
	}
	for _, st := range n.Storages {
		out.Storages = append(out.Storages, storageOut{Name: st.Name, Shared: st.Shared,
			FreeGiB: gibibytes(st.Total - min(st.Used, st.Total)), TotalGiB: gibibytes(st.Total)})
	}
	sort.Slice(out.Storages, func(i, j int) bool { return out.Storages[i].Name < out.Storages[j].Name })
	return out
}

const gibibyte = 1 << 30

func gibibytes(b uint64) float64 { return round2(float64(b) / gibibyte) }

func round2(f float64) float64 { return math.Round(f*100) / 100 }

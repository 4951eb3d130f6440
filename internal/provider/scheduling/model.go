package scheduling

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	dsschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/plugins"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// SchedulingModel is the configuration that steers the scheduler, embedded (by value, as the
// framework requires) by the qemuscheduler_placement and qemuscheduler_rebalance data sources
// and qemuscheduler_vm. A new scheduling attribute is a field here, an entry in
// dataSourceScheduling and in resourceScheduling (a block: one in policyBlocks, which builds
// both schema packages), and a line in request (plus one in nullScheduling when the field's
// zero value is not a valid null, as for maps, lists and strings).
type SchedulingModel struct {
	Profile          types.String          `tfsdk:"profile"`
	Annotations      types.Map             `tfsdk:"annotations"`
	PluginConfigYAML types.String          `tfsdk:"plugin_config_yaml"`
	PluginConfig     *PluginConfigModel    `tfsdk:"plugin_config"`
	NodeSelector     types.Map             `tfsdk:"node_selector"`
	NodeAffinity     []NodeAffinityModel   `tfsdk:"node_affinity"`
	Tolerations      []TolerationModel     `tfsdk:"toleration"`
	VMAffinity       []VMGroupTermModel    `tfsdk:"vm_affinity"`
	VMAntiAffinity   []VMGroupTermModel    `tfsdk:"vm_anti_affinity"`
	TopologySpread   []TopologySpreadModel `tfsdk:"topology_spread"`
}

// The size of a VM that sets none: PVE's defaults, so also what the scheduler assumes.
const (
	DefaultCores     = 1
	DefaultSockets   = 1
	DefaultMemoryMiB = 512
)

// NullScheduling is the scheduling configuration of an object that sets none (an imported VM).
func NullScheduling() SchedulingModel {
	return SchedulingModel{Profile: types.StringNull(), Annotations: types.MapNull(types.StringType), PluginConfigYAML: types.StringNull(), NodeSelector: types.MapNull(types.StringType)}
}

// DataSourceScheduling adds the scheduling attributes and blocks to a data source schema.
func DataSourceScheduling(s *dsschema.Schema) {
	addScheduling(dataSourceKit, s.Attributes, &s.Blocks)
}

// ResourceScheduling adds the scheduling attributes and blocks to a resource schema.
func ResourceScheduling(s *rschema.Schema) {
	addScheduling(resourceKit, s.Attributes, &s.Blocks)
}

// Request converts the scheduling configuration into a request of the default size, which the
// caller names, sizes and pins. complete is false when some value is known only after apply.
func (m *SchedulingModel) Request(ctx context.Context, diags *diag.Diagnostics) (req scheduler.Request, complete bool) {
	req = scheduler.Request{Cores: DefaultCores, Sockets: DefaultSockets, MemoryMiB: DefaultMemoryMiB}
	complete = true
	req.Annotations = annotationValues(ctx, m.Annotations, &complete, diags)
	nodePolicyRequest(ctx, m.NodeSelector, m.NodeAffinity, m.Tolerations, &req, &complete, diags)
	req.VMAffinity = groupTerms(ctx, "vm_affinity", m.VMAffinity, &complete, diags)
	req.VMAntiAffinity = groupTerms(ctx, "vm_anti_affinity", m.VMAntiAffinity, &complete, diags)
	req.TopologySpread = spreads(ctx, m.TopologySpread, &complete, diags)
	return req, complete
}

// Pipeline merges base (the provider's plugin config, and its profile's) with the object's own
// layers; nil after an error.
func (m *SchedulingModel) Pipeline(ctx context.Context, base scheduler.PluginConfig, diags *diag.Diagnostics) *scheduler.Profile {
	return schedulingProfile(ctx, diags, base, m.PluginConfigYAML, m.PluginConfig)
}

// Validate checks the scheduling configuration at plan time, before any cluster is read (the
// provider's own plugin config is not known yet). Values known only after apply are checked
// when the object is read or created.
func (m *SchedulingModel) Validate(ctx context.Context, diags *diag.Diagnostics) {
	profile := m.Pipeline(ctx, scheduler.PluginConfig{}, diags)
	if profile == nil {
		return
	}
	req, _ := m.Request(ctx, diags)
	if diags.HasError() {
		return
	}
	if err := profile.ValidateRequest(&req); err != nil {
		kit.AddSchedulerError(diags, err)
	}
}

// WarnIgnoredAnnotations warns of each annotation of req that the profile ignores because the
// plugin reading it is disabled: the decision holds without it, which the user who wrote it
// does not expect. The warning is on the annotation m sets, or on profile for one of the
// profile's default annotations, which m does not hold.
func WarnIgnoredAnnotations(profile *scheduler.Profile, req *scheduler.Request, m *SchedulingModel, diags *diag.Diagnostics) {
	ignored := profile.IgnoredAnnotations(req)
	for _, key := range slices.Sorted(maps.Keys(ignored)) {
		what := fmt.Sprintf("%s = %q is ignored: the plugin config disables %s, the plugin that reads it.", key, req.Annotations[key], ignored[key])
		if _, own := m.Annotations.Elements()[key]; own {
			diags.AddAttributeWarning(path.Root("annotations").AtMapKey(key), "Annotation ignored",
				fmt.Sprintf("%s Enable %s, or remove the annotation.", what, ignored[key]))
			continue
		}
		diags.AddAttributeWarning(path.Root("profile"), "Annotation ignored",
			fmt.Sprintf("%s It comes from the default annotations of profile %q (the provider's profile block of that name). Enable %s, or remove it from that block's annotations.",
				what, ProfileName(m.Profile), ignored[key]))
	}
}

// Sized sets the request's size from the size attributes that are known.
func Sized(req scheduler.Request, cores, sockets, memory types.Int64) scheduler.Request {
	for _, size := range []struct {
		v   types.Int64
		out *int
	}{{cores, &req.Cores}, {sockets, &req.Sockets}, {memory, &req.MemoryMiB}} {
		if !size.v.IsNull() && !size.v.IsUnknown() {
			*size.out = int(size.v.ValueInt64())
		}
	}
	return req
}

// annotationKeys are the keys the registered plugins read; anything else in annotations is a
// typo.
var annotationKeys = func() []string {
	var keys []string
	for _, a := range plugins.Registry.AnnotationKeys() {
		keys = append(keys, a.Key)
	}
	return keys
}()

// annotationsDescription documents the annotation keys of the registered plugins, so that a
// plugin with a new key documents it by its registry line alone.
func annotationsDescription() string {
	parts := []string{"Scheduler annotations, as on a CAPPX ProxmoxMachine:"}
	for _, a := range plugins.Registry.AnnotationKeys() {
		parts = append(parts, fmt.Sprintf("`%s`: %s;", a.Key, a.Description))
	}
	return strings.TrimSuffix(strings.Join(parts, " "), ";") + ". Any other key is an error."
}

// annotationValues returns the known, non-null annotations, with an error for each unknown
// key; it clears complete when some value (or the whole map) is known only after apply.
func annotationValues(ctx context.Context, annotations types.Map, complete *bool, diags *diag.Diagnostics) map[string]string {
	if annotations.IsUnknown() {
		*complete = false
		return nil
	}
	var ann map[string]types.String
	diags.Append(annotations.ElementsAs(ctx, &ann, false)...)
	values := map[string]string{}
	for key, v := range ann {
		switch {
		case !slices.Contains(annotationKeys, key):
			diags.AddAttributeError(path.Root("annotations").AtMapKey(key), "Unknown annotation",
				fmt.Sprintf("unknown annotation %q; valid keys: %s", key, strings.Join(annotationKeys, ", ")))
		case v.IsUnknown():
			*complete = false
		case !v.IsNull():
			if err := annotationText(v.ValueString()); err != "" {
				diags.AddAttributeError(path.Root("annotations").AtMapKey(key), "Invalid annotation", err)
				continue
			}
			values[key] = v.ValueString()
		}
	}
	return values
}

// annotationText refuses what no annotation value means and the placement record cannot keep
// (a line each, trimmed): spaces at an end, a line break. Node names, VMIDs and their ranges
// and patterns have neither.
func annotationText(v string) string {
	switch {
	case strings.ContainsAny(v, "\r\n"):
		return fmt.Sprintf("the value %q has a line break; node names, VMIDs and their patterns have none: write it on one line", v)
	case strings.TrimSpace(v) != v:
		return fmt.Sprintf("the value %q has a space at an end; node names, VMIDs and their patterns have none: remove it", v)
	}
	return ""
}

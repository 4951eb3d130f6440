package config

// Profile defaults: a provider profile may carry default annotations (a VMID range per cluster
// or tenant) and default policies (node selector, tolerations, topology spread) for every
// object that selects it; the object's own attributes override them.

import (
	"context"
	"errors"
	"maps"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	providerschema "github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/plugins"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/scheduling"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/records"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// ProviderKit builds the provider's plugin_config block and the policy blocks of its profile block.
var ProviderKit = scheduling.SchemaKit[providerschema.Attribute, providerschema.Block]{
	List: func(s scheduling.ListSpec) providerschema.Attribute {
		return providerschema.ListAttribute{ElementType: types.StringType, Required: s.Required, Optional: !s.Required, Description: s.Description, Validators: s.Validators}
	},
	String: func(s scheduling.StringSpec) providerschema.Attribute {
		return providerschema.StringAttribute{Required: s.Required, Optional: !s.Required, Description: s.Description, Validators: s.Validators}
	},
	Int64: func(s scheduling.Int64Spec) providerschema.Attribute {
		return providerschema.Int64Attribute{Optional: true, Description: s.Description, Validators: s.Validators}
	},
	StringMap: func(description string, _ bool) providerschema.Attribute {
		return providerschema.MapAttribute{Optional: true, ElementType: types.StringType, Description: description}
	},
	Bool: func(description string) providerschema.Attribute {
		return providerschema.BoolAttribute{Optional: true, Description: description}
	},
	Block: func(description string, attrs map[string]providerschema.Attribute, blocks map[string]providerschema.Block) providerschema.Block {
		return providerschema.ListNestedBlock{Description: description, NestedObject: providerschema.NestedBlockObject{Attributes: attrs, Blocks: blocks}}
	},
	Single: func(description string, blocks map[string]providerschema.Block) providerschema.Block {
		return providerschema.SingleNestedBlock{Description: description, Blocks: blocks}
	},
}

const defaultsNote = " A default of the profile for every VM, placement and rebalance that selects it; "

// profileDefaultsSchema adds the default attributes and blocks to the profile block.
func profileDefaultsSchema(attrs map[string]providerschema.Attribute, blocks map[string]providerschema.Block) {
	attrs["annotations"] = ProviderKit.StringMap("Default scheduler annotations, e.g. `{ \"vmid.qemu-scheduler/range\" = \"3000-3099\" }` "+
		"for a tenant's VMID range."+defaultsNote+"an object's own `annotations` win per key.", false)
	attrs["node_selector"] = ProviderKit.StringMap("Default node selector."+defaultsNote+"an object's own `node_selector` wins per key.", false)
	blocks["toleration"] = ProviderKit.Block("Default tolerations."+defaultsNote+"an object with `toleration` blocks of its own uses only those.",
		scheduling.TolerationAttributes(ProviderKit), nil)
	blocks["topology_spread"] = ProviderKit.Block("Default topology spread."+defaultsNote+"an object with `topology_spread` blocks of its own uses only those.",
		scheduling.SpreadAttributes(ProviderKit), nil)
}

// ProfileDefaults checks each profile's defaults, each error on the profile's attribute, and
// returns them by profile name (profiles without defaults are left out).
func ProfileDefaults(ctx context.Context, profiles []ProfileModel) (map[string]scheduler.Request, diag.Diagnostics) {
	var diags diag.Diagnostics
	out := map[string]scheduler.Request{}
	for i, p := range profiles {
		m := scheduling.NullScheduling()
		m.Annotations, m.NodeSelector, m.Tolerations, m.TopologySpread = p.Annotations, p.NodeSelector, p.Tolerations, p.TopologySpread
		var d diag.Diagnostics
		req, _ := m.Request(ctx, &d)
		at := path.Root("profile").AtListIndex(i)
		diags.Append(underPath(at, d)...)
		if !d.HasError() {
			checkDefaults(at, req, &diags)
		}
		if kit.Known(p.Name) && (len(req.Annotations) > 0 || len(req.NodeSelector) > 0 || len(req.Tolerations) > 0 || len(req.TopologySpread) > 0) {
			out[p.Name.ValueString()] = req
		}
	}
	return out, diags
}

// checkDefaults runs the plugins' checks of the defaults (a VMID range, a regex) on the
// profile, so that a mistake is an error there rather than on every object selecting it.
func checkDefaults(at path.Path, req scheduler.Request, diags *diag.Diagnostics) {
	prof, err := plugins.NewProfile(scheduler.PluginConfig{})
	if err == nil {
		req.Cores, req.Sockets, req.MemoryMiB = scheduling.DefaultCores, scheduling.DefaultSockets, scheduling.DefaultMemoryMiB
		err = prof.ValidateRequest(&req)
	}
	var ie *scheduler.InputError
	switch {
	case errors.As(err, &ie) && ie.Key != "":
		diags.AddAttributeError(at.AtName(ie.Attribute).AtMapKey(ie.Key), "Invalid profile default", ie.Message)
	case errors.As(err, &ie):
		diags.AddAttributeError(at.AtName(ie.Attribute), "Invalid profile default", ie.Message)
	case err != nil:
		diags.AddAttributeError(at, "Invalid profile default", err.Error())
	}
}

// underPath moves diagnostics about a scheduling model's attributes under the block at.
func underPath(at path.Path, diags diag.Diagnostics) diag.Diagnostics {
	var out diag.Diagnostics
	for _, d := range diags {
		wp, ok := d.(diag.DiagnosticWithPath)
		if !ok {
			out.Append(d)
			continue
		}
		p := at
		for _, step := range wp.Path().Steps() {
			switch s := step.(type) {
			case path.PathStepAttributeName:
				p = p.AtName(string(s))
			case path.PathStepElementKeyInt:
				p = p.AtListIndex(int(s))
			case path.PathStepElementKeyString:
				p = p.AtMapKey(string(s))
			}
		}
		out.Append(diag.WithPath(p, d))
	}
	return out
}

// WithDefaults fills in the defaults of the selected profile that the request does not set.
func (p *Data) WithDefaults(profile types.String, req *scheduler.Request) {
	if p == nil {
		return
	}
	def, ok := p.ProfileDefaults[scheduling.ProfileName(profile)]
	if !ok {
		return
	}
	req.Annotations = mergeDefaults(def.Annotations, req.Annotations)
	req.NodeSelector = mergeDefaults(def.NodeSelector, req.NodeSelector)
	if len(req.Tolerations) == 0 {
		req.Tolerations = def.Tolerations
	}
	if len(req.TopologySpread) == 0 {
		req.TopologySpread = def.TopologySpread
	}
}

// WithoutDefaults takes out of an imported record what the defaults of its profile give, the
// inverse of withDefaults: the VM that selects the profile sets only the rest. A value the VM
// set equal to a default cannot be told from it, and gives the same policy either way.
func (p *Data) WithoutDefaults(rec *records.Record) {
	if p == nil {
		return
	}
	def, ok := p.ProfileDefaults[scheduling.ProfileName(types.StringValue(rec.Profile))]
	if !ok {
		return
	}
	for _, m := range []struct{ def, own map[string]string }{{def.Annotations, rec.Annotations}, {def.NodeSelector, rec.NodeSelector}} {
		maps.DeleteFunc(m.own, func(k, v string) bool {
			d, ok := m.def[k]
			return ok && d == v
		})
	}
	// Blocks are replaced as a whole: equal to the defaults, the VM had none of its own.
	if len(def.Tolerations) > 0 && records.Format(records.Record{Tolerations: def.Tolerations}) == records.Format(records.Record{Tolerations: rec.Tolerations}) {
		rec.Tolerations = nil
	}
	if len(def.TopologySpread) > 0 && records.Format(records.Record{TopologySpread: def.TopologySpread}) == records.Format(records.Record{TopologySpread: rec.TopologySpread}) {
		rec.TopologySpread = nil
	}
}

// mergeDefaults is def overridden per key by own, nil when both are empty.
func mergeDefaults(def, own map[string]string) map[string]string {
	if len(def) == 0 {
		return own
	}
	out := maps.Clone(def)
	maps.Copy(out, own)
	return out
}

package config

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	providerschema "github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/scheduling"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// ProfileModel is one provider `profile` block: a named plugin config layer that a data
// source or resource selects with `profile = "<name>"`, like kube-scheduler's schedulerName.
// Terraform blocks cannot carry labels, so the name is an attribute.
type ProfileModel struct {
	Name             types.String                     `tfsdk:"name"`
	PluginConfigYAML types.String                     `tfsdk:"plugin_config_yaml"`
	PluginConfig     *scheduling.PluginConfigModel    `tfsdk:"plugin_config"`
	Annotations      types.Map                        `tfsdk:"annotations"`
	NodeSelector     types.Map                        `tfsdk:"node_selector"`
	Tolerations      []scheduling.TolerationModel     `tfsdk:"toleration"`
	TopologySpread   []scheduling.TopologySpreadModel `tfsdk:"topology_spread"`
}

const profileDescription = "A named scheduler profile (kube-scheduler's `schedulerName`): a plugin config layer that a data source or " +
	"resource selects with `profile = \"<name>\"`. Layers, later wins: the provider's `plugin_config_yaml`, the provider's " +
	"`plugin_config`, the profile's `plugin_config_yaml`, the profile's `plugin_config`, the object's own `plugin_config_yaml`, " +
	"its `plugin_config`. Objects without `profile` (or with `profile = \"default\"`) use no profile layer."

func ProviderProfileBlock() providerschema.Block {
	attrs := map[string]providerschema.Attribute{
		"name": providerschema.StringAttribute{Required: true,
			Description: "Profile name, `[a-z0-9-]+`, unique; `default` is reserved (it means no profile)."},
		"plugin_config_yaml": providerschema.StringAttribute{Optional: true,
			Description: scheduling.PluginConfigYAMLDescription + " A CAPPX user's plugin-config.yaml can serve as a whole profile."},
	}
	blocks := map[string]providerschema.Block{"plugin_config": scheduling.PluginConfigBlock(ProviderKit)}
	profileDefaultsSchema(attrs, blocks)
	return providerschema.ListNestedBlock{
		Description:  profileDescription,
		NestedObject: providerschema.NestedBlockObject{Attributes: attrs, Blocks: blocks},
	}
}

// ProfileLayers checks every profile block, each error on the attribute that holds it, and
// returns each profile's layer (its YAML, then its blocks) by name. Names still unknown at
// plan time are skipped.
func ProfileLayers(ctx context.Context, profiles []ProfileModel) (map[string]scheduler.PluginConfig, diag.Diagnostics) {
	var diags diag.Diagnostics
	out := make(map[string]scheduler.PluginConfig, len(profiles))
	first := map[string]int{}
	for i, p := range profiles {
		at := path.Root("profile").AtListIndex(i)
		yamlCfg, blockCfg, d := scheduling.SchedulingLayers(ctx, at, p.PluginConfigYAML, p.PluginConfig)
		diags.Append(d...)
		if !kit.Known(p.Name) {
			continue
		}
		name := p.Name.ValueString()
		switch j, dup := first[name]; {
		case name == scheduling.DefaultProfile:
			diags.AddAttributeError(at.AtName("name"), "Reserved profile name",
				`"default" is reserved: it means no profile. Put default settings in the provider's own plugin_config or plugin_config_yaml, or rename this profile.`)
		case !scheduling.ProfileNamePattern.MatchString(name):
			diags.AddAttributeError(at.AtName("name"), "Invalid profile name",
				fmt.Sprintf("profile name %q must match [a-z0-9-]+ (lower-case letters, digits and dashes), e.g. \"packing\".", name))
		case dup:
			diags.AddAttributeError(at.AtName("name"), "Duplicate profile name",
				fmt.Sprintf("profile %q is defined twice (profile blocks %d and %d); profile names must be unique.", name, j, i))
		default:
			first[name] = i
			out[name] = scheduler.MergePluginConfigs(yamlCfg, blockCfg)
		}
	}
	return out, diags
}

// pluginBase is the plugin config an object merges its own layers onto: the provider's
// defaults, then the named profile. An unknown profile is an error on "profile" that lists
// the defined ones.
func (p *Data) pluginBase(profile types.String) (scheduler.PluginConfig, error) {
	name := scheduling.ProfileName(profile)
	if name == scheduling.DefaultProfile {
		return p.Defaults, nil
	}
	layer, ok := p.Profiles[name]
	if !ok {
		return scheduler.PluginConfig{}, &scheduler.InputError{Attribute: "profile", Message: fmt.Sprintf(
			"profile %q is not defined in the provider; defined profiles: %s. Add a profile block with name = %q to the provider, or choose a defined one.",
			name, p.definedProfiles(), name)}
	}
	return scheduler.MergePluginConfigs(p.Defaults, layer), nil
}

// definedProfiles lists the profiles an object may select, the default first.
func (p *Data) definedProfiles() string {
	defined := make([]string, 0, len(p.Profiles)+1)
	for n := range p.Profiles {
		defined = append(defined, n)
	}
	sort.Strings(defined)
	return strings.Join(append([]string{scheduling.DefaultProfile}, defined...), ", ")
}

// Pipeline builds an object's scheduler: the provider's plugin config, the profile the object
// selects, then the object's own layers; nil after an error (an unknown profile is one).
func (p *Data) Pipeline(ctx context.Context, m *scheduling.SchedulingModel, diags *diag.Diagnostics) *scheduler.Profile {
	base, err := p.pluginBase(m.Profile)
	if err != nil {
		kit.AddSchedulerError(diags, err)
		return nil
	}
	return m.Pipeline(ctx, base, diags)
}

// UnderProfile names the profile under which no node was found, when one is named.
func UnderProfile(err error, profile types.String) error {
	var ue *scheduler.UnschedulableError
	var se *scheduler.SetError
	name := scheduling.ProfileName(profile)
	// A set's error is about whichever VM of the set does not fit, under its own profile.
	if name == scheduling.DefaultProfile || errors.As(err, &se) || !errors.As(err, &ue) {
		return err
	}
	named := *ue
	named.Message += " (profile " + name + ")"
	return &named
}

// WithProfile names the profile that decided at the end of a placement summary; the default
// profile leaves the summary as it always was.
func WithProfile(summary string, profile types.String) string {
	if name := scheduling.ProfileName(profile); name != scheduling.DefaultProfile {
		return summary + ", profile " + name
	}
	return summary
}

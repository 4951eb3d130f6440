package provider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	providerschema "github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// defaultProfile is the name that selects no profile layer: the provider's own plugin config.
const defaultProfile = "default"

var profileNamePattern = regexp.MustCompile(`^[a-z0-9-]+$`)

// profileModel is one provider `profile` block: a named plugin config layer that a data
// source or resource selects with `profile = "<name>"`, like kube-scheduler's schedulerName.
// Terraform blocks cannot carry labels, so the name is an attribute.
type profileModel struct {
	Name             types.String          `tfsdk:"name"`
	PluginConfigYAML types.String          `tfsdk:"plugin_config_yaml"`
	PluginConfig     *pluginConfigModel    `tfsdk:"plugin_config"`
	Annotations      types.Map             `tfsdk:"annotations"`
	NodeSelector     types.Map             `tfsdk:"node_selector"`
	Tolerations      []tolerationModel     `tfsdk:"toleration"`
	TopologySpread   []topologySpreadModel `tfsdk:"topology_spread"`
}

const profileDescription = "A named scheduler profile (kube-scheduler's `schedulerName`): a plugin config layer that a data source or " +
	"resource selects with `profile = \"<name>\"`. Layers, later wins: the provider's `plugin_config_yaml`, the provider's " +
	"`plugin_config`, the profile's `plugin_config_yaml`, the profile's `plugin_config`, the object's own `plugin_config_yaml`, " +
	"its `plugin_config`. Objects without `profile` (or with `profile = \"default\"`) use no profile layer."

const profileAttrDescription = "The provider `profile` (by name) whose plugin config applies under this object's own `plugin_config_yaml` " +
	"and `plugin_config`, kube-scheduler's `schedulerName`. Omitted or `\"default\"`: no profile layer. An unknown name is a plan error " +
	"listing the defined ones. The profile's name ends the summary and any \"no placement\" error."

func providerProfileBlock() providerschema.Block {
	attrs := map[string]providerschema.Attribute{
		"name": providerschema.StringAttribute{Required: true,
			Description: "Profile name, `[a-z0-9-]+`, unique; `default` is reserved (it means no profile)."},
		"plugin_config_yaml": providerschema.StringAttribute{Optional: true,
			Description: pluginConfigYAMLDescription + " A CAPPX user's plugin-config.yaml can serve as a whole profile."},
	}
	blocks := map[string]providerschema.Block{"plugin_config": pluginConfigBlock(providerKit)}
	profileDefaultsSchema(attrs, blocks)
	return providerschema.ListNestedBlock{
		Description:  profileDescription,
		NestedObject: providerschema.NestedBlockObject{Attributes: attrs, Blocks: blocks},
	}
}

// profileLayers checks every profile block, each error on the attribute that holds it, and
// returns each profile's layer (its YAML, then its blocks) by name. Names still unknown at
// plan time are skipped.
func profileLayers(ctx context.Context, profiles []profileModel) (map[string]scheduler.PluginConfig, diag.Diagnostics) {
	var diags diag.Diagnostics
	out := make(map[string]scheduler.PluginConfig, len(profiles))
	first := map[string]int{}
	for i, p := range profiles {
		at := path.Root("profile").AtListIndex(i)
		yamlCfg, blockCfg, d := schedulingLayers(ctx, at, p.PluginConfigYAML, p.PluginConfig)
		diags.Append(d...)
		if !known(p.Name) {
			continue
		}
		name := p.Name.ValueString()
		switch j, dup := first[name]; {
		case name == defaultProfile:
			diags.AddAttributeError(at.AtName("name"), "Reserved profile name",
				`"default" is reserved: it means no profile. Put default settings in the provider's own plugin_config or plugin_config_yaml, or rename this profile.`)
		case !profileNamePattern.MatchString(name):
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
func (p *providerData) pluginBase(profile types.String) (scheduler.PluginConfig, error) {
	name := profileName(profile)
	if name == defaultProfile {
		return p.defaults, nil
	}
	layer, ok := p.profiles[name]
	if !ok {
		return scheduler.PluginConfig{}, &scheduler.InputError{Attribute: "profile", Message: fmt.Sprintf(
			"profile %q is not defined in the provider; defined profiles: %s. Add a profile block with name = %q to the provider, or choose a defined one.",
			name, p.definedProfiles(), name)}
	}
	return scheduler.MergePluginConfigs(p.defaults, layer), nil
}

// definedProfiles lists the profiles an object may select, the default first.
func (p *providerData) definedProfiles() string {
	defined := make([]string, 0, len(p.profiles)+1)
	for n := range p.profiles {
		defined = append(defined, n)
	}
	sort.Strings(defined)
	return strings.Join(append([]string{defaultProfile}, defined...), ", ")
}

// pipeline builds an object's scheduler: the provider's plugin config, the profile the object
// selects, then the object's own layers; nil after an error (an unknown profile is one).
func (p *providerData) pipeline(ctx context.Context, m *schedulingModel, diags *diag.Diagnostics) *scheduler.Profile {
	base, err := p.pluginBase(m.Profile)
	if err != nil {
		addSchedulerError(diags, err)
		return nil
	}
	return m.pipeline(ctx, base, diags)
}

func profileValidators() []validator.String {
	return []validator.String{stringvalidator.RegexMatches(profileNamePattern, `must be the name of a provider profile ([a-z0-9-]+), or "default"`)}
}

// profileName is the selected profile, "default" when none is named.
func profileName(profile types.String) string {
	if !known(profile) || profile.ValueString() == "" {
		return defaultProfile
	}
	return profile.ValueString()
}

// underProfile names the profile under which no node was found, when one is named.
func underProfile(err error, profile types.String) error {
	var ue *scheduler.UnschedulableError
	var se *scheduler.SetError
	name := profileName(profile)
	// A set's error is about whichever VM of the set does not fit, under its own profile.
	if name == defaultProfile || errors.As(err, &se) || !errors.As(err, &ue) {
		return err
	}
	named := *ue
	named.Message += " (profile " + name + ")"
	return &named
}

// withProfile names the profile that decided at the end of a placement summary; the default
// profile leaves the summary as it always was.
func withProfile(summary string, profile types.String) string {
	if name := profileName(profile); name != defaultProfile {
		return summary + ", profile " + name
	}
	return summary
}

package scheduling

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/plugins"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// PluginConfigModel is the plugin_config block, shared by the provider, the data source and
// the resource.
type PluginConfigModel struct {
	Filter []pluginModel      `tfsdk:"filter"`
	Score  []scorePluginModel `tfsdk:"score"`
	VMID   []pluginModel      `tfsdk:"vmid"`
}

type pluginModel struct {
	Name   types.String `tfsdk:"name"`
	Enable types.Bool   `tfsdk:"enable"`
	Args   types.Map    `tfsdk:"args"`
}

type scorePluginModel struct {
	Name   types.String `tfsdk:"name"`
	Enable types.Bool   `tfsdk:"enable"`
	Args   types.Map    `tfsdk:"args"`
	Weight types.Int64  `tfsdk:"weight"`
}

const pluginConfigDescription = "Enables, disables and configures scheduler plugins, like the reference scheduler's " +
	"plugin-config.yaml. Merged over the provider's plugin config and over `plugin_config_yaml`; a block is the last word: " +
	"`enable` omitted means enabled even when a lower layer disabled the plugin."

const PluginConfigYAMLDescription = "The reference (CAPPX qemu-scheduler) plugin-config.yaml, verbatim: sections `filters`, " +
	"`scores` and `vmids`, each a map of plugin name to `{enable, config, weight}`. `enable` omitted means enabled."

// blockAttrs documents the attributes of a filter, score or vmid block.
type blockAttrs struct {
	name, enable, args, weight string
}

var pluginAttrDocs = blockAttrs{
	name:   "Plugin name, exactly as in the reference scheduler.",
	enable: "Whether the plugin runs. Omitted means enabled.",
	args:   "Plugin arguments (the YAML `config:` map), e.g. `{ ratio = \"8\" }` for the overcommit filters.",
	weight: "Multiplier of the plugin's 0..100 score (scores only; default 1).",
}

func pluginKindDoc(kind string) string {
	specs := map[string][]scheduler.PluginSpec{"filter": plugins.Registry.Filters, "score": plugins.Registry.Scores, "vmid": plugins.Registry.VMIDs}[kind]
	doc := "A " + kind + " plugin setting. Valid names: "
	for i, s := range specs {
		if i > 0 {
			doc += ", "
		}
		doc += "`" + s.Name + "`"
		if s.DefaultOff {
			doc += " (off unless enabled)"
		}
	}
	return doc + "."
}

// PluginConfigBlock is the plugin_config block of the provider, its profiles, the data sources
// and the resource.
func PluginConfigBlock[A, B any](k SchemaKit[A, B]) B {
	kind := func(kind string, withWeight bool) B {
		attrs := map[string]A{
			"name":   k.String(StringSpec{Required: true, Description: pluginAttrDocs.name}),
			"enable": k.Bool(pluginAttrDocs.enable),
			"args":   k.StringMap(pluginAttrDocs.args, false),
		}
		if withWeight {
			attrs["weight"] = k.Int64(Int64Spec{Description: pluginAttrDocs.weight})
		}
		return k.Block(pluginKindDoc(kind), attrs, nil)
	}
	return k.Single(pluginConfigDescription, map[string]B{"filter": kind("filter", false), "score": kind("score", true), "vmid": kind("vmid", false)})
}

// toScheduler converts the block. A block is the user's last word, so an omitted enable is an
// explicit true.
func (m *PluginConfigModel) toScheduler(ctx context.Context) (scheduler.PluginConfig, diag.Diagnostics) {
	var diags diag.Diagnostics
	if m == nil {
		return scheduler.PluginConfig{}, diags
	}
	setting := func(enabled types.Bool, args types.Map) scheduler.PluginSetting {
		enable := enabled.IsNull() || enabled.ValueBool()
		s := scheduler.PluginSetting{Enable: &enable}
		if !args.IsNull() && !args.IsUnknown() {
			s.Args = map[string]string{}
			diags.Append(args.ElementsAs(ctx, &s.Args, false)...)
		}
		return s
	}
	section := func(list []pluginModel) map[string]scheduler.PluginSetting {
		if len(list) == 0 {
			return nil
		}
		out := map[string]scheduler.PluginSetting{}
		for _, p := range list {
			out[p.Name.ValueString()] = setting(p.Enable, p.Args)
		}
		return out
	}
	var scores map[string]scheduler.PluginSetting
	for _, p := range m.Score {
		if scores == nil {
			scores = map[string]scheduler.PluginSetting{}
		}
		s := setting(p.Enable, p.Args)
		if !p.Weight.IsNull() && !p.Weight.IsUnknown() {
			w := p.Weight.ValueInt64()
			s.Weight = &w
		}
		scores[p.Name.ValueString()] = s
	}
	return scheduler.PluginConfig{Filters: section(m.Filter), Scores: scores, VMIDs: section(m.VMID)}, diags
}

// SchedulingLayers parses and checks one object's (or profile's, at base) YAML and block
// layers, each on its own so that a mistake is reported on the attribute that holds it.
func SchedulingLayers(ctx context.Context, base path.Path, yamlText types.String, block *PluginConfigModel) (yamlCfg, blockCfg scheduler.PluginConfig, diags diag.Diagnostics) {
	if !yamlText.IsNull() && !yamlText.IsUnknown() {
		cfg, err := scheduler.ParsePluginConfigYAML([]byte(yamlText.ValueString()))
		if err == nil {
			_, err = plugins.NewProfile(cfg)
		}
		if err != nil {
			kit.AddSchedulerErrorAt(&diags, base, relabel(err, "plugin_config_yaml"))
		}
		yamlCfg = cfg
	}
	cfg, d := block.toScheduler(ctx)
	diags.Append(d...)
	if _, err := plugins.NewProfile(cfg); err != nil {
		kit.AddSchedulerErrorAt(&diags, base, relabel(err, "plugin_config"))
	}
	return yamlCfg, cfg, diags
}

// schedulingProfile merges the provider's defaults with an object's own plugin layers (YAML,
// then blocks) into a pipeline; nil after an error.
func schedulingProfile(ctx context.Context, diags *diag.Diagnostics, defaults scheduler.PluginConfig, yamlText types.String, block *PluginConfigModel) *scheduler.Profile {
	yamlCfg, blockCfg, d := SchedulingLayers(ctx, path.Empty(), yamlText, block)
	diags.Append(d...)
	if diags.HasError() {
		return nil
	}
	merged := scheduler.MergePluginConfigs(defaults, yamlCfg, blockCfg)
	key, keyErr := json.Marshal(merged)
	if p, ok := builtProfiles.Load(string(key)); ok && keyErr == nil {
		return p.(*scheduler.Profile)
	}
	profile, err := plugins.NewProfile(merged)
	if err != nil {
		kit.AddSchedulerError(diags, err)
		return nil
	}
	if keyErr == nil {
		builtProfiles.Store(string(key), profile)
	}
	return profile
}

// builtProfiles holds the pipelines built, by their merged plugin config (JSON): profiles are
// never modified once built, and VMs of one configuration sharing one profile are alike to
// the change set's joint search, which places alike VMs as one class.
var builtProfiles sync.Map

// relabel points a plugin-config error at the attribute it came from.
func relabel(err error, attribute string) error {
	var ie *scheduler.InputError
	if errors.As(err, &ie) && (ie.Attribute == "plugin_config" || ie.Attribute == "plugin_config_yaml") {
		copied := *ie
		copied.Attribute = attribute
		return &copied
	}
	return err
}

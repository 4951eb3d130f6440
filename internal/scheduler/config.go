package scheduler

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// PluginConfig enables, disables and configures plugins, per kind. It has the shape of the
// reference scheduler's plugin-config.yaml (sections filters, scores, vmids).
type PluginConfig struct {
	Filters map[string]PluginSetting
	Scores  map[string]PluginSetting
	VMIDs   map[string]PluginSetting
}

// PluginSetting is one layer's word on one plugin.
type PluginSetting struct {
	// Enable is nil when this layer does not say; a YAML entry or a Terraform block that
	// omits enable sets it to true (all plugins are enabled unless disabled).
	Enable *bool
	// Args are the plugin's arguments (YAML "config:"), merged key by key, later wins.
	Args map[string]string
	// Weight applies to scores only; nil inherits; the default is 1.
	Weight *int64
}

type yamlPluginConfig struct {
	Filters map[string]*yamlPlugin `yaml:"filters"`
	Scores  map[string]*yamlPlugin `yaml:"scores"`
	VMIDs   map[string]*yamlPlugin `yaml:"vmids"`
}

type yamlPlugin struct {
	Enable *bool             `yaml:"enable"`
	Config map[string]string `yaml:"config"`
	Weight *int64            `yaml:"weight"`
}

// ParsePluginConfigYAML reads the reference scheduler's plugin-config.yaml. It is strict:
// unknown sections and keys are errors. Plugin names and args are checked by NewProfile.
func ParsePluginConfigYAML(data []byte) (PluginConfig, error) {
	var raw yamlPluginConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&raw); err != nil && !errors.Is(err, io.EOF) {
		return PluginConfig{}, &InputError{Attribute: "plugin_config_yaml", Message: yamlMessage(err)}
	}
	cfg := PluginConfig{
		Filters: convertYAMLSection(raw.Filters),
		Scores:  convertYAMLSection(raw.Scores),
		VMIDs:   convertYAMLSection(raw.VMIDs),
	}
	for name, s := range cfg.Filters {
		if s.Weight != nil {
			return PluginConfig{}, &InputError{Attribute: "plugin_config_yaml", Key: name, Message: "weight applies to score plugins only"}
		}
	}
	for name, s := range cfg.VMIDs {
		if s.Weight != nil {
			return PluginConfig{}, &InputError{Attribute: "plugin_config_yaml", Key: name, Message: "weight applies to score plugins only"}
		}
	}
	return cfg, nil
}

var yamlUnknownField = regexp.MustCompile(`field (\S+) not found in type scheduler\.(\w+)`)

// yamlMessage turns yaml.v3's wording into the user's: which key is unknown and what is valid.
func yamlMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n")
	msg = strings.Join(strings.Fields(msg), " ")
	msg = yamlUnknownField.ReplaceAllStringFunc(msg, func(m string) string {
		sub := yamlUnknownField.FindStringSubmatch(m)
		if sub[2] == "yamlPluginConfig" {
			return fmt.Sprintf("unknown section %q (valid sections: filters, scores, vmids)", sub[1])
		}
		return fmt.Sprintf("unknown key %q (valid keys: enable, config, weight)", sub[1])
	})
	return "invalid plugin config YAML: " + msg
}

func convertYAMLSection(section map[string]*yamlPlugin) map[string]PluginSetting {
	if len(section) == 0 {
		return nil
	}
	out := make(map[string]PluginSetting, len(section))
	for name, p := range section {
		enabled := true
		s := PluginSetting{Enable: &enabled}
		if p != nil {
			if p.Enable != nil {
				enabled = *p.Enable
			}
			s.Args = p.Config
			s.Weight = p.Weight
		}
		out[name] = s
	}
	return out
}

// MergePluginConfigs layers configs, later wins: provider default, then YAML, then blocks.
func MergePluginConfigs(layers ...PluginConfig) PluginConfig {
	var out PluginConfig
	for _, l := range layers {
		out.Filters = mergeSection(out.Filters, l.Filters)
		out.Scores = mergeSection(out.Scores, l.Scores)
		out.VMIDs = mergeSection(out.VMIDs, l.VMIDs)
	}
	return out
}

func mergeSection(base, over map[string]PluginSetting) map[string]PluginSetting {
	if len(over) == 0 {
		return base
	}
	out := make(map[string]PluginSetting, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for name, o := range over {
		cur := out[name]
		if o.Enable != nil {
			cur.Enable = o.Enable
		}
		if o.Weight != nil {
			cur.Weight = o.Weight
		}
		if len(o.Args) > 0 {
			args := make(map[string]string, len(cur.Args)+len(o.Args))
			for k, v := range cur.Args {
				args[k] = v
			}
			for k, v := range o.Args {
				args[k] = v
			}
			cur.Args = args
		}
		out[name] = cur
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func specNames(specs []PluginSpec) string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}

func findSpec(specs []PluginSpec, name string) (PluginSpec, bool) {
	for _, s := range specs {
		if s.Name == name {
			return s, true
		}
	}
	return PluginSpec{}, false
}

// checkSection rejects unknown plugin names and args in one section of a config.
func checkSection(kind string, specs []PluginSpec, section map[string]PluginSetting, attribute string) error {
	for _, name := range sortedKeys(section) {
		spec, ok := findSpec(specs, name)
		if !ok {
			return &InputError{Attribute: attribute, Key: name, Message: fmt.Sprintf("unknown %s plugin %q; valid %s plugins: %s", kind, name, kind, specNames(specs))}
		}
		for _, arg := range sortedKeys(section[name].Args) {
			if !contains(spec.Args, arg) {
				valid := "none"
				if len(spec.Args) > 0 {
					valid = strings.Join(spec.Args, ", ")
				}
				return &InputError{Attribute: attribute, Key: name, Message: fmt.Sprintf("unknown arg %q for %s plugin %s; valid args: %s", arg, kind, name, valid)}
			}
		}
		if w := section[name].Weight; w != nil && *w < 0 {
			return &InputError{Attribute: attribute, Key: name, Message: fmt.Sprintf("weight must be 0 or more, got %d", *w)}
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

package scheduler

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
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

// Sections of plugin-config.yaml, in the order they are listed in messages.
var yamlSections = []string{"filters", "scores", "vmids"}

// Keys of one plugin's entry.
var yamlPluginKeys = []string{"enable", "config", "weight"}

// ParsePluginConfigYAML reads the reference scheduler's plugin-config.yaml: sections filters,
// scores and vmids, each mapping plugin names to {enable, config, weight}. It is strict:
// unknown sections and keys, wrong types and several documents are errors naming the line.
// An entry that omits enable is enabled. Plugin names and args are checked by NewProfile,
// which knows the registry.
func ParsePluginConfigYAML(data []byte) (PluginConfig, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return PluginConfig{}, nil
		}
		return PluginConfig{}, yamlSyntaxError(err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return PluginConfig{}, yamlError(&extra, "", "a second YAML document; the plugin config is one document")
	case !errors.Is(err, io.EOF):
		return PluginConfig{}, yamlSyntaxError(err)
	}
	if len(doc.Content) == 0 {
		return PluginConfig{}, nil
	}
	root := resolve(doc.Content[0])
	if isNull(root) {
		return PluginConfig{}, nil
	}
	if root.Kind != yaml.MappingNode {
		return PluginConfig{}, yamlError(root, "", "the top level must map sections (filters, scores, vmids) to plugins, got %s", describe(root))
	}
	var cfg PluginConfig
	err := eachPair(root, func(key, value *yaml.Node) error {
		var target *map[string]PluginSetting
		switch key.Value {
		case "filters":
			target = &cfg.Filters
		case "scores":
			target = &cfg.Scores
		case "vmids":
			target = &cfg.VMIDs
		default:
			return yamlError(key, "", "unknown section %q (valid sections: %s)", key.Value, strings.Join(yamlSections, ", "))
		}
		section, err := parseYAMLSection(key.Value, value)
		*target = section
		return err
	})
	if err != nil {
		return PluginConfig{}, err
	}
	return cfg, nil
}

func parseYAMLSection(name string, n *yaml.Node) (map[string]PluginSetting, error) {
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, yamlError(n, "", "section %s must map plugin names to settings, e.g. \"NodeResource: {weight: 2}\", got %s", name, describe(n))
	}
	out := map[string]PluginSetting{}
	err := eachPair(n, func(key, value *yaml.Node) error {
		s, err := parseYAMLPlugin(name+"."+key.Value, key.Value, value)
		out[key.Value] = s
		return err
	})
	return out, err
}

func parseYAMLPlugin(path, plugin string, n *yaml.Node) (PluginSetting, error) {
	enabled := true
	s := PluginSetting{Enable: &enabled}
	if isNull(n) {
		return s, nil
	}
	if n.Kind != yaml.MappingNode {
		return s, yamlError(n, plugin, "%s must be a mapping with keys %s, got %s", path, strings.Join(yamlPluginKeys, ", "), describe(n))
	}
	err := eachPair(n, func(key, value *yaml.Node) error {
		switch key.Value {
		case "enable":
			if value.Kind != yaml.ScalarNode || value.Decode(&enabled) != nil {
				return yamlError(value, plugin, "%s.enable must be true or false, got %s", path, describe(value))
			}
		case "config":
			args, err := parseYAMLArgs(path+".config", plugin, value)
			s.Args = args
			return err
		case "weight":
			var w int64
			if value.Kind != yaml.ScalarNode || value.ShortTag() != "!!int" || value.Decode(&w) != nil {
				return yamlError(value, plugin, "%s.weight must be a whole number, got %s", path, describe(value))
			}
			s.Weight = &w
		default:
			return yamlError(key, plugin, "unknown key %q in %s (valid keys: %s)", key.Value, path, strings.Join(yamlPluginKeys, ", "))
		}
		return nil
	})
	return s, err
}

// parseYAMLArgs reads a config: map. Values are kept as written ("8", "1.5"), as the
// Terraform args are strings too.
func parseYAMLArgs(path, plugin string, n *yaml.Node) (map[string]string, error) {
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, yamlError(n, plugin, "%s must map arg names to values, e.g. \"ratio: 8\", got %s", path, describe(n))
	}
	args := map[string]string{}
	err := eachPair(n, func(key, value *yaml.Node) error {
		if value.Kind != yaml.ScalarNode || isNull(value) {
			return yamlError(value, plugin, "%s.%s must be a single value, got %s", path, key.Value, describe(value))
		}
		args[key.Value] = value.Value
		return nil
	})
	return args, err
}

// eachPair walks a mapping's key/value pairs in order; keys must be distinct scalars.
func eachPair(n *yaml.Node, f func(key, value *yaml.Node) error) error {
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := resolve(n.Content[i]), resolve(n.Content[i+1])
		if key.Kind != yaml.ScalarNode {
			return yamlError(key, "", "keys must be plain names, got %s", describe(key))
		}
		if line, dup := seen[key.Value]; dup {
			return yamlError(key, "", "%q is given twice (first at line %d)", key.Value, line)
		}
		seen[key.Value] = key.Line
		if err := f(key, value); err != nil {
			return err
		}
	}
	return nil
}

// resolve follows YAML aliases (*name) to the node they stand for.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names a node for a message: a scalar by its text, anything else by its kind.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "nothing"
		}
		return strconv.Quote(n.Value)
	}
	return "an unsupported value"
}

func yamlError(n *yaml.Node, plugin, format string, args ...any) error {
	return &InputError{Attribute: "plugin_config_yaml", Key: plugin,
		Message: fmt.Sprintf("invalid plugin config YAML: line %d: ", n.Line) + fmt.Sprintf(format, args...)}
}

// yamlSyntaxError rewords the YAML library's error, which already names the line.
func yamlSyntaxError(err error) error {
	msg := strings.Join(strings.Fields(strings.TrimPrefix(err.Error(), "yaml: ")), " ")
	return &InputError{Attribute: "plugin_config_yaml", Message: "invalid plugin config YAML: " + msg}
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
			if !slices.Contains(spec.Args, arg) {
				valid := "none"
				if len(spec.Args) > 0 {
					valid = strings.Join(spec.Args, ", ")
				}
				return &InputError{Attribute: attribute, Key: name, Message: fmt.Sprintf("unknown arg %q for %s plugin %s; valid args: %s", arg, kind, name, valid)}
			}
		}
		switch w := section[name].Weight; {
		case w == nil:
		case kind != "score":
			return &InputError{Attribute: attribute, Key: name, Message: fmt.Sprintf("weight applies to score plugins only, not to %s plugin %s", kind, name)}
		case *w < 0:
			return &InputError{Attribute: attribute, Key: name, Message: fmt.Sprintf("weight of score plugin %s must be 0 or more, got %d", name, *w)}
		}
	}
	return nil
}

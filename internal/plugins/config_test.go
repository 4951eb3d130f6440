package plugins

import (
	"errors"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// The reference's shipped plugin-config.yaml shape, verbatim.
const referenceYAML = `
filters:
  CPUOvercommit:
    enable: false
  MemoryOvercommit:
    enable: false
scores:
  NodeResource:
    enable: true
vmids:
  Regex: {}
`

func TestParsePluginConfigYAML(t *testing.T) {
	cfg, err := scheduler.ParsePluginConfigYAML([]byte(referenceYAML))
	if err != nil {
		t.Fatal(err)
	}
	if e := cfg.Filters["CPUOvercommit"].Enable; e == nil || *e {
		t.Fatalf("CPUOvercommit enable = %v, want false", e)
	}
	// enable omitted means enabled (the reference's README; its code disagreed).
	if e := cfg.VMIDs["Regex"].Enable; e == nil || !*e {
		t.Fatalf("Regex enable = %v, want true", e)
	}
	if _, err := NewProfile(cfg); err != nil {
		t.Fatal(err)
	}

	withArgs, err := scheduler.ParsePluginConfigYAML([]byte("filters:\n  CPUOvercommit:\n    config:\n      ratio: 8\nscores:\n  NodeResource:\n    weight: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := withArgs.Filters["CPUOvercommit"].Args["ratio"]; got != "8" {
		t.Fatalf("ratio = %q", got)
	}
	if w := withArgs.Scores["NodeResource"].Weight; w == nil || *w != 2 {
		t.Fatalf("weight = %v", w)
	}
}

// Every mistake in a plugin config is refused with a message that names the place and what is
// valid. Parse errors carry the YAML line; NewProfile checks names, args and weights.
func TestPluginConfigErrors(t *testing.T) {
	const bad = "invalid plugin config YAML: "
	tests := []struct{ yaml, want string }{
		// structure (ParsePluginConfigYAML)
		{"filter:\n  NodeName: {}\n", `plugin_config_yaml: ` + bad + `line 1: unknown section "filter" (valid sections: filters, scores, vmids)`},
		{"filters:\n  NodeName:\n    enabled: true\n", `plugin_config_yaml["NodeName"]: ` + bad + `line 3: unknown key "enabled" in filters.NodeName (valid keys: enable, config, weight)`},
		{"filters: [\n", `plugin_config_yaml: ` + bad + `line 1: did not find expected node content`},
		{"[1, 2]\n", bad + `line 1: the top level must map sections (filters, scores, vmids) to plugins, got a list`},
		{"filters: [NodeName]\n", bad + `line 1: section filters must map plugin names to settings, e.g. "NodeResource: {weight: 2}", got a list`},
		{"filters:\n  NodeName: off\n", bad + `line 2: filters.NodeName must be a mapping with keys enable, config, weight, got "off"`},
		{"filters:\n  NodeName:\n    enable: maybe\n", bad + `line 3: filters.NodeName.enable must be true or false, got "maybe"`},
		{"filters:\n  CPUOvercommit:\n    config: [ratio]\n", bad + `line 3: filters.CPUOvercommit.config must map arg names to values, e.g. "ratio: 8", got a list`},
		{"filters:\n  CPUOvercommit:\n    config:\n      ratio: {a: 1}\n", bad + `line 4: filters.CPUOvercommit.config.ratio must be a single value, got a mapping`},
		{"filters:\n  CPUOvercommit:\n    config:\n      ratio:\n", bad + `line 4: filters.CPUOvercommit.config.ratio must be a single value, got nothing`},
		{"scores:\n  NodeResource:\n    weight: 1.5\n", bad + `line 3: scores.NodeResource.weight must be a whole number, got "1.5"`},
		{"filters:\n  NodeName: {}\n  NodeName: {}\n", bad + `line 3: "NodeName" is given twice (first at line 2)`},
		{"filters: {}\n---\nscores: {}\n", bad + `line 2: a second YAML document; the plugin config is one document`},
		// names, args and weights (NewProfile)
		{"filters:\n  NodeName:\n    weight: 2\n", `plugin_config["NodeName"]: weight applies to score plugins only, not to filter plugin NodeName`},
		{"filters:\n  NodeNames: {}\n", `plugin_config["NodeNames"]: unknown filter plugin "NodeNames"; valid filter plugins: NodeName, NodeOnline, NodeRegex, NodeSelector, TaintToleration, CPUOvercommit, MemoryOvercommit, StorageCapacity, VMAffinity, TopologySpread`},
		{"scores:\n  Random: {}\n", `unknown score plugin "Random"; valid score plugins: NodeResource, NodeAffinity, TaintToleration, VMAffinity, TopologySpread, LeastAllocated, MostAllocated, BalancedAllocation`},
		{"vmids:\n  IDRange: {}\n", `unknown vmid plugin "IDRange"; valid vmid plugins: Range, Regex`},
		{"filters:\n  CPUOvercommit:\n    config:\n      ration: 2\n", `unknown arg "ration" for filter plugin CPUOvercommit; valid args: ratio`},
		{"filters:\n  NodeRegex:\n    config:\n      x: 2\n", `unknown arg "x" for filter plugin NodeRegex; valid args: none`},
		{"filters:\n  CPUOvercommit:\n    config:\n      ratio: many\n", `plugin_config["CPUOvercommit"]: filter plugin CPUOvercommit: arg ratio must be a positive number, got "many"`},
		{"filters:\n  MemoryOvercommit:\n    config:\n      ratio: 0\n", `filter plugin MemoryOvercommit: arg ratio must be a positive number, got "0"`},
		{"filters:\n  MemoryOvercommit:\n    config:\n      ratio: -1\n", `arg ratio must be a positive number, got "-1"`},
		{"filters:\n  MemoryOvercommit:\n    config:\n      ratio: .nan\n", `arg ratio must be a positive number, got ".nan"`},
		{"filters:\n  MemoryOvercommit:\n    config:\n      ratio: 1e999\n", `arg ratio must be a positive number, got "1e999"`},
		{"filters:\n  CPUOvercommit:\n    enable: false\n    config:\n      ratio: x\n", `filter plugin CPUOvercommit: arg ratio must be a positive number, got "x"`},
		{"scores:\n  NodeResource:\n    weight: -1\n", `plugin_config["NodeResource"]: weight of score plugin NodeResource must be 0 or more, got -1`},
	}
	for _, tt := range tests {
		wantYAMLInputError(t, tt.yaml, tt.want)
	}
}

// wantYAMLInputError checks that the plugin config yaml fails, parsed or in NewProfile, with
// an InputError ending in want.
func wantYAMLInputError(t *testing.T, yaml, want string) {
	t.Helper()
	cfg, err := scheduler.ParsePluginConfigYAML([]byte(yaml))
	if err == nil {
		_, err = NewProfile(cfg)
	}
	var ie *scheduler.InputError
	if !errors.As(err, &ie) || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("%q:\n got  %v\n want an InputError ending in %s", yaml, err, want)
	}
}

// YAML's own conveniences keep working: aliases, flow style, yes/no booleans, comments.
func TestPluginConfigYAMLForms(t *testing.T) {
	cfg, err := scheduler.ParsePluginConfigYAML([]byte(`# both overcommit filters off
filters:
  CPUOvercommit: &off {enable: no}
  MemoryOvercommit: *off
scores: {NodeResource: {weight: 0x10}}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"CPUOvercommit", "MemoryOvercommit"} {
		if e := cfg.Filters[name].Enable; e == nil || *e {
			t.Errorf("%s enable = %v, want false", name, e)
		}
	}
	if w := cfg.Scores["NodeResource"].Weight; w == nil || *w != 16 {
		t.Errorf("weight = %v, want 16", w)
	}
	for _, empty := range []string{"", "# nothing\n", "---\n", "~\n", "filters:\n"} {
		cfg, err := scheduler.ParsePluginConfigYAML([]byte(empty))
		if err != nil || cfg.Filters != nil || cfg.Scores != nil || cfg.VMIDs != nil {
			t.Errorf("%q = %+v, %v; want an empty config", empty, cfg, err)
		}
	}
}

func TestMergePluginConfigs(t *testing.T) {
	off, on := false, true
	two := int64(2)
	provider := scheduler.PluginConfig{Filters: map[string]scheduler.PluginSetting{
		"CPUOvercommit": {Enable: &on, Args: map[string]string{"ratio": "8"}},
		"NodeRegex":     {Enable: &off},
	}}
	yaml := scheduler.PluginConfig{Filters: map[string]scheduler.PluginSetting{"MemoryOvercommit": {Enable: &off}}, Scores: map[string]scheduler.PluginSetting{"NodeResource": {Weight: &two}}}
	blocks := scheduler.PluginConfig{Filters: map[string]scheduler.PluginSetting{
		"NodeRegex":     {Enable: &on},
		"CPUOvercommit": {Enable: &on, Args: map[string]string{"ratio": "2"}},
	}}
	got := scheduler.MergePluginConfigs(provider, yaml, blocks)
	if e := got.Filters["NodeRegex"].Enable; !*e {
		t.Error("a block that omits enable must re-enable a plugin the provider disabled")
	}
	if e := got.Filters["MemoryOvercommit"].Enable; *e {
		t.Error("YAML disable must survive when no block mentions the plugin")
	}
	if r := got.Filters["CPUOvercommit"].Args["ratio"]; r != "2" {
		t.Errorf("ratio = %s, want the block's 2", r)
	}
	if w := got.Scores["NodeResource"].Weight; *w != 2 {
		t.Errorf("weight = %d", *w)
	}
	if provider.Filters["CPUOvercommit"].Args["ratio"] != "8" {
		t.Error("merge modified its input")
	}
}

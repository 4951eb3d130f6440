package plugins

import (
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
	empty, err := scheduler.ParsePluginConfigYAML(nil)
	if err != nil || empty.Filters != nil {
		t.Fatalf("empty YAML = %+v, %v", empty, err)
	}
}

func TestPluginConfigErrors(t *testing.T) {
	tests := []struct{ yaml, want string }{
		{"filter:\n  NodeName: {}\n", `plugin_config_yaml: invalid plugin config YAML: line 1: unknown section "filter" (valid sections: filters, scores, vmids)`},
		{"filters:\n  NodeName:\n    enabled: true\n", `line 3: unknown key "enabled" (valid keys: enable, config, weight)`},
		{"filters: [\n", `plugin_config_yaml: invalid plugin config YAML`},
		{"filters:\n  NodeName:\n    weight: 2\n", `plugin_config_yaml["NodeName"]: weight applies to score plugins only`},
		{"filters:\n  NodeNames: {}\n", `plugin_config["NodeNames"]: unknown filter plugin "NodeNames"; valid filter plugins: NodeName, NodeOnline, NodeRegex, CPUOvercommit, MemoryOvercommit`},
		{"scores:\n  Random: {}\n", `unknown score plugin "Random"; valid score plugins: NodeResource`},
		{"vmids:\n  IDRange: {}\n", `unknown vmid plugin "IDRange"; valid vmid plugins: Range, Regex`},
		{"filters:\n  CPUOvercommit:\n    config:\n      ration: 2\n", `unknown arg "ration" for filter plugin CPUOvercommit; valid args: ratio`},
		{"filters:\n  NodeRegex:\n    config:\n      x: 2\n", `unknown arg "x" for filter plugin NodeRegex; valid args: none`},
		{"filters:\n  CPUOvercommit:\n    config:\n      ratio: many\n", `plugin_config["CPUOvercommit"]: arg ratio must be a positive number, got "many"`},
		{"filters:\n  MemoryOvercommit:\n    config:\n      ratio: 0\n", `arg ratio must be a positive number, got "0"`},
		{"filters:\n  MemoryOvercommit:\n    config:\n      ratio: -1\n", `arg ratio must be a positive number, got "-1"`},
		{"scores:\n  NodeResource:\n    weight: -1\n", `plugin_config["NodeResource"]: weight must be 0 or more, got -1`},
	}
	for _, tt := range tests {
		cfg, err := scheduler.ParsePluginConfigYAML([]byte(tt.yaml))
		if err == nil {
			_, err = NewProfile(cfg)
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q:\n got  %v\n want %s", tt.yaml, err, tt.want)
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

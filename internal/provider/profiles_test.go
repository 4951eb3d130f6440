package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// ratioYAML and ratioBlock set MemoryOvercommit's ratio in one layer, as YAML or as a block.
func ratioYAML(r string) string {
	return `plugin_config_yaml = "filters: {MemoryOvercommit: {config: {ratio: ` + r + `}}}"`
}

func ratioBlock(r string) string {
	return `plugin_config {
	  filter {
	    name = "MemoryOvercommit"
	    args = { ratio = "` + r + `" }
	  }
	}`
}

// Each layer sets MemoryOvercommit's ratio to its rank; a VM of 7x a node's memory fails
// everywhere, and the error's group phrase names the ratio in force: the latest layer's.
func TestAccProfileLayering(t *testing.T) {
	profile := func(yaml, block bool) string {
		out := "profile {\n  name = \"layers\"\n"
		if yaml {
			out += ratioYAML("3") + "\n"
		}
		if block {
			out += ratioBlock("4") + "\n"
		}
		return out + "}\n"
	}
	provider := ratioYAML("1") + "\n" + ratioBlock("2") + "\n"
	tests := []struct {
		name, provider, body string
		ratio                string
	}{
		{"object blocks win", provider + profile(true, true), `profile = "layers"` + "\n" + ratioYAML("5") + "\n" + ratioBlock("6"), "6"},
		{"object YAML beats the profile", provider + profile(true, true), `profile = "layers"` + "\n" + ratioYAML("5"), "5"},
		{"profile blocks beat profile YAML", provider + profile(true, true), `profile = "layers"`, "4"},
		{"profile YAML beats the provider", provider + profile(true, false), `profile = "layers"`, "3"},
		{"no profile named: provider blocks", provider + profile(true, true), ``, "2"},
		{"profile default: provider blocks", provider + profile(true, true), `profile = "default"`, "2"},
		{"provider YAML alone", ratioYAML("1") + "\n" + profile(false, true), ``, "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			placementFailsOnLab(t, tt.provider, "name = \"big\"\nmemory = 114688\n"+tt.body,
				wrapped(`0/4 nodes are available: 3 node\(s\) exceeded memory overcommit ratio `+tt.ratio+`, 1 node\(s\) were offline`))
		})
	}
}

// A CAPPX user's plugin-config.yaml, verbatim, is a whole profile; the summary says which
// profile decided, and objects without a profile keep the provider's behaviour.
func TestAccProfileFromReferenceYAML(t *testing.T) {
	env := newAccEnv(t, labCluster())
	env.needsSim(t)
	provider := `profile {
	  name = "cappx"
	  plugin_config_yaml = <<-EOT
	    filters:
	      CPUOvercommit:
	        enable: false
	      MemoryOvercommit:
	        enable: false
	  EOT
	}`
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders,
		Steps: []resource.TestStep{{
			Config: env.providerBlock(provider) + placement(`name = "web"
				memory = 20000
				profile = "cappx"`) + `data "qemuscheduler_placement" "plain" {
				  name = "small"
				}`,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(ds, "node", "pve2"),
				resource.TestCheckResourceAttr(ds, "candidates.0.feasible", "true"),
				resource.TestCheckResourceAttr(ds, "summary", "web: pve2 (score 86.56; 3/4 nodes feasible), vmid 101 (next free id), storage ceph, profile cappx"),
				resource.TestCheckResourceAttr("data.qemuscheduler_placement.plain", "summary", "small: pve2 (score 86.56; 3/4 nodes feasible), vmid 101 (next free id), storage ceph"),
			),
		}},
	})
}

func TestAccProfileErrors(t *testing.T) {
	tests := []struct {
		name, provider, body string
		want                 string
	}{
		{"unknown profile, none defined", "", `profile = "packing"`,
			`profile "packing" is not defined in the provider; defined profiles: default.`},
		{"unknown profile lists the defined ones", "profile {\n name = \"spread\"\n}\nprofile {\n name = \"pack\"\n}", `profile = "packing"`,
			`profile "packing" is not defined in the provider; defined profiles: default, pack, spread.`},
		{"default is reserved", "profile {\n name = \"default\"\n}", ``, `"default" is reserved: it means no profile`},
		{"name syntax", "profile {\n name = \"Packing\"\n}", ``, `profile name "Packing" must match [a-z0-9-]+`},
		{"duplicate name", "profile {\n name = \"pack\"\n}\nprofile {\n name = \"pack\"\n}", ``, `profile "pack" is defined twice (profile blocks 0 and 1)`},
		{"profile YAML mistake", "profile {\n name = \"pack\"\n plugin_config_yaml = \"scores: {MostAlocated: {}}\"\n}", ``,
			`unknown score plugin "MostAlocated"`},
		{"profile block mistake", "profile {\n name = \"pack\"\n" + ratioBlock("-1") + "\n}", ``,
			`arg ratio must be a positive number, got "-1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			placementFailsOnLab(t, tt.provider, "name = \"web\"\n"+tt.body, wrapped(regexp.QuoteMeta(tt.want)))
		})
	}
}

package provider

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
)

// TestAccPlacementNodePolicy places through HCL on policyCluster with policyProvider: pve1
// labelled by a block over its Notes (one malformed line), pve2 in HA maintenance, pve3 a
// tainted GPU node, pve4 offline.
func TestAccPlacementNodePolicy(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		attrs map[string]string
	}{
		{"maintenance and untolerated taints avoided", `name = "web"`, map[string]string{"node": "pve1",
			"candidates.1.reasons.0": "TaintToleration: untolerated taint node.qemu-scheduler/maintenance:NoSchedule",
			"candidates.2.reasons.0": "TaintToleration: untolerated taint gpu=a100:NoSchedule"}},
		{"maintenance tolerated", `name = "web"
			toleration {
			  key      = "node.qemu-scheduler/maintenance"
			  operator = "Exists"
			}`, map[string]string{"node": "pve2"}},
		{"the GPU node takes the tolerating VM", `name = "ml"
			node_selector = { gpu = "a100" }
			toleration {
			  key    = "gpu"
			  value  = "a100"
			  effect = "NoSchedule"
			}`, map[string]string{"node": "pve3", "candidates.0.reasons.0": "NodeSelector: no label gpu, node_selector gpu=a100"}},
		{"a Notes label selects", `name = "web"
			node_selector = { disk = "nvme" }`, map[string]string{"node": "pve1"}},
		{"the block wins over the Notes", `name = "web"
			node_selector = { zone = "z1" }`, map[string]string{"node": "pve1"}},
		{"built-in name label and required affinity", `name = "web"
			node_affinity {
			  key      = "node.qemu-scheduler/name"
			  operator = "NotIn"
			  values   = ["pve1"]
			}
			toleration { operator = "Exists" }`, map[string]string{"node": "pve2",
			"candidates.0.reasons.0": "NodeSelector: label node.qemu-scheduler/name=pve1, node_affinity node.qemu-scheduler/name NotIn [pve1]"}},
	}
	env, _ := simEnv(t, policyCluster()) // read-only cases share one cluster
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { placementChecks(t, env, policyProvider, tt.body, tt.attrs) })
	}
}

func TestAccPlacementNodePolicyUnschedulable(t *testing.T) {
	env, _ := simEnv(t, policyCluster())
	placementFails(t, env, policyProvider, `name = "ml"
		node_selector = { gpu = "a100" }`,
		regexp.MustCompile(strings.ReplaceAll(`0/4 nodes are available: 2 node\(s\) didn't match node selector gpu=a100, 1 node\(s\) had untolerated taint gpu=a100, 1 node\(s\) were offline`, " ", `\s+`)))
}

// A preference decides between otherwise equal nodes, whatever the VM's name (the tie-break).
func TestAccPlacementPreferredAffinity(t *testing.T) {
	env, _ := simEnv(t, equalCluster())
	provider := `node {
    name   = "pve2"
    labels = { disk = "nvme" }
  }`
	var configs string
	for _, name := range []string{"a", "b", "c", "d"} {
		configs += fmt.Sprintf(`data "qemuscheduler_placement" %q {
  name = %q
  node_affinity {
    key      = "disk"
    operator = "In"
    values   = ["nvme"]
    weight   = 40
  }
}
`, name, name)
	}
	var checks []resource.TestCheckFunc
	for _, name := range []string{"a", "b", "c", "d"} {
		checks = append(checks, resource.TestCheckResourceAttr("data.qemuscheduler_placement."+name, "node", "pve2"),
			resource.TestCheckResourceAttr("data.qemuscheduler_placement."+name, "candidates.1.scores.NodeAffinity", "100"))
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders,
		Steps:                    []resource.TestStep{{Config: env.providerBlock(provider) + configs, Check: resource.ComposeAggregateTestCheckFunc(checks...)}},
	})
}

// Every bad node policy input is a plan error on its attribute.
func TestAccPlacementNodePolicyErrors(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"selector key", `node_selector = { "a b" = "x" }`, `Invalid node_selector key[\s\S]*key "a b"`},
		{"selector value", `node_selector = { zone = "a/b" }`, `Invalid node_selector value[\s\S]*value "a/b"`},
		{"operator", "node_affinity {\n key = \"zone\"\n operator = \"in\"\n values = [\"a\"]\n}", `Invalid node_affinity operator[\s\S]*unknown operator "in"; use one of In, NotIn, Exists,\s+DoesNotExist, Gt, Lt`},
		{"In without values", "node_affinity {\n key = \"zone\"\n operator = \"In\"\n}", `Invalid node_affinity values[\s\S]*operator In needs at least one value`},
		{"Exists with values", "node_affinity {\n key = \"gpu\"\n operator = \"Exists\"\n values = [\"x\"]\n}", `Invalid node_affinity values[\s\S]*operator Exists takes no values`},
		{"Gt not an integer", "node_affinity {\n key = \"cores\"\n operator = \"Gt\"\n values = [\"8.5\"]\n}", `Invalid node_affinity values[\s\S]*operator Gt needs an integer value, got "8.5"`},
		{"Lt two values", "node_affinity {\n key = \"cores\"\n operator = \"Lt\"\n values = [\"1\", \"2\"]\n}", `operator Lt needs exactly one integer value, got 2 values`},
		{"weight 0", "node_affinity {\n key = \"gpu\"\n operator = \"Exists\"\n weight = 0\n}", `Invalid node_affinity weight[\s\S]*weight must be 1..100 for a preference, got 0; remove weight`},
		{"weight 101", "node_affinity {\n key = \"gpu\"\n operator = \"Exists\"\n weight = 101\n}", `weight must be 1..100 for a preference, got 101`},
		{"affinity key", "node_affinity {\n key = \"-gpu\"\n operator = \"Exists\"\n}", `Invalid node_affinity key[\s\S]*key "-gpu"`},
		{"toleration operator", "toleration {\n key = \"gpu\"\n operator = \"Gt\"\n}", `Invalid toleration operator[\s\S]*unknown operator "Gt"; use "Equal" or "Exists"`},
		{"Exists with a value", "toleration {\n key = \"gpu\"\n operator = \"Exists\"\n value = \"a\"\n}", `Invalid toleration value[\s\S]*operator "Exists" takes no value`},
		{"empty key with Equal", "toleration {\n value = \"a\"\n}", `Invalid toleration operator[\s\S]*an empty key tolerates every taint only with operator "Exists"`},
		{"effect", "toleration {\n key = \"gpu\"\n effect = \"Never\"\n}", `Invalid toleration effect[\s\S]*unknown effect "Never"`},
		{"toleration key", "toleration {\n key = \"a b\"\n operator = \"Exists\"\n}", `Invalid toleration key[\s\S]*key "a b"`},
		// Said on the block (its source line shows), not on the data source.
		{"empty node_affinity", "node_affinity {}", `Invalid node_affinity[\s\S]*\d+:\s+node_affinity \{\}[\s\S]*a\s+node_affinity\s+needs\s+an\s+expression`},
		{"key without operator", "node_affinity {\n key = \"gpu\"\n}", `Invalid node_affinity[\s\S]*\d+:\s+node_affinity \{[\s\S]*an\s+expression\s+needs\s+both\s+key\s+and\s+operator`},
		{"terms and an own expression", "node_affinity {\n key = \"gpu\"\n operator = \"Exists\"\n node_selector_term {\n match_expressions {\n key = \"zone\"\n operator = \"Exists\"\n }\n }\n}",
			`Invalid node_affinity[\s\S]*\d+:\s+node_selector_term \{[\s\S]*node_selector_term\s+blocks\s+give\s+the\s+terms\s+of\s+this\s+node_affinity`},
		{"a preference of two terms", "node_affinity {\n weight = 10\n node_selector_term {\n match_expressions {\n key = \"zone\"\n operator = \"Exists\"\n }\n }\n node_selector_term {\n match_expressions {\n key = \"gpu\"\n operator = \"Exists\"\n }\n }\n}",
			`a\s+preference\s+\(weight\)\s+takes\s+one\s+term`},
		{"empty node_selector_term", "node_affinity {\n node_selector_term {}\n}", `a\s+node_selector_term\s+needs\s+at\s+least\s+one\s+match_expressions\s+block`},
		{"match_expressions values", "node_affinity {\n match_expressions {\n key = \"zone\"\n operator = \"In\"\n }\n}",
			`Invalid node_affinity values[\s\S]*match_expressions {[\s\S]*operator In needs at least one value`},
	}
	env, _ := simEnv(t, labCluster()) // read-only cases share one cluster
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			placementFails(t, env, "", "name = \"web\"\n"+tt.body, regexp.MustCompile(tt.want))
		})
	}
}

// A VM tolerating the GPU taint is created on the GPU node, a second plan is empty, and when
// its toleration goes the VM stays where it is: the plan warns and updates in place.
func TestAccVMNodePolicy(t *testing.T) {
	env := newAccEnv(t, policyCluster())
	sim := env.needsSim(t)
	vm := func(toleration string) string {
		return env.providerBlock(policyProvider) + fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name          = "ml-1"
  memory        = 1024
  node_selector = { gpu = "a100" }
  %s
}`, toleration)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders,
		Steps: []resource.TestStep{{
			Config: vm("toleration {\n    key      = \"gpu\"\n    operator = \"Exists\"\n  }"),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(vmAddr, "node", "pve3"),
				guestCheck(sim, expectConfig(map[string]string{"memory": "1024"})),
			),
		}, {
			Config: vm(""),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
			}},
			Check: resource.TestCheckResourceAttr(vmAddr, "node", "pve3"),
		}},
	})
}

// Sticky placement re-checks the node policy: an existing VM is answered where it runs, and
// when its node no longer passes it stays there with the violation listed, until
// move_existing = "violations" moves it, keeping its VMID.
func TestAccPlacementStickyNodePolicy(t *testing.T) {
	env, _ := simEnv(t, policyCluster())
	env.createVM(t, "pve1", 300, map[string]string{"name": "web-x", "memory": "512"})
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders,
		Steps: []resource.TestStep{{
			Config: env.providerBlock(policyProvider) + placement(`name = "web-x"
				node_selector = { zone = "z1" }`),
			Check: resource.ComposeAggregateTestCheckFunc(resource.TestCheckResourceAttr(ds, "node", "pve1"),
				resource.TestCheckResourceAttr(ds, "violations.#", "0")),
		}, {
			Config: env.providerBlock(policyProvider) + placement(`name = "web-x"
				node_selector = { zone = "z3" }
				toleration {
				  key      = "gpu"
				  operator = "Exists"
				}`),
			Check: resource.ComposeAggregateTestCheckFunc(resource.TestCheckResourceAttr(ds, "node", "pve1"),
				resource.TestCheckResourceAttr(ds, "vmid", "300"), resource.TestCheckResourceAttr(ds, "violations.#", "1"),
				resource.TestCheckResourceAttr(ds, "violations.0.name", "web-x"), resource.TestCheckResourceAttr(ds, "violations.0.rule", "NodeSelector")),
		}, {
			Config: env.providerBlock(policyProvider) + placement(`name = "web-x"
				move_existing = "violations"
				node_selector = { zone = "z3" }
				toleration {
				  key      = "gpu"
				  operator = "Exists"
				}`),
			Check: resource.ComposeAggregateTestCheckFunc(resource.TestCheckResourceAttr(ds, "node", "pve3"),
				resource.TestCheckResourceAttr(ds, "vmid", "300"), resource.TestCheckResourceAttr(ds, "violations.#", "0")),
		}},
	})
}

// HA maintenance switched on under a VM (ha-manager crm-command node-maintenance enable): the
// VM stays (the plan only warns, it is empty), the node shows maintenance and its taint, and
// a new decision avoids it.
func TestAccVMMaintenanceKeepsTheVM(t *testing.T) {
	env := newAccEnv(t, labCluster())
	sim := env.needsSim(t)
	config := env.config(`resource "qemuscheduler_vm" "web" {
  name          = "web-1"
  memory        = 1024
  node_selector = { "node.qemu-scheduler/name" = "pve3" }
}
data "qemuscheduler_nodes" "n" { names_regex = "pve3" }
data "qemuscheduler_placement" "p" {
  name       = "next"
  depends_on = [qemuscheduler_vm.web]
}`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders,
		Steps: []resource.TestStep{{
			Config: config,
			Check: resource.ComposeAggregateTestCheckFunc(resource.TestCheckResourceAttr(vmAddr, "node", "pve3"),
				resource.TestCheckResourceAttr("data.qemuscheduler_nodes.n", "nodes.0.maintenance", "false")),
		}, {
			PreConfig: func() { must(t, sim.SetNodeHAState("pve3", "maintenance")) },
			Config:    config,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(vmAddr, "node", "pve3"),
				guestCheck(sim, expectConfig(map[string]string{"memory": "1024"})),
				resource.TestCheckResourceAttr("data.qemuscheduler_nodes.n", "nodes.0.maintenance", "true"),
				resource.TestCheckResourceAttr("data.qemuscheduler_nodes.n", "nodes.0.taints.0", "node.qemu-scheduler/maintenance:NoSchedule"),
				resource.TestCheckResourceAttr(ds, "candidates.2.reasons.0", "TaintToleration: untolerated taint node.qemu-scheduler/maintenance:NoSchedule"),
			),
		}},
	})
}

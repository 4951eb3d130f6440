package provider

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// kubeCluster is four equal empty nodes with guests of the given tags ("pve2:foo" puts one
// guest tagged foo on pve2), ids from 100.
func kubeCluster(guests ...string) pvesim.Cluster {
	c := pvesim.Cluster{Storages: []pvesim.StorageSpec{{Name: "local-lvm", Content: []string{"images"}, SizeGiB: 500}}}
	for i := 1; i <= 4; i++ {
		c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: fmt.Sprintf("pve%d", i), CPUs: 16, MemoryGiB: 64})
	}
	for i, g := range guests {
		node, tags, _ := strings.Cut(g, ":")
		c.Guests = append(c.Guests, runningGuest(100+i, node, fmt.Sprintf("g%d", 100+i), strings.Split(tags, ",")...))
	}
	return c
}

// providerNodeBlocks gives nodes labels (and taints) through the provider's node blocks.
func providerNodeBlocks(nodes map[string]string) string {
	var blocks []string
	for node, body := range nodes {
		blocks = append(blocks, fmt.Sprintf("node {\n  name = %q\n  %s\n}", node, body))
	}
	sort.Strings(blocks)
	return strings.Join(blocks, "\n")
}

// avoidNode is a required node_affinity that keeps a VM off node, by its built-in name label.
func avoidNode(node string) string {
	return fmt.Sprintf(`node_affinity {
    key      = "node.qemu-scheduler/name"
    operator = "NotIn"
    values   = [%q]
  }`, node)
}

// spreadPlacement is a placement data source, labelled and named name, for a VM tagged tag that
// spreads its own group: extra stands before the topology_spread block, spread inside it.
func spreadPlacement(name, tag, extra, spread string) string {
	return fmt.Sprintf(`data "qemuscheduler_placement" %q {
  name = %q
  tags = [%q]
  %s
  topology_spread {
    tags = [%q]
    %s
  }
}
`, name, name, tag, extra, tag, spread)
}

// checkPlacements checks attributes of several placement data sources, by name.
func checkPlacements(want map[string]map[string]string) resource.TestCheckFunc {
	var checks []resource.TestCheckFunc
	for name, attrs := range want {
		for k, v := range attrs {
			checks = append(checks, resource.TestCheckResourceAttr("data.qemuscheduler_placement."+name, k, v))
		}
	}
	return resource.ComposeAggregateTestCheckFunc(checks...)
}

// Kube's "incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits" through
// Terraform: pve2's members do not count for a VM that may not use pve2, so zone1 is the
// emptier zone and the VM lands on pve1; with node_affinity_policy = "Ignore" they count again
// and zone1 is the fuller one. min_domains (kube's "pods spread across nodes as 2/2/1, maxSkew
// is 2, and the number of domains < minDomains, then the third node fits"): with three eligible
// nodes and min_domains 4 the minimum is 0, so only the node holding one member fits.
func TestAccKubeSpreadCountsEligibleNodesOnly(t *testing.T) {
	// Each data source has a group of its own (foo and foo2, bar and bar2 lie alike): a
	// placement at plan time stands for its VM in the later ones of the same process.
	env := newAccEnv(t, kubeCluster("pve2:foo", "pve2:foo", "pve4:foo", "pve2:foo2", "pve2:foo2", "pve4:foo2",
		"pve1:bar", "pve1:bar", "pve2:bar", "pve2:bar", "pve3:bar", "pve1:bar2", "pve1:bar2", "pve2:bar2", "pve2:bar2", "pve3:bar2"))
	env.needsSim(t)
	zones := providerNodeBlocks(map[string]string{"pve1": `labels = { zone = "zone1" }`, "pve2": `labels = { zone = "zone1" }`,
		"pve3": `labels = { zone = "zone2" }`, "pve4": `labels = { zone = "zone2" }`})
	spread := func(name, tag, policy string) string {
		return spreadPlacement(name, tag, avoidNode("pve2"), "topology_key = \"zone\"\n    "+policy)
	}
	minDomains := func(name, tag, extra string) string {
		return spreadPlacement(name, tag, avoidNode("pve4"), "max_skew = 2\n    "+extra)
	}
	runParallel(t, resource.TestStep{
		Config: env.providerBlock(zones) + spread("honor", "foo", "") + spread("ignore", "foo2", `node_affinity_policy = "Ignore"`) +
			minDomains("min4", "bar", "min_domains = 4") + minDomains("unset", "bar2", ""),
		Check: checkPlacements(map[string]map[string]string{
			"honor": {"node": "pve1", "candidates.2.reasons.0": "TopologySpread: zone=zone2 would hold 2 of [foo], min 0, skew 2 > 1"},
			"ignore": {"candidates.0.feasible": "false", "candidates.2.feasible": "true",
				"candidates.0.reasons.0": "TopologySpread: zone=zone1 would hold 3 of [foo2], min 1, skew 2 > 1"},
			"min4": {"node": "pve3", "candidates.0.reasons.0": "TopologySpread: pve1 would hold 3 of [bar], min 0 (3 eligible domains, fewer than min_domains 4), skew 3 > 2",
				"candidates.1.reasons.0": "TopologySpread: pve2 would hold 3 of [bar], min 0 (3 eligible domains, fewer than min_domains 4), skew 3 > 2"},
			"unset": {"candidates.0.feasible": "true", "candidates.1.feasible": "true", "candidates.2.feasible": "true"},
		}),
	})
}

// node_taints_policy: pve4's members count for zone2 only under "Ignore" (kube's default); under
// "Honor" (ours) the tainted node is not eligible, so zone2 holds none and takes the VM.
func TestAccKubeSpreadTaintsPolicy(t *testing.T) {
	env, _ := simEnv(t, kubeCluster("pve2:foo", "pve4:foo", "pve4:foo", "pve2:foo2", "pve4:foo2", "pve4:foo2"))
	nodes := providerNodeBlocks(map[string]string{"pve1": `labels = { zone = "zone1" }`, "pve2": `labels = { zone = "zone1" }`,
		"pve3": `labels = { zone = "zone2" }`, "pve4": "labels = { zone = \"zone2\" }\n  taints = [\"maint:NoSchedule\"]"})
	spread := func(name, tag, policy string) string {
		return spreadPlacement(name, tag, "", fmt.Sprintf("topology_key = \"zone\"\n    node_taints_policy = %q", policy))
	}
	runParallel(t, resource.TestStep{
		Config: env.providerBlock(nodes) + spread("honor", "foo", "Honor") + spread("ignore", "foo2", "Ignore"),
		Check: checkPlacements(map[string]map[string]string{
			"honor": {"node": "pve3", "candidates.0.reasons.0": "TopologySpread: zone=zone1 would hold 2 of [foo], min 0, skew 2 > 1"},
			"ignore": {"candidates.0.feasible": "true", "candidates.1.feasible": "true",
				"candidates.2.reasons.0": "TopologySpread: zone=zone2 would hold 3 of [foo2], min 1, skew 2 > 1"},
		}),
	})
}

// Node affinity terms ORed, expressions ANDed, as kube's nodeSelectorTerms and matchExpressions;
// a preference of two expressions; a block's own expression ANDed with its match_expressions.
func TestAccKubeNodeAffinityTerms(t *testing.T) {
	env, _ := simEnv(t, kubeCluster())
	nodes := providerNodeBlocks(map[string]string{"pve1": `labels = { zone = "a", gpu = "x" }`, "pve2": `labels = { zone = "a" }`,
		"pve3": `labels = { zone = "b" }`, "pve4": `labels = { zone = "c" }`})
	runParallel(t, resource.TestStep{
		Config: env.providerBlock(nodes) + `
data "qemuscheduler_placement" "terms" {
  name = "terms"
  node_affinity {
    node_selector_term {
      match_expressions {
        key      = "zone"
        operator = "In"
        values   = ["a"]
      }
      match_expressions {
        key      = "gpu"
        operator = "Exists"
      }
    }
    node_selector_term {
      match_expressions {
        key      = "zone"
        operator = "In"
        values   = ["c"]
      }
    }
  }
}
data "qemuscheduler_placement" "preferred" {
  name = "preferred"
  node_affinity {
    weight = 50
    match_expressions {
      key      = "zone"
      operator = "In"
      values   = ["a"]
    }
    match_expressions {
      key      = "gpu"
      operator = "DoesNotExist"
    }
  }
}
data "qemuscheduler_placement" "mixed" {
  name = "mixed"
  node_affinity {
    key      = "zone"
    operator = "In"
    values   = ["a", "b"]
    match_expressions {
      key      = "gpu"
      operator = "DoesNotExist"
    }
  }
}
`,
		Check: checkPlacements(map[string]map[string]string{
			"terms": {"candidates.0.feasible": "true", "candidates.3.feasible": "true",
				"candidates.1.reasons.0": "NodeSelector: label zone=a, no label gpu, node_affinity zone In [a] and gpu Exists or zone In [c]",
				"candidates.2.reasons.0": "NodeSelector: label zone=b, no label gpu, node_affinity zone In [a] and gpu Exists or zone In [c]"},
			"preferred": {"node": "pve2", "candidates.1.scores.NodeAffinity": "100", "candidates.0.scores.NodeAffinity": "0",
				"candidates.2.scores.NodeAffinity": "0"},
			"mixed": {"candidates.1.feasible": "true", "candidates.2.feasible": "true", "candidates.3.feasible": "false",
				"candidates.0.reasons.0": "NodeSelector: label zone=a, label gpu=x, node_affinity zone In [a b] and gpu DoesNotExist"},
		}),
	})
}

// Group selectors beyond "carries all these tags": any of several tags (kube's multi-value In)
// and none of some (NotIn, DoesNotExist), for anti-affinity and affinity (the spread's is
// below). pve3's guest carries web but also old, so it is in no group that excludes old.
func TestAccKubeVMGroupSelectors(t *testing.T) {
	env, _ := simEnv(t, kubeCluster("pve1:web", "pve2:api", "pve3:web,old"))
	runParallel(t, resource.TestStep{
		Config: env.providerBlock("") + `
data "qemuscheduler_placement" "anti" {
  name = "anti"
  ` + avoidNode("pve4") + `
  vm_anti_affinity {
    tags_any_of  = ["web", "api"]
    tags_none_of = ["old"]
  }
}
data "qemuscheduler_placement" "affinity" {
  name = "affinity"
  vm_affinity {
    tags         = ["web"]
    tags_none_of = ["old"]
  }
}
data "qemuscheduler_placement" "affinity_any" {
  name = "affinity-any"
  vm_affinity {
    tags_any_of = ["api", "db"]
  }
}
`,
		Check: checkPlacements(map[string]map[string]string{
			"anti": {"node": "pve3", "candidates.0.reasons.0": "VMAntiAffinity: pve1 already runs 1 guest tagged any of [web api] none of [old]: 100",
				"candidates.1.reasons.0": "VMAntiAffinity: pve2 already runs 1 guest tagged any of [web api] none of [old]: 101"},
			"affinity":     {"node": "pve1", "candidates.2.reasons.0": "VMAffinity: pve3 runs no guest tagged [web] none of [old] (1 guest elsewhere)"},
			"affinity_any": {"node": "pve2", "candidates.0.reasons.0": "VMAffinity: pve1 runs no guest tagged any of [api db] (1 guest elsewhere)"},
		}),
	})
}

// The same selector for a spread, on a cluster of its own: a placement at plan time stands
// for its VM, with its anti-affinity, in the later data sources of the same process.
func TestAccKubeSpreadSelector(t *testing.T) {
	env, _ := simEnv(t, kubeCluster("pve1:web", "pve2:api", "pve3:web,old"))
	runParallel(t, resource.TestStep{
		Config: env.providerBlock("") + `
data "qemuscheduler_placement" "spread" {
  name = "spread"
  tags = ["web"]
  ` + avoidNode("pve4") + `
  topology_spread {
    tags_any_of  = ["web", "api"]
    tags_none_of = ["old"]
  }
}
`,
		Check: checkPlacements(map[string]map[string]string{
			"spread": {"node": "pve3", "candidates.0.reasons.0": "TopologySpread: pve1 would hold 2 of any of [web api] none of [old], min 0, skew 2 > 1"},
		}),
	})
}

// The placement record keeps the kube forms: node affinity terms, group selectors, spread
// policies and min_domains, written at create and read back by import.
func TestAccVMPlacementRecordKubeForms(t *testing.T) {
	env, sim := simEnv(t, equalCluster())
	config := env.config(`resource "qemuscheduler_vm" "web" {
  name = "web-1"
  tags = ["web"]
  node_affinity {
    node_selector_term {
      match_expressions {
        key      = "node.qemu-scheduler/name"
        operator = "In"
        values   = ["pve1", "pve2"]
      }
      match_expressions {
        key      = "node.qemu-scheduler/arch"
        operator = "DoesNotExist"
      }
    }
    node_selector_term {
      match_expressions {
        key      = "node.qemu-scheduler/name"
        operator = "In"
        values   = ["pve3"]
      }
    }
  }
  vm_anti_affinity {
    tags_any_of  = ["web", "api"]
    tags_none_of = ["canary"]
  }
  topology_spread {
    tags               = ["web"]
    min_domains        = 3
    node_taints_policy = "Ignore"
  }
}`)
	runSteps(t,
		resource.TestStep{Config: config, Check: recordIn(sim, "",
			"qemu-scheduler/node-affinity: key=node.qemu-scheduler/name operator=In values=pve1,pve2 & key=node.qemu-scheduler/arch operator=DoesNotExist | key=node.qemu-scheduler/name operator=In values=pve3",
			"qemu-scheduler/vm-anti-affinity: tags_any_of=web,api tags_none_of=canary topology_key=node",
			"qemu-scheduler/topology-spread: tags=web topology_key=node max_skew=1 when_unsatisfiable=DoNotSchedule min_domains=3 node_taints_policy=Ignore")},
		resource.TestStep{Config: config, ResourceName: vmAddr, ImportState: true, ImportStateId: "100", ImportStateCheck: func(is []*terraform.InstanceState) error {
			a := is[0].Attributes
			for k, v := range map[string]string{"node_affinity.0.node_selector_term.#": "2",
				"node_affinity.0.node_selector_term.0.match_expressions.1.operator": "DoesNotExist",
				"vm_anti_affinity.0.tags_any_of.1":                                  "api", "vm_anti_affinity.0.tags_none_of.0": "canary",
				"topology_spread.0.min_domains": "3", "topology_spread.0.node_taints_policy": "Ignore"} {
				if a[k] != v {
					return fmt.Errorf("imported %s = %q, want %q", k, a[k], v)
				}
			}
			return nil
		}},
	)
}

// A node affinity written as one node_selector_term, or as match_expressions blocks alone,
// imports in the same form, so that the configuration plans no change after an import: the
// record keeps the form (form=...), ImportStateVerify compares the import with the created
// state, and an import block on the forgotten VM plans no change and leaves an empty plan.
func TestAccVMImportKeepsNodeAffinityForm(t *testing.T) {
	env, sim := simEnv(t, equalCluster())
	const vm = `resource "qemuscheduler_vm" "web" {
  name = "web-1"
  node_affinity {
    node_selector_term {
      match_expressions {
        key      = "node.qemu-scheduler/name"
        operator = "In"
        values   = ["pve1", "pve2"]
      }
    }
  }
  node_affinity {
    weight = 10
    match_expressions {
      key      = "node.qemu-scheduler/name"
      operator = "In"
      values   = ["pve2"]
    }
  }
}`
	config := env.config(vm)
	runSteps(t,
		resource.TestStep{Config: config, Check: resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, "node", "pve2"),
			recordIn(sim, "",
				"qemu-scheduler/node-affinity: key=node.qemu-scheduler/name operator=In values=pve1,pve2 form=node_selector_term",
				"qemu-scheduler/node-affinity: key=node.qemu-scheduler/name operator=In values=pve2 form=match_expressions weight=10"))},
		resource.TestStep{Config: config, ResourceName: vmAddr, ImportState: true, ImportStateId: "100", ImportStateVerify: true,
			ImportStateVerifyIgnore: []string{"annotations", "placement_summary", "storage", "cloud_init", "timeouts", "%"}},
		resource.TestStep{Config: env.config(`removed {
  from = qemuscheduler_vm.web
  lifecycle {
    destroy = false
  }
}`)},
		resource.TestStep{Config: env.config(vm + `
import {
  to = qemuscheduler_vm.web
  id = "100"
}`), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionNoop)}},
			Check: resource.TestCheckResourceAttr(vmAddr, "node_affinity.0.node_selector_term.0.match_expressions.0.values.1", "pve2")},
		resource.TestStep{Config: config, PlanOnly: true},
	)
}

// The spread score rounds each node's raw score before it normalises, as kube: its "two
// Constraints on zone and node, with different labelSelectors" case scores 60, 20, 100, 60,
// node-a and node-y tied (the fractions would rank them apart).
func TestAccKubeSpreadScoreRounds(t *testing.T) {
	env, _ := simEnv(t, kubeCluster("pve1:foo", "pve2:foo,bar", "pve4:foo", "pve4:bar"))
	zones := providerNodeBlocks(map[string]string{"pve1": `labels = { zone = "zone1" }`, "pve2": `labels = { zone = "zone1" }`,
		"pve3": `labels = { zone = "zone2" }`, "pve4": `labels = { zone = "zone2" }`})
	runParallel(t, resource.TestStep{
		Config: env.providerBlock(zones) + `
data "qemuscheduler_placement" "p" {
  name = "p"
  tags = ["foo", "bar"]
  topology_spread {
    tags               = ["foo"]
    topology_key       = "zone"
    when_unsatisfiable = "ScheduleAnyway"
  }
  topology_spread {
    tags               = ["bar"]
    when_unsatisfiable = "ScheduleAnyway"
  }
}
`,
		Check: checkPlacements(map[string]map[string]string{"p": {"node": "pve3",
			"candidates.0.scores.TopologySpread": "60", "candidates.1.scores.TopologySpread": "20",
			"candidates.2.scores.TopologySpread": "100", "candidates.3.scores.TopologySpread": "60"}}),
	})
}

// The taint score with nothing to count gives every node 100, as kube's (its "the nodes that
// all of their taints are tolerated by the pod, get the same score, no matter how many
// tolerable taints a node has"): the VM tolerating pve2's PreferNoSchedule taint scores 100
// everywhere. Without the toleration, kube's "Default behaviour No taints and tolerations,
// lands on node with no taints": pve2 scores 0, the others 100.
func TestAccKubeTaintScoreNothingToCount(t *testing.T) {
	env, _ := simEnv(t, kubeCluster())
	nodes := providerNodeBlocks(map[string]string{"pve2": `taints = ["old-hw:PreferNoSchedule"]`})
	runParallel(t, resource.TestStep{
		Config: env.providerBlock(nodes) + `
data "qemuscheduler_placement" "tolerated" {
  name = "tolerated"
  toleration {
    key      = "old-hw"
    operator = "Exists"
  }
}
data "qemuscheduler_placement" "untolerated" {
  name = "untolerated"
}
`,
		Check: checkPlacements(map[string]map[string]string{
			"tolerated": {"candidates.0.scores.TaintToleration": "100", "candidates.1.scores.TaintToleration": "100",
				"candidates.2.scores.TaintToleration": "100", "candidates.3.scores.TaintToleration": "100"},
			"untolerated": {"candidates.0.scores.TaintToleration": "100", "candidates.1.scores.TaintToleration": "0",
				"candidates.2.scores.TaintToleration": "100", "candidates.3.scores.TaintToleration": "100"},
		}),
	})
}

// The spread score counts only members on eligible nodes too, as kube's "NodeAffinityPolicy
// honoed with nodeAffinity" and "... ignored with nodeAffinity" score cases, here by zone
// through the whole pipeline: pve2's two members do not count for a VM that may not use pve2,
// so zone1 (pve1) is the emptier zone and scores 100; with node_affinity_policy = "Ignore"
// they count, zone1 holds 2 to zone2's 1, and the scores turn round.
func TestAccKubeSpreadScoreCountsEligibleNodesOnly(t *testing.T) {
	env, _ := simEnv(t, kubeCluster("pve2:foo", "pve2:foo", "pve4:foo", "pve2:foo2", "pve2:foo2", "pve4:foo2"))
	zones := providerNodeBlocks(map[string]string{"pve1": `labels = { zone = "zone1" }`, "pve2": `labels = { zone = "zone1" }`,
		"pve3": `labels = { zone = "zone2" }`, "pve4": `labels = { zone = "zone2" }`})
	spread := func(name, tag, policy string) string {
		return spreadPlacement(name, tag, avoidNode("pve2"), "topology_key = \"zone\"\n    when_unsatisfiable = \"ScheduleAnyway\"\n    "+policy)
	}
	runParallel(t, resource.TestStep{
		Config: env.providerBlock(zones) + spread("honor", "foo", "") + spread("ignore", "foo2", `node_affinity_policy = "Ignore"`),
		Check: checkPlacements(map[string]map[string]string{
			"honor": {"node": "pve1", "candidates.0.scores.TopologySpread": "100", "candidates.2.scores.TopologySpread": "0",
				"candidates.3.scores.TopologySpread": "0"},
			"ignore": {"candidates.0.scores.TopologySpread": "33", "candidates.2.scores.TopologySpread": "100",
				"candidates.3.scores.TopologySpread": "100"},
		}),
	})
}

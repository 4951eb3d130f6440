package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// rackCluster is the trial: PVE 9, six nodes in three racks (pve1-2 r1, pve3-4 r2,
// pve5-6 r3) labelled in their Notes, no HA rule yet.
func rackCluster() pvesim.Cluster {
	c := haRulesCluster()
	c.Nodes = nil
	for i := range 6 {
		c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: fmt.Sprintf("pve%d", i+1), CPUs: 8, MemoryGiB: 16,
			Notes: fmt.Sprintf("qemu-scheduler/labels: rack=r%d", i/2+1)})
	}
	return c
}

// rackTier is count HA VMs named name-N, VMIDs from vmid, pinned to nodes (an HCL list) and
// tagged tag; terms are their placement terms and ha the lines of their ha block.
func rackTier(name string, vmid, count int, nodes, tag, terms, ha string) string {
	return fmt.Sprintf(`resource "qemuscheduler_vm" %q {
  count  = %d
  name   = "%s-${count.index}"
  vmid   = %d + count.index
  node   = %s[count.index]
  memory = 512
  tags   = [%q]
  clone {
    source_vmid = 9000
  }
  %s
  ha {
    %s
  }
}
`, name, count, name, vmid, nodes, tag, terms, ha)
}

// failRack fails the nodes of a rack, one after the other, as the trial's outage did; the HA
// manager's recovery is over when it returns.
func failRack(t *testing.T, sim *pvesim.Server, nodes ...string) {
	for _, n := range nodes {
		_, err := sim.FailNode(n)
		must(t, err)
	}
}

// runsOn checks that the VM vmid runs on one of nodes.
func runsOn(t *testing.T, sim *pvesim.Server, vmid int, nodes ...string) {
	t.Helper()
	if g, _ := sim.Guest(vmid); g.Status != "running" || !slices.Contains(nodes, g.Node) {
		t.Errorf("VM %d %s on %s, want running on one of %v", vmid, g.Status, g.Node, nodes)
	}
}

const dbApart = `vm_anti_affinity {
    tags         = ["db"]
    topology_key = "rack"
  }`

// Finding 1: a web tier spread over racks, the default failover, created in one apply. Its
// rules list every node, the VM's own rack first, and the next plan is empty (the VMs of the
// apply count each other). With both nodes of rack r1 down every VM runs again, in the other
// racks: the spread ranks the nodes and never pins a VM to its rack; the plan shows no change
// (the rules stay those of the VMs' homes). The rack back, failback takes web-0 and web-1
// home, and the plan is still empty.
func TestAccVMHAFailoverRackSpread(t *testing.T) {
	env, sim := simEnv(t, rackCluster())
	config := env.providerBlock("  read_node_notes = true") + rackTier("web", 100, 6, `["pve1", "pve2", "pve3", "pve4", "pve5", "pve6"]`, "web", `topology_spread {
    tags               = ["web"]
    topology_key       = "rack"
    max_skew           = 1
    when_unsatisfiable = "DoNotSchedule"
  }`, "")
	empty := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}
	runSteps(t,
		resource.TestStep{Config: config, Check: func(*terraform.State) error {
			for _, r := range simRules(t, sim) {
				if r.Name == "qemuscheduler-vm-100" && !r.Strict && len(r.Nodes) == 6 && r.Priorities["pve1"] == 2 && r.Priorities["pve2"] == 2 && r.Priorities["pve3"] == 0 {
					return nil
				}
			}
			return fmt.Errorf("no non-strict rule for VM 100 over every node, rack r1 first: %+v", simRules(t, sim))
		}},
		resource.TestStep{Config: config, ConfigPlanChecks: empty},
		resource.TestStep{PreConfig: func() {
			failRack(t, sim, "pve1", "pve2")
			for i := range 6 {
				runsOn(t, sim, 100+i, "pve3", "pve4", "pve5", "pve6")
			}
		}, Config: config, ConfigPlanChecks: empty},
		resource.TestStep{PreConfig: func() {
			must(t, sim.SetNodeOnline("pve1", true))
			must(t, sim.SetNodeOnline("pve2", true))
			for range 5 { // the HA manager runs a round after each read
				_, err := simClient(t, sim).HAResources(context.Background())
				must(t, err)
			}
			runsOn(t, sim, 100, "pve1", "pve2")
			runsOn(t, sim, 101, "pve1", "pve2")
		}, Config: config, ConfigPlanChecks: empty},
	)
}

// Findings 1 and 3: a DB tier kept apart by rack, db-0 in r1 and db-1 in r2. Rack r1 fails.
// Under strict failover db-0 stays down rather than share a rack with db-1, and a plan warns
// of no failover target once its rack has one usable node; under preferred it recovers into
// rack r3, the rack without a DB, not next to db-1.
func TestAccVMHAFailoverDBTier(t *testing.T) {
	for _, failover := range []string{"strict", "preferred"} {
		t.Run(failover, func(t *testing.T) {
			env, sim := simEnv(t, rackCluster())
			config := env.providerBlock("  read_node_notes = true") + rackTier("db", 150, 2, `["pve1", "pve3"]`, "db", dbApart, `failover = "`+failover+`"`)
			after := func() {
				runsOn(t, sim, 151, "pve3")
				if failover == "preferred" {
					runsOn(t, sim, 150, "pve5", "pve6")
				} else if g, _ := sim.Guest(150); g.Status == "running" {
					t.Errorf("VM 150 runs on %s, outside its rack", g.Node)
				}
			}
			log := &warningLog{}
			warned := log.has("An HA rule leaves the VM no failover target", "qemuscheduler-vm-150", "one usable node, pve1", "if pve1 fails")
			if failover == "preferred" {
				warned = log.lacks("no failover target")
			}
			runLoggingWarnings(t, log,
				resource.TestStep{Config: config},
				// With pve2 down, the strict rule of db-0 has one usable node left: the plan says so.
				resource.TestStep{PreConfig: func() { failRack(t, sim, "pve2") }, Config: config, Check: warned},
				resource.TestStep{PreConfig: func() {
					failRack(t, sim, "pve1")
					after()
				}, Config: config},
				// The rack back: db-0 runs in it again (a VM is destroyed only on a node PVE reaches).
				resource.TestStep{PreConfig: func() {
					must(t, sim.SetNodeOnline("pve1", true))
					must(t, sim.SetNodeOnline("pve2", true))
				}, Config: config},
			)
		})
	}
}

// Finding 4: a sidecar's required vm_affinity to the svc replicas pairs it with the one it was
// placed next to (svc-1 on pve3), never the group: the replicas keep their nodes, the pair
// shares svc-1's node rule in one class (accepted, where the group rule was refused), and a
// second plan is empty.
func TestAccVMHAFailoverSidecarPair(t *testing.T) {
	env, sim := simEnv(t, rackCluster())
	config := env.providerBlock("  read_node_notes = true") +
		rackTier("svc", 200, 2, `["pve1", "pve3"]`, "svc", strings.ReplaceAll(dbApart, "db", "svc"), "") + `
resource "qemuscheduler_vm" "side" {
  name       = "side"
  vmid       = 300
  node       = "pve3"
  memory     = 512
  depends_on = [qemuscheduler_vm.svc]
  clone {
    source_vmid = 9000
  }
  vm_affinity {
    tags = ["svc"]
  }
  ha {}
}
`
	stay := func(*terraform.State) error {
		for range 5 { // the HA manager runs a round after each read
			if _, err := simClient(t, sim).HAResources(context.Background()); err != nil {
				return err
			}
		}
		for vmid, node := range map[int]string{200: "pve1", 201: "pve3", 300: "pve3"} {
			if g, _ := sim.Guest(vmid); g.Node != node {
				return fmt.Errorf("VM %d moved to %s, want it on %s", vmid, g.Node, node)
			}
		}
		rules := map[string]scheduler.HARule{}
		for _, r := range simRules(t, sim) {
			rules[r.Name] = r
		}
		pair, node := rules["qemuscheduler-together-svc-201-300"], rules["qemuscheduler-vm-201"]
		if !slices.Equal(pair.VMIDs, []int{201, 300}) || pair.Affinity != scheduler.HAPositive || !slices.Equal(node.VMIDs, []int{201, 300}) ||
			node.MultiplePriorities() {
			return fmt.Errorf("rules %v, want the pair 201-300 and one single-class node rule for both", slices.Sorted(maps.Keys(rules)))
		}
		return nil
	}
	runSteps(t,
		resource.TestStep{Config: config, Check: stay},
		resource.TestStep{Config: config, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}, Check: stay},
	)
}

// Changing failover rewrites the VM's rules in place: an update of the rules alone, the VM's
// config and node untouched.
func TestAccVMHAFailoverChangeRewritesRules(t *testing.T) {
	env, sim := simEnv(t, rackCluster())
	config := func(failover string) string {
		return env.providerBlock("  read_node_notes = true") + rackTier("db", 150, 2, `["pve1", "pve3"]`, "db", dbApart, `failover = "`+failover+`"`)
	}
	var before map[string]string
	strict := func(want bool) resource.TestCheckFunc {
		return func(*terraform.State) error {
			for _, r := range simRules(t, sim) {
				if r.Name == "qemuscheduler-vm-150" && r.Strict == want && (want == (len(r.Nodes) == 2)) {
					return nil
				}
			}
			return fmt.Errorf("no node rule for VM 150 with strict %t: %+v", want, simRules(t, sim))
		}
	}
	unchanged := func(*terraform.State) error {
		g, _ := sim.Guest(150)
		if g.Node != "pve1" || g.Status != "running" || !maps.Equal(g.Config, before) {
			return fmt.Errorf("VM 150 changed: %s on %s, config %v, was %v", g.Status, g.Node, g.Config, before)
		}
		return nil
	}
	update := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("qemuscheduler_vm.db[0]", plancheck.ResourceActionUpdate)}}
	runSteps(t,
		resource.TestStep{Config: config("preferred"), Check: resource.ComposeTestCheckFunc(strict(false), func(*terraform.State) error {
			g, _ := sim.Guest(150)
			before = g.Config
			return nil
		})},
		resource.TestStep{Config: config("strict"), ConfigPlanChecks: update, Check: resource.ComposeTestCheckFunc(strict(true), unchanged)},
		resource.TestStep{Config: config("strict"), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
		resource.TestStep{Config: config("preferred"), ConfigPlanChecks: update, Check: resource.ComposeTestCheckFunc(strict(false), unchanged)},
	)
}

// Pairs that chain: side-b next to web-a (its vm_affinity on tag web), side-c next to side-b
// (on tag side). PVE makes one positive group of the two pairs and allows it one node rule:
// the pair rules hold two VMs each, and the group shares web-a's node rule, of one class
// (web-a allows pve1 alone). pve1 fails: the three recover together onto one node (the rule is
// non-strict); pve1 back, failback takes them home together, and no plan shows a change.
func TestAccVMHAFailoverChainedPairs(t *testing.T) {
	env, sim := simEnv(t, rackCluster())
	vm := func(name string, vmid int, tag, next, after string) string {
		attrs := `annotations = { "node.qemu-scheduler/regex" = "pve1" }`
		if next != "" {
			attrs = fmt.Sprintf("vm_affinity {\n    tags = [%q]\n  }\n  depends_on = [qemuscheduler_vm.%s]", next, after)
		}
		return fmt.Sprintf(`
resource "qemuscheduler_vm" %q {
  name   = %q
  vmid   = %d
  node   = "pve1"
  memory = 512
  tags   = [%q]
  clone {
    source_vmid = 9000
  }
  %s
  ha {}
}
`, name, name, vmid, tag, attrs)
	}
	config := env.providerBlock("  read_node_notes = true") + vm("a", 200, "web", "", "") + vm("b", 300, "side", "web", "a") + vm("c", 301, "other", "side", "b")
	rules := func(*terraform.State) error {
		byName := map[string]scheduler.HARule{}
		for _, r := range simRules(t, sim) {
			byName[r.Name] = r
		}
		want := map[string][]int{"qemuscheduler-together-web-200-300": {200, 300}, "qemuscheduler-together-side-300-301": {300, 301}, "qemuscheduler-vm-200": {200, 300, 301}}
		if len(byName) != len(want) {
			return fmt.Errorf("rules %v, want %v", slices.Sorted(maps.Keys(byName)), slices.Sorted(maps.Keys(want)))
		}
		for name, vmids := range want {
			r := byName[name]
			if !slices.Equal(r.VMIDs, vmids) {
				return fmt.Errorf("rule %s holds %v, want %v", name, r.VMIDs, vmids)
			}
			if r.Type == scheduler.HAResourceAffinity && r.Affinity != scheduler.HAPositive {
				return fmt.Errorf("rule %s: affinity %s, want positive", name, r.Affinity)
			}
		}
		if node := byName["qemuscheduler-vm-200"]; !slices.Equal(node.Nodes, []string{"pve1"}) || node.MultiplePriorities() || node.Strict {
			return fmt.Errorf("group node rule %+v, want pve1 alone, one class, not strict", node)
		}
		return nil
	}
	together := func(nodes ...string) {
		t.Helper()
		at, _ := sim.Guest(200)
		for _, vmid := range []int{200, 300, 301} {
			runsOn(t, sim, vmid, nodes...)
			if g, _ := sim.Guest(vmid); g.Node != at.Node {
				t.Errorf("VM %d on %s, apart from VM 200 on %s", vmid, g.Node, at.Node)
			}
		}
	}
	empty := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}
	runSteps(t,
		resource.TestStep{Config: config, Check: rules},
		resource.TestStep{PreConfig: func() {
			failRack(t, sim, "pve1")
			together("pve2", "pve3", "pve4", "pve5", "pve6")
		}, Config: config, ConfigPlanChecks: empty, Check: rules},
		resource.TestStep{PreConfig: func() {
			must(t, sim.SetNodeOnline("pve1", true))
			sim.RunHARounds(5)
			together("pve1")
		}, Config: config, ConfigPlanChecks: empty, Check: rules},
	)
}

package provider

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

const rb = "data.qemuscheduler_rebalance.r"

// rebalanceCluster has three empty equal nodes on a shared storage.
func rebalanceCluster() pvesim.Cluster {
	c := pvesim.Cluster{Storages: []pvesim.StorageSpec{{Name: "ceph", Type: "rbd", Content: []string{"images"}, Shared: true, SizeGiB: 2000}}}
	for i := 1; i <= 3; i++ {
		c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: fmt.Sprintf("pve%d", i), CPUs: 16, MemoryGiB: 64})
	}
	return c
}

// threeOnPve3 is rebalanceCluster with three guests on pve3: 100 and 101 opted in (tag rebal),
// 102 not.
func threeOnPve3(name100, name101, name102 string) pvesim.Cluster {
	c := rebalanceCluster()
	c.Guests = []pvesim.GuestSpec{
		runningGuest(100, "pve3", name100, "rebal"), runningGuest(101, "pve3", name101, "rebal"), runningGuest(102, "pve3", name102),
	}
	return c
}

// runningGuest is a small running VM of the cluster file.
func runningGuest(vmid int, node, name string, tags ...string) pvesim.GuestSpec {
	return pvesim.GuestSpec{VMID: vmid, Node: node, Name: name, Status: "running", Cores: 1, MemoryMiB: 512, Tags: tags}
}

// An overloaded node gives opted-in guests to underused ones, the move that narrows the gap
// most first (a, then b: their sizes differ, as their VMIDs depend on the order Terraform
// creates them); pinning the VMs to the moves'
// targets migrates them, and the same apply reads the data source after the moves (its
// depends_on on the VMs): it proposes nothing, and the plan after it is empty, outputs too.
// The busiest guest, opted out, never moves.
func TestAccRebalanceLowNodeUtilizationThroughPins(t *testing.T) {
	c := rebalanceCluster()
	c.Guests = []pvesim.GuestSpec{{VMID: 500, Node: "pve1", Name: "outsider", Status: "running", Cores: 8, MemoryMiB: 1024}}
	env, sim := simEnv(t, c)
	vms := func(a, b string) string {
		return fmt.Sprintf(`
resource "qemuscheduler_vm" "a" {
  name  = "a"
  node  = %q
  cores = 7
  tags  = ["rebal"]
}
resource "qemuscheduler_vm" "b" {
  name  = "b"
  node  = %q
  cores = 5
  tags  = ["rebal"]
}
resource "qemuscheduler_vm" "c" {
  name  = "c"
  node  = "pve1"
  cores = 2
  tags  = ["rebal"]
}
`, a, b)
	}
	rebalance := `
data "qemuscheduler_rebalance" "r" {
  tags       = ["rebal"]
  depends_on = [qemuscheduler_vm.a, qemuscheduler_vm.b, qemuscheduler_vm.c]
  low_node_utilization {
    cpu_threshold    = 30
    memory_threshold = 30
    cpu_target       = 65
    memory_target    = 65
  }
}
output "summary" { value = data.qemuscheduler_rebalance.r.summary }
`
	runSteps(t,
		resource.TestStep{Config: env.config(vms("pve1", "pve1"))},
		resource.TestStep{Config: env.config(vms("pve1", "pve1"), rebalance), Check: resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttr(rb, "moves.#", "2"),
			resource.TestCheckResourceAttr(rb, "moves.0.name", "a"),
			resource.TestCheckResourceAttr(rb, "moves.0.from", "pve1"),
			resource.TestCheckResourceAttr(rb, "moves.0.to", "pve2"),
			resource.TestCheckResourceAttr(rb, "moves.0.reason", "LowNodeUtilization: pve1 is above target (cpu 137.5%, memory 3.91%)"),
			resource.TestCheckResourceAttr(rb, "moves.1.name", "b"),
			resource.TestCheckResourceAttr(rb, "moves.1.to", "pve3"),
			resource.TestCheckResourceAttr(rb, "nodes_before.0.cpu_percent", "137.5"),
			resource.TestCheckResourceAttr(rb, "nodes_after.0.cpu_percent", "62.5"),
			resource.TestCheckResourceAttr(rb, "nodes_after.0.running_guests", "2"),
			resource.TestCheckResourceAttr(rb, "kept.#", "0"),
		)},
		resource.TestStep{Config: env.config(vms("pve2", "pve3"), rebalance), Check: resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttr(rb, "moves.#", "0"),
			resource.TestCheckResourceAttr(rb, "summary", "0 move(s)"),
			resource.TestCheckResourceAttr("qemuscheduler_vm.a", "node", "pve2"),
			func(*terraform.State) error {
				if g, ok := sim.Guest(500); !ok || g.Node != "pve1" {
					return fmt.Errorf("the opted-out guest moved or vanished: %+v", g)
				}
				return nil
			},
		)},
	)
}

// rebalanceOffPve3 moves the guests tagged rebal off pve3 (a policy violation there).
const rebalanceOffPve3 = `
data "qemuscheduler_rebalance" "r" {
  tags        = ["rebal"]
  annotations = { "node.qemu-scheduler/regex" = "pve[12]" }
}
`

// A policy violation moves the opted-in guest to a node that passes; a guest an HA rule
// holds is kept, with the rule named.
func TestAccRebalancePolicyViolationAndHARules(t *testing.T) {
	c := threeOnPve3("free", "held", "not-opted-in")
	c.HARules = []pvesim.HARuleSpec{{Rule: "stay", Type: "node-affinity", Resources: []string{"vm:101"}, Nodes: []string{"pve3"}, Strict: true}}
	env, sim := simEnv(t, c)
	runSteps(t, resource.TestStep{Config: env.config(rebalanceOffPve3), Check: resource.ComposeAggregateTestCheckFunc(
		resource.TestCheckResourceAttr(rb, "moves.#", "1"),
		resource.TestCheckResourceAttr(rb, "moves.0.vmid", "100"),
		resource.TestCheckResourceAttr(rb, "moves.0.reason", `policy violation on pve3: NodeRegex: "pve3" does not match "pve[12]"`),
		resource.TestCheckResourceAttr(rb, "kept.#", "1"),
		resource.TestCheckResourceAttr(rb, "kept.0.vmid", "101"),
		resource.TestMatchResourceAttr(rb, "kept.0.reason", wrapped(`HA rule stay \(node-affinity\) allows only pve3`)),
		haResourcesRead(sim, false),
	)})
}

// haResourcesRead checks whether the HA resources were read: the failback flags matter only
// with a node-affinity rule that ranks nodes.
func haResourcesRead(sim *pvesim.Server, want bool) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if n := sim.Requests("GET /cluster/ha/resources"); (n > 0) != want {
			return fmt.Errorf("%d reads of the HA resources, want them read: %t", n, want)
		}
		return nil
	}
}

// An HA VM whose node-affinity rule ranks its current node highest is kept, with the
// priorities: the HA manager would move it back from any lower one (failback, on by default).
func TestAccRebalanceKeepsHAPriority(t *testing.T) {
	c := rebalanceCluster()
	c.Guests = []pvesim.GuestSpec{runningGuest(100, "pve3", "free", "rebal"), runningGuest(101, "pve3", "preferring", "rebal")}
	c.HARules = []pvesim.HARuleSpec{{Rule: "prefer", Type: "node-affinity", Resources: []string{"vm:101"}, Nodes: []string{"pve1:1", "pve3:2"}}}
	env, sim := simEnv(t, c)
	runSteps(t, resource.TestStep{Config: env.config(rebalanceOffPve3), Check: resource.ComposeAggregateTestCheckFunc(
		resource.TestCheckResourceAttr(rb, "moves.#", "1"),
		resource.TestCheckResourceAttr(rb, "moves.0.vmid", "100"),
		resource.TestCheckResourceAttr(rb, "kept.#", "1"),
		resource.TestCheckResourceAttr(rb, "kept.0.vmid", "101"),
		haResourcesRead(sim, true),
		resource.TestMatchResourceAttr(rb, "kept.0.reason",
			wrapped(`HA rule prefer \(node-affinity\): pve1 has priority 1, the HA manager moves the VM back to pve3 \(priority 2\)`)),
		resource.TestMatchResourceAttr(rb, "kept.0.reason",
			wrapped(`HA rule prefer \(node-affinity\): pve2 is not one of its nodes \(priority -1\), the HA manager moves the VM back to pve3`)),
	)})
}

// Plan-time errors name the attribute.
func TestAccRebalanceValidation(t *testing.T) {
	env := newAccEnv(t, rebalanceCluster())
	tests := map[string]string{
		`tags = []`:          `Attribute tags list must contain at least 1 elements`,
		`tags = ["Bad Tag"]`: `must be a PVE tag`,
		`tags = ["rebal"]
		 low_node_utilization {
		   cpu_threshold    = 70
		   memory_threshold = 30
		   cpu_target       = 60
		   memory_target    = 60
		 }`: `cpu_threshold \(70\) must not exceed cpu_target \(60\)`,
		`tags = ["rebal"]
		 max_moves_per_node = 0`: `max_moves_per_node value must be at least 1`,
		`tags = ["rebal"]
		 profile = "nope"`: `profile "nope" is not defined in the provider; defined profiles: default`,
		`tags = ["rebal"]
		 low_node_utilization {
		   cpu_threshold = 20
		 }`: `low_node_utilization has cpu_threshold but not cpu_target: set cpu_target too`,
		`tags = ["rebal"]
		 low_node_utilization {
		   balanciness   = 10
		   cpu_threshold = 20
		   cpu_target    = 60
		 }`: `balanciness replaces cpu_threshold, cpu_target, memory_threshold and memory_target`,
		`tags = ["rebal"]
		 high_node_utilization {
		   cpu_threshold = 20
		 }`: `high_node_utilization needs memory_threshold`,
		`tags = ["rebal"]
		 max_moves_per_group = 0`: `max_moves_per_group value must be at least 1`,
		`tags = ["rebal"]
		 low_node_utilization {
		   cpu_threshold    = 20
		   memory_threshold = 20
		   cpu_target       = 60
		   memory_target    = 60
		 }
		 high_node_utilization {
		   cpu_threshold    = 20
		   memory_threshold = 20
		 }`: `low_node_utilization fills the nodes under its thresholds and high_node_utilization empties them`,
	}
	for body, want := range tests {
		t.Run(want, func(t *testing.T) {
			runSteps(t, resource.TestStep{Config: env.config(fmt.Sprintf("data \"qemuscheduler_rebalance\" \"r\" {\n%s\n}\n", body)), ExpectError: wrapped(want)})
		})
	}
}

// A node in HA maintenance drains its opted-in guests, and only those; the summary names the
// profile that decided.
func TestAccRebalanceMaintenanceDrains(t *testing.T) {
	c := rebalanceCluster()
	c.Nodes[1].HAState = "maintenance"
	c.Guests = []pvesim.GuestSpec{
		runningGuest(100, "pve2", "web-1", "rebal"),
		runningGuest(101, "pve2", "pet"),
	}
	env, _ := simEnv(t, c)
	runSteps(t, resource.TestStep{Config: env.providerBlock(`
profile {
  name               = "drain"
  plugin_config_yaml = "scores: {LeastAllocated: {enable: true}}"
}`) + `
data "qemuscheduler_rebalance" "r" {
  tags    = ["rebal"]
  profile = "drain"
}
`, Check: resource.ComposeAggregateTestCheckFunc(
		resource.TestCheckResourceAttr(rb, "moves.#", "1"),
		resource.TestMatchResourceAttr(rb, "summary", regexp.MustCompile(`, profile drain$`)),
		resource.TestCheckResourceAttr(rb, "moves.0.vmid", "100"),
		resource.TestCheckResourceAttr(rb, "moves.0.from", "pve2"),
		resource.TestMatchResourceAttr(rb, "moves.0.reason", wrapped(`policy violation on pve2: TaintToleration: .*node.qemu-scheduler/maintenance`)),
		resource.TestCheckResourceAttr(rb, "kept.#", "1"),
		resource.TestCheckResourceAttr(rb, "kept.0.vmid", "101"),
		resource.TestMatchResourceAttr(rb, "kept.0.reason", regexp.MustCompile(`^policy violation on pve2: TaintToleration: .*; not opted in$`)),
	)})
}

// drain_nodes empties a named node of its opted-in guests, one step each, and moves nothing
// onto it; the guest outside the opt-in stays, in kept with why. A name that is no node is an
// error on drain_nodes.
func TestAccRebalanceDrainNodes(t *testing.T) {
	c := threeOnPve3("web-1", "web-2", "pet")
	env, _ := simEnv(t, c)
	drain := func(node string) string {
		return fmt.Sprintf(`
data "qemuscheduler_rebalance" "r" {
  tags        = ["rebal"]
  drain_nodes = [%q]
}
`, node)
	}
	notPve3 := regexp.MustCompile(`^pve[12]$`)
	runSteps(t,
		resource.TestStep{Config: env.config(drain("pve3")), Check: resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttr(rb, "moves.#", "2"),
			resource.TestCheckResourceAttr(rb, "moves.0.vmid", "100"),
			resource.TestMatchResourceAttr(rb, "moves.0.to", notPve3),
			resource.TestCheckResourceAttr(rb, "moves.0.reason", "drain_nodes: pve3 is drained"),
			resource.TestCheckResourceAttr(rb, "moves.0.step", "1"),
			resource.TestCheckResourceAttr(rb, "moves.1.vmid", "101"),
			resource.TestMatchResourceAttr(rb, "moves.1.to", notPve3),
			resource.TestCheckResourceAttr(rb, "moves.1.step", "2"),
			resource.TestCheckResourceAttr(rb, "kept.#", "1"),
			resource.TestCheckResourceAttr(rb, "kept.0.vmid", "102"),
			resource.TestCheckResourceAttr(rb, "kept.0.reason", "drain_nodes: pve3 is drained; not opted in"),
		)},
		resource.TestStep{Config: env.config(drain("pve9")),
			ExpectError: wrapped(`drain_nodes names "pve9", which is not a node of the cluster \(pve1, pve2, pve3\): correct the name`)},
	)
}

// Two web VMs on one node break required anti-affinity: one of them moves, the other stays.
func TestAccRebalanceAntiAffinityViolation(t *testing.T) {
	c := rebalanceCluster()
	c.Guests = []pvesim.GuestSpec{
		runningGuest(100, "pve1", "web-1", "rebal", "web"),
		runningGuest(101, "pve1", "web-2", "rebal", "web"),
		runningGuest(102, "pve2", "web-3", "rebal", "web"),
	}
	env, _ := simEnv(t, c)
	runSteps(t, resource.TestStep{Config: env.config(`
data "qemuscheduler_rebalance" "r" {
  tags = ["rebal"]
  vm_anti_affinity {
    tags         = ["web"]
    topology_key = "node"
  }
}
`), Check: resource.ComposeAggregateTestCheckFunc(
		resource.TestCheckResourceAttr(rb, "moves.#", "1"),
		resource.TestCheckResourceAttr(rb, "moves.0.vmid", "100"),
		resource.TestCheckResourceAttr(rb, "moves.0.to", "pve3"),
		resource.TestMatchResourceAttr(rb, "moves.0.reason", wrapped(`policy violation on pve1: VMAntiAffinity: .*101`)),
		resource.TestCheckResourceAttr(rb, "kept.#", "0"),
	)})
}

// A guest is not moved next to a negative peer that the HA manager is moving to the target
// (PVE's CRM would refuse the migration): vm 101 leaves pve1 for maintenance towards pve2, so
// vm 100, which must leave pve3, is kept with the move named. The HA manager's moves cost
// one read of its status per rebalance read, as the rules do.
func TestAccRebalanceHAPeerMoving(t *testing.T) {
	c := rebalanceCluster()
	c.HARules = []pvesim.HARuleSpec{}
	c.Guests = []pvesim.GuestSpec{runningGuest(100, "pve3", "app", "rebal"), runningGuest(101, "pve1", "peer")}
	env, sim := simEnv(t, c)
	ctx := context.Background()
	client := simClient(t, sim)
	for _, vmid := range []int{100, 101} {
		must(t, client.AddHAResource(ctx, vmid, proxmox.HASettings{State: "started", MaxRestart: -1, MaxRelocate: -1}))
	}
	must(t, client.CreateHARule(ctx, scheduler.HARule{Name: "apart", Type: scheduler.HAResourceAffinity, Affinity: scheduler.HANegative, VMIDs: []int{100, 101}}))
	sim.HoldTasks()
	t.Cleanup(sim.ReleaseTasks)
	must(t, sim.SetNodeHAState("pve1", "maintenance"))
	if moves, err := client.HAMoves(ctx); err != nil || moves[101] != "pve2" {
		t.Fatalf("HA moves %v, %v; want vm 101 moving to pve2", moves, err)
	}
	rules, status := sim.Requests("GET /cluster/ha/rules"), sim.Requests("GET /cluster/ha/status/manager_status")
	runSteps(t, resource.TestStep{Config: env.config(rebalanceOffPve3), Check: resource.ComposeAggregateTestCheckFunc(
		resource.TestCheckResourceAttr(rb, "moves.#", "0"),
		resource.TestCheckResourceAttr(rb, "kept.#", "1"),
		resource.TestCheckResourceAttr(rb, "kept.0.vmid", "100"),
		resource.TestMatchResourceAttr(rb, "kept.0.reason", wrapped(`pve2: HA rule apart \(negative resource-affinity\): the HA manager is moving vm 101 there`)),
		func(*terraform.State) error {
			reads := sim.Requests("GET /cluster/ha/rules") - rules
			if got := sim.Requests("GET /cluster/ha/status/manager_status") - status; reads == 0 || got != reads {
				return fmt.Errorf("%d HA manager status reads for %d rules reads, want one each", got, reads)
			}
			return nil
		},
	)})
}

// skewConfig is two HA web VMs (100, 101) pinned to nodes, apart on nodes; with spread, they
// are spread over the zones and the rebalance of the web tier reads after them.
func skewConfig(env *accEnv, spread bool, nodes ...string) string {
	attrs := fmt.Sprintf(`vmid = 100 + count.index
  node = [%q, %q][count.index]`, nodes[0], nodes[1])
	hcl := ""
	if spread {
		attrs += `
  topology_spread {
    tags         = ["web"]
    topology_key = "zone"
  }`
		hcl = `
data "qemuscheduler_rebalance" "r" {
  tags       = ["web"]
  depends_on = [qemuscheduler_vm.web]
}`
	}
	return env.providerBlock("  read_node_notes = true") + haWebResource("web-${count.index}", "2", attrs, "ha {}") + hcl
}

// topClass checks that the highest priority class of the node rule id is exactly nodes.
func topClass(t *testing.T, sim *pvesim.Server, id string, nodes ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, r := range simRules(t, sim) {
			if r.Name != id {
				continue
			}
			var top []string
			best := math.MinInt
			for _, n := range r.Nodes {
				switch p := r.Priorities[n]; {
				case p > best:
					best, top = p, []string{n}
				case p == best:
					top = append(top, n)
				}
			}
			if sort.Strings(top); !slices.Equal(top, nodes) {
				return fmt.Errorf("rule %s prefers %v, want %v: %+v", id, top, nodes, r)
			}
			return nil
		}
		return fmt.Errorf("no rule %s in %+v", id, simRules(t, sim))
	}
}

// The finding of issue 32: a spread over zones left skewed (both VMs in zone a, kept there by
// their own node rules) is repaired by the rebalance: its own rule does not hold the VM, the
// move is proposed, and pinning the VM to the move's target rewrites the rule for zone b
// before the HA manager migrates it, and web-1's rule, which counts web-0's home, in the same
// apply: the plan after it is empty, the HA rounds leave it there, and the next rebalance
// proposes nothing.
func TestAccRebalanceRepairsSkewAcrossZones(t *testing.T) {
	env, sim := simEnv(t, haRulesCluster())
	const rule = "qemuscheduler-vm-100"
	runs := func(vmid int, node string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			if g, _ := sim.Guest(vmid); g.Node != node || g.Status != "running" {
				return fmt.Errorf("VM %d %s on %s, want running on %s", vmid, g.Status, g.Node, node)
			}
			return nil
		}
	}
	// ruleBeforeMigrate checks that the last write of the VM's rule precedes its HA migration.
	ruleBeforeMigrate := func(*terraform.State) error {
		wrote, migrated := -1, -1
		for i, r := range sim.RequestLog() {
			switch {
			case r.Method == "PUT" && strings.HasSuffix(r.Path, "/cluster/ha/rules/"+rule):
				wrote = i
			case r.Method == "POST" && strings.HasSuffix(r.Path, "/cluster/ha/resources/vm:100/migrate"):
				migrated = i
			}
		}
		if wrote < 0 || migrated < 0 || wrote > migrated {
			return fmt.Errorf("rule written at request %d, VM migrated at %d: want the rule first", wrote, migrated)
		}
		return nil
	}
	runSteps(t,
		resource.TestStep{Config: skewConfig(env, false, "pve1", "pve2")},
		// The spread comes in: placement is sticky, both stay in zone a, and their node
		// rules prefer their own node (the rest of zone a holds the other web VM, which the
		// anti-affinity by node ranks last).
		resource.TestStep{Config: skewConfig(env, true, "pve1", "pve2"), Check: resource.ComposeAggregateTestCheckFunc(
			topClass(t, sim, rule, "pve1"),
			resource.TestCheckResourceAttr(rb, "moves.#", "1"),
			resource.TestCheckResourceAttr(rb, "moves.0.vmid", "100"),
			resource.TestCheckResourceAttr(rb, "moves.0.from", "pve1"),
			resource.TestCheckResourceAttr(rb, "moves.0.to", "pve4"),
		)},
		// The move changes web-0's home: the same apply rewrites web-1's rule, whose classes
		// count web-0 there (zone b now holds as many web VMs as zone a), so the plan after it
		// is empty.
		resource.TestStep{Config: skewConfig(env, true, "pve4", "pve2"),
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check: resource.ComposeAggregateTestCheckFunc(
				runs(100, "pve4"), topClass(t, sim, rule, "pve3", "pve4"), ruleBeforeMigrate,
				topClass(t, sim, "qemuscheduler-vm-101", "pve1", "pve2"),
				resource.TestCheckResourceAttr(rb, "moves.#", "0"),
			)},
		// HA rounds leave it there (a strict rule for zone a would take it back).
		resource.TestStep{PreConfig: func() { sim.RunHARounds(5) }, Config: skewConfig(env, true, "pve4", "pve2"),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check:            resource.ComposeAggregateTestCheckFunc(runs(100, "pve4"), runs(101, "pve2"), resource.TestCheckResourceAttr(rb, "moves.#", "0"))},
	)
}

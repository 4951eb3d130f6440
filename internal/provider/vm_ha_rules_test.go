package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/harules"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/scheduling"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// haRulesCluster is PVE 9 (HA rules, none yet) with four nodes in two zones, a template on
// shared storage and nothing else running.
func haRulesCluster() pvesim.Cluster {
	c := pvesim.Cluster{
		Storages: []pvesim.StorageSpec{{Name: "ceph", Type: "rbd", Content: []string{"images"}, Shared: true, SizeGiB: 2000}},
		Guests: []pvesim.GuestSpec{{VMID: 9000, Node: "pve1", Name: "debian-12", Template: true, Cores: 1, MemoryMiB: 512,
			Config: map[string]string{"scsi0": "ceph:base-9000-disk-0,size=8G"}}},
		HARules: []pvesim.HARuleSpec{},
	}
	for i, zone := range []string{"a", "a", "b", "b"} {
		c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: fmt.Sprintf("pve%d", i+1), CPUs: 8, MemoryGiB: 16, Notes: "qemu-scheduler/labels: zone=" + zone})
	}
	return c
}

// strictFailover is the ha block's line that keeps hard rules through failover: the negative
// resource-affinity rule of a group kept apart on nodes exists only under it.
const strictFailover = `failover = "strict"`

// haGroup is count VMs of the web group, kept apart on nodes and HA-managed with strict
// failover; extra goes into the ha block.
func haGroup(env *accEnv, count int, extra string) string {
	return haVM(env, "web-${count.index}", strconv.Itoa(count), "", strictFailover+"\n    "+extra)
}

// haVM is count VMs named name of the web group; attrs are more attributes (HCL lines).
func haVM(env *accEnv, name, count, attrs, extra string) string {
	return haWebVMs(env, name, count, attrs, "ha {\n    "+extra+"\n  }")
}

// haWebVMs is count VMs named name of the web group, kept apart on nodes; attrs are more
// attributes and ha their ha block (HCL).
func haWebVMs(env *accEnv, name, count, attrs, ha string) string {
	return env.config(haWebResource(name, count, attrs, ha))
}

// haWebResource is haWebVMs' resource alone, for a test that configures the provider otherwise.
func haWebResource(name, count, attrs, ha string) string {
	return fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  count  = %s
  name   = %q
  %s
  memory = 512
  tags   = ["web"]
  clone {
    source_vmid = 9000
  }
  vm_anti_affinity {
    tags         = ["web"]
    topology_key = "node"
  }
  %s
}`, count, name, attrs, ha)
}

// simRules are the cluster's HA rules.
func simRules(t *testing.T, sim *pvesim.Server) []scheduler.HARule {
	t.Helper()
	rules, err := simClient(t, sim).HARules(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

// ruleHolds checks that the rule id exists, enabled, of the type and affinity, holding
// exactly the VMs of the state's instances of qemuscheduler_vm.web (none: the rule is gone).
func ruleHolds(t *testing.T, sim *pvesim.Server, id, affinity string, instances int) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		var want []int
		for i := 0; i < instances; i++ {
			rs, ok := s.RootModule().Resources[fmt.Sprintf("qemuscheduler_vm.web.%d", i)]
			if !ok {
				return fmt.Errorf("no instance %d", i)
			}
			var vmid int
			fmt.Sscanf(rs.Primary.Attributes["vmid"], "%d", &vmid) //nolint:errcheck // checked below
			want = append(want, vmid)
		}
		sort.Ints(want)
		for _, r := range simRules(t, sim) {
			if r.Name != id {
				continue
			}
			got := slices.Clone(r.VMIDs)
			sort.Ints(got)
			if instances < 2 || r.Disabled || r.Affinity != affinity || !slices.Equal(got, want) {
				return fmt.Errorf("rule %+v, want %s over %v", r, affinity, want)
			}
			return nil
		}
		if instances >= 2 {
			return fmt.Errorf("no rule %s in %+v", id, simRules(t, sim))
		}
		return nil
	}
}

// apartOnNodes checks that the web VMs run on distinct nodes.
func apartOnNodes(sim *pvesim.Server, vmids ...int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		seen := map[string]int{}
		for _, id := range vmids {
			g, ok := sim.Guest(id)
			if !ok {
				return fmt.Errorf("no VM %d", id)
			}
			if other, taken := seen[g.Node]; taken {
				return fmt.Errorf("VMs %d and %d both run on %s", other, id, g.Node)
			}
			seen[g.Node] = id
		}
		return nil
	}
}

const apartWeb = "qemuscheduler-apart-web"

// Three VMs kept apart get one negative rule; a failover keeps them apart and plans nothing;
// a rule deleted or disabled outside is a change and is restored; scaling down to one
// deletes the rule; placement_rules = false keeps none.
func TestAccVMHARulesGroup(t *testing.T) {
	env, sim := simEnv(t, haRulesCluster())
	var failed string
	runSteps(t,
		resource.TestStep{Config: haGroup(env, 3, ""), Check: resource.ComposeTestCheckFunc(
			ruleHolds(t, sim, apartWeb, "negative", 3),
			apartOnNodes(sim, 100, 101, 102),
		)},
		// Refreshed, every VM reads the rule that its peers completed.
		resource.TestStep{Config: haGroup(env, 3, ""), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check: resource.ComposeTestCheckFunc(
				resource.TestCheckResourceAttr("qemuscheduler_vm.web.0", "ha.rules.#", "1"),
				resource.TestCheckResourceAttr("qemuscheduler_vm.web.0", "ha.rules.0.id", apartWeb),
				resource.TestCheckResourceAttr("qemuscheduler_vm.web.2", "ha.rules.0.id", apartWeb),
			)},
		// The node of VM 100 fails: the HA manager recovers it on the only node without a peer.
		resource.TestStep{PreConfig: func() {
			g, _ := sim.Guest(100)
			failed = g.Node
			got, err := sim.FailNode(failed)
			must(t, err)
			if len(got) != 1 {
				t.Errorf("recovered %v, want VM 100 recovered", got)
			}
		}, Config: haGroup(env, 3, ""), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check: apartOnNodes(sim, 100, 101, 102)},
		// Deleted outside: a change of ha.rules, and the apply writes the rule again.
		resource.TestStep{PreConfig: func() {
			must(t, sim.SetNodeOnline(failed, true))
			must(t, simClient(t, sim).DeleteHARule(context.Background(), apartWeb))
		}, Config: haGroup(env, 3, ""), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectNonEmptyPlan()}},
			Check: ruleHolds(t, sim, apartWeb, "negative", 3)},
		// Disabled outside: the same.
		resource.TestStep{PreConfig: func() {
			c := simClient(t, sim)
			set, err := c.ReadHARules(context.Background())
			must(t, err)
			off := set.Rules[0]
			off.Disabled = true
			must(t, c.UpdateHARule(context.Background(), off, set.Digest))
		}, Config: haGroup(env, 3, ""), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectNonEmptyPlan()}},
			Check: ruleHolds(t, sim, apartWeb, "negative", 3)},
		resource.TestStep{Config: haGroup(env, 2, ""), Check: ruleHolds(t, sim, apartWeb, "negative", 2)},
		resource.TestStep{Config: haGroup(env, 1, ""), Check: ruleHolds(t, sim, apartWeb, "negative", 1)},
		resource.TestStep{Config: haGroup(env, 1, ""), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check: resource.TestCheckResourceAttr("qemuscheduler_vm.web.0", "ha.rules.#", "0")},
		resource.TestStep{Config: haGroup(env, 3, "placement_rules = false"), Check: noRules(t, sim)},
		// Turned off after the rule was written: every VM leaves it, and the rule goes.
		resource.TestStep{Config: haGroup(env, 3, ""), Check: ruleHolds(t, sim, apartWeb, "negative", 3)},
		resource.TestStep{Config: haGroup(env, 3, "placement_rules = false"), Check: resource.ComposeTestCheckFunc(noRules(t, sim),
			resource.TestCheckResourceAttr("qemuscheduler_vm.web.0", "ha.rules.#", "0"))},
		resource.TestStep{Config: haGroup(env, 3, "placement_rules = false"),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
	)
}

// A member leaving HA leaves its rules before its HA resource goes: PVE's purge would take it
// out of the group's rule but leave a negative rule of one, which PVE drops as infeasible.
// The block removed from web-2, then from web-1, takes each out, and the rule goes with the
// second; HA ignoring web-1 and web-2 does the same.
func TestAccVMHARulesLeaveHA(t *testing.T) {
	env, sim := simEnv(t, haRulesCluster())
	config := func(has, state string) string {
		return haWebVMs(env, "web-${count.index}", "3", "", fmt.Sprintf(`dynamic "ha" {
    for_each = %s ? [1] : []
    content {
      state    = %s
      failover = "strict"
    }
  }`, has, state))
	}
	haResources := func(want ...int) resource.TestCheckFunc {
		return func(*terraform.State) error {
			res, err := simClient(t, sim).HAResources(context.Background())
			if err != nil {
				return err
			}
			if got := slices.Sorted(maps.Keys(res)); !slices.Equal(got, want) {
				return fmt.Errorf("HA resources %v, want %v", got, want)
			}
			return nil
		}
	}
	const all, started = "true", `"started"`
	runSteps(t,
		resource.TestStep{Config: config(all, started), Check: ruleHolds(t, sim, apartWeb, "negative", 3)},
		resource.TestStep{Config: config("count.index < 2", started), Check: resource.ComposeTestCheckFunc(ruleHolds(t, sim, apartWeb, "negative", 2),
			haResources(100, 101), resource.TestCheckResourceAttr("qemuscheduler_vm.web.1", "ha.rules.0.id", apartWeb))},
		resource.TestStep{Config: config("count.index == 0", started), Check: resource.ComposeTestCheckFunc(noRules(t, sim), haResources(100))},
		resource.TestStep{Config: config(all, started), Check: ruleHolds(t, sim, apartWeb, "negative", 3)},
		resource.TestStep{Config: config(all, `count.index == 0 ? "started" : "ignored"`), Check: resource.ComposeTestCheckFunc(noRules(t, sim),
			haResources(100, 101, 102), resource.TestCheckResourceAttr("qemuscheduler_vm.web.1", "ha.rules.#", "0"))},
		resource.TestStep{Config: config(all, `count.index == 0 ? "started" : "ignored"`),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
	)
}

// noRules checks that the cluster has no HA rule.
func noRules(t *testing.T, sim *pvesim.Server) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if rules := simRules(t, sim); len(rules) != 0 {
			return fmt.Errorf("rules %+v, want none", rules)
		}
		return nil
	}
}

// haDB is the HA VM db (150), cloned, on the cluster's Notes labels; attrs are more attributes.
func haDB(env *accEnv, attrs string) string { return haDBWith(env, attrs, "") }

// haDBWith is haDB with ha, the lines of its ha block.
func haDBWith(env *accEnv, attrs, ha string) string {
	return env.providerBlock("  read_node_notes = true") + fmt.Sprintf(`resource "qemuscheduler_vm" "db" {
  name   = "db"
  vmid   = 150
  memory = 512
  %s
  clone {
    source_vmid = 9000
  }
  ha {
    %s
  }
}`, attrs, ha)
}

// zoneDB is haDB pinned to node, kept apart from the other db VMs by zone under strict
// failover: its node rule lists the nodes of node's zone.
func zoneDB(env *accEnv, node string) string {
	return haDBWith(env, fmt.Sprintf(`node = %q
  tags = ["db"]
  vm_anti_affinity {
    tags         = ["db"]
    topology_key = "zone"
  }`, node), strictFailover)
}

// dbNodeRule checks that VM 150 is in a strict node rule of its own on exactly nodes.
func dbNodeRule(t *testing.T, sim *pvesim.Server, nodes ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, r := range simRules(t, sim) {
			if r.Name == "qemuscheduler-vm-150" && r.Strict && slices.Equal(r.Nodes, nodes) && slices.Equal(r.VMIDs, []int{150}) {
				return nil
			}
		}
		return fmt.Errorf("no strict node rule for VM 150 on %v: %+v", nodes, simRules(t, sim))
	}
}

// Under strict failover a required term over zones keeps the VM in its zone: a strict node
// rule listing the zone's nodes, which the HA manager's recovery honours; a pin moved to the other zone takes the rule
// along; import reads the rule back.
func TestAccVMHARulesZone(t *testing.T) {
	env, sim := simEnv(t, haRulesCluster())
	config := func(node string) string { return zoneDB(env, node) }
	nodeRule := func(nodes ...string) resource.TestCheckFunc { return dbNodeRule(t, sim, nodes...) }
	runs := func(node string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			if g, _ := sim.Guest(150); g.Node != node || g.Status != "running" {
				return fmt.Errorf("VM 150 %s on %s, want running on %s", g.Status, g.Node, node)
			}
			return nil
		}
	}
	runSteps(t,
		resource.TestStep{Config: config("pve1"), Check: nodeRule("pve1", "pve2")},
		// pve1 fails: the HA manager recovers the VM in its zone, on pve2 (pve3 and pve4 are
		// as empty); the pinned node stays the state's, an empty plan.
		resource.TestStep{PreConfig: func() {
			_, err := sim.FailNode("pve1")
			must(t, err)
		}, Config: config("pve1"), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check: runs("pve2")},
		// Pinned to a node of the other zone: the node rule follows, before the move.
		resource.TestStep{PreConfig: func() { must(t, sim.SetNodeOnline("pve1", true)) }, Config: config("pve3"),
			Check: resource.ComposeTestCheckFunc(runs("pve3"), nodeRule("pve3", "pve4"))},
		// Import reads the rules back, and failover from them (a strict node rule).
		resource.TestStep{Config: config("pve3"), ResourceName: "qemuscheduler_vm.db", ImportState: true, ImportStateId: "150",
			ImportStateCheck: func(states []*terraform.InstanceState) error {
				if a := states[0].Attributes; a["ha.rules.#"] != "1" || a["ha.rules.0.id"] != "qemuscheduler-vm-150" || a["ha.placement_rules"] != "true" ||
					a["ha.rules.0.type"] != "node-affinity" || a["ha.rules.0.nodes.%"] != "2" || a["ha.rules.0.nodes.pve3"] == "" ||
					a["ha.rules.0.resources.0"] != "vm:150" || a["ha.failover"] != "strict" {
					return fmt.Errorf("imported ha: %v", a)
				}
				return nil
			}},
	)
}

// A typo in the Notes of a node of the VM's zone (qemu-scheduler/label: for labels:) takes
// its zone label away: a plan error at ha.placement_rules naming the node, the ignored Notes
// line and the fix, never a rule widened to every node; PVE keeps the rule. Fixed, nothing
// is left to do.
func TestAccVMHARulesLostLabelIsAPlanError(t *testing.T) {
	env, sim := simEnv(t, haRulesCluster())
	runSteps(t,
		resource.TestStep{Config: zoneDB(env, "pve1"), Check: dbNodeRule(t, sim, "pve1", "pve2")},
		resource.TestStep{PreConfig: func() { must(t, sim.SetNodeNotes("pve2", "qemu-scheduler/label: zone=a")) }, Config: zoneDB(env, "pve1"),
			ExpectError: wrapped(`(?s)A node lost a label the VM's HA rule needs.*with qemuscheduler_vm.db,.*ha \{.*` +
				`HA rule qemuscheduler-vm-150 keeps VM db \(150\) in zone=a \(required vm_anti_affinity on tags db with topology_key zone\) ` +
				`and lists node pve2, which has no label zone now.*Notes line 1 "qemu-scheduler/label: zone=a": unknown key qemu-scheduler/label.*` +
				"the rule would leave pve2 out, and a failover could not use it; it is left unchanged.*`qemu-scheduler/labels: zone=a`")},
		resource.TestStep{PreConfig: func() { must(t, sim.SetNodeNotes("pve2", "qemu-scheduler/labels: zone=a")) }, Config: zoneDB(env, "pve1"),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check:            dbNodeRule(t, sim, "pve1", "pve2")},
	)
}

// A node that goes offline leaves the VM's rules alone, whether it is the other node of the
// VM's zone or the VM's own node (its Notes, and so its zone, cannot be read): the plan is
// empty and no message says it has no label; back online, there is still nothing to do.
func TestAccVMHARulesOfflineNodeKeepsRules(t *testing.T) {
	env, sim := simEnv(t, haRulesCluster())
	log := &warningLog{}
	empty := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}
	offline := func(node string, online bool) func() { return func() { must(t, sim.SetNodeOnline(node, online)) } }
	runLoggingWarnings(t, log,
		resource.TestStep{Config: zoneDB(env, "pve1"), Check: dbNodeRule(t, sim, "pve1", "pve2")},
		resource.TestStep{PreConfig: offline("pve2", false), Config: zoneDB(env, "pve1"), ConfigPlanChecks: empty,
			Check: resource.ComposeTestCheckFunc(dbNodeRule(t, sim, "pve1", "pve2"), log.lacks("has no label"))},
		resource.TestStep{PreConfig: offline("pve2", true), Config: zoneDB(env, "pve1"), ConfigPlanChecks: empty,
			Check: dbNodeRule(t, sim, "pve1", "pve2")},
		resource.TestStep{PreConfig: offline("pve1", false), Config: zoneDB(env, "pve1"), ConfigPlanChecks: empty,
			Check: resource.ComposeTestCheckFunc(dbNodeRule(t, sim, "pve1", "pve2"), log.lacks("has no label"))},
		resource.TestStep{PreConfig: offline("pve1", true), Config: zoneDB(env, "pve1"), ConfigPlanChecks: empty,
			Check: dbNodeRule(t, sim, "pve1", "pve2")},
	)
}

// A node rule PVE would refuse (the VM is in an admin's node rule already) is a plan error
// naming what this VM sets, its node_selector, and the admin's rule.
func TestAccVMHARulesNodeConflictNamesThePolicy(t *testing.T) {
	env, sim := simEnv(t, haRulesCluster())
	runSteps(t,
		resource.TestStep{Config: haDB(env, "")},
		resource.TestStep{PreConfig: func() {
			must(t, simClient(t, sim).CreateHARule(context.Background(), scheduler.HARule{Name: "admin-nodes", Type: scheduler.HANodeAffinity,
				VMIDs: []int{150}, Nodes: []string{"pve1", "pve2", "pve3"}}))
		}, Config: haDB(env, `node_selector = { zone = "a" }`),
			ExpectError: regexp.MustCompile(`(?s)would refuse an HA rule.*qemuscheduler-vm-150\s+\(keeping\s+node_selector\s+=\s+\{\s+zone\s+=\s+"a"\s+\}\).*admin-nodes`)},
		// Nothing was written: the admin's rule alone.
		resource.TestStep{Config: haDB(env, ""), Check: func(*terraform.State) error {
			if rules := simRules(t, sim); len(rules) != 1 || rules[0].Name != "admin-nodes" {
				return fmt.Errorf("rules %+v, want the admin's alone", rules)
			}
			return nil
		}},
	)
}

// webPair is two HA VMs of the web group, cloned; attrs are more attributes (HCL lines).
func webPair(env *accEnv, attrs string) string {
	return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  count  = 2
  name   = "web-${count.index}"
  memory = 512
  tags   = ["web"]
  %s
  clone {
    source_vmid = 9000
  }
  ha {
    failover = "strict"
  }
}`, attrs))
}

// A rule PVE would refuse is a plan error naming the VM's policy and the conflicting rule:
// here an admin's positive rule over two VMs the configuration then keeps apart.
func TestAccVMHARulesConflictAtPlan(t *testing.T) {
	env, sim := simEnv(t, haRulesCluster())
	together := webPair(env, "")
	runSteps(t,
		resource.TestStep{Config: together},
		resource.TestStep{PreConfig: func() {
			must(t, simClient(t, sim).CreateHARule(context.Background(), scheduler.HARule{Name: "admin-pair", Type: scheduler.HAResourceAffinity,
				Affinity: scheduler.HAPositive, VMIDs: []int{100, 101}}))
		}, Config: haGroup(env, 2, ""),
			ExpectError: regexp.MustCompile(`(?s)would refuse an HA rule.*qemuscheduler-apart-web.*required\s+vm_anti_affinity\s+on\s+tags\s+web.*admin-pair`)},
		resource.TestStep{Config: together, Check: func(*terraform.State) error {
			for _, r := range simRules(t, sim) {
				if r.Name == apartWeb {
					return fmt.Errorf("the refused rule was written: %+v", r)
				}
			}
			return nil
		}},
	)
}

// Three terraform processes each add one VM to the same group at once: the rule ends up
// holding all three, whatever the order of their writes (digest, retry on conflict).
func TestAccVMHARulesThreeProcesses(t *testing.T) {
	env, sim := simEnv(t, haRulesCluster(), pvesim.WithTaskDuration(100*time.Millisecond))
	concurrentApplies(t, []string{"a", "b", "c"}, func(run string) string { return haVM(env, "web-"+run, "1", "", strictFailover) }, func() error {
		var web []int
		for _, id := range sim.Guests() {
			if id != 9000 {
				web = append(web, id)
			}
		}
		for _, r := range simRules(t, sim) {
			got := slices.Clone(r.VMIDs)
			sort.Ints(got)
			if r.Name == apartWeb && slices.Equal(got, web) && len(web) == 3 {
				return nil
			}
		}
		return fmt.Errorf("the rule does not hold the three VMs %v: %+v", web, simRules(t, sim))
	})
}

// A changed pin of an HA-managed VM is a plan error where the HA manager would refuse the
// move: next to a negative peer, running there or being moved there by the HA manager, or
// outside its node rule.
func TestCheckHAMove(t *testing.T) {
	snap := scheduler.Snapshot{Guests: []scheduler.Guest{{VMID: 150, Node: "pve1", Type: scheduler.GuestQEMU}, {VMID: 151, Node: "pve2", Type: scheduler.GuestQEMU}}}
	rules := []scheduler.HARule{
		{Name: "apart", Type: scheduler.HAResourceAffinity, Affinity: scheduler.HANegative, VMIDs: []int{150, 151}},
		{Name: "pin", Type: scheduler.HANodeAffinity, Strict: true, VMIDs: []int{150}, Nodes: []string{"pve1", "pve2", "pve3"}},
	}
	ha := haBlockOf("started", 1, 1, types.StringNull())
	state := &vmresource.Model{Node: types.StringValue("pve1"), HA: ha}
	check := func(moves map[int]string, cases map[string]string) {
		snap.HAMoves = moves
		for target, want := range cases {
			var diags diag.Diagnostics
			vmresource.CheckHAMove(snap, rules, &vmresource.Model{Node: types.StringValue(target), HA: ha}, state, 150, &diags)
			if got := fmt.Sprint(diags.Errors()); (want == "") != !diags.HasError() || !strings.Contains(got, want) {
				t.Errorf("move to %s (HA moves %v): %v, want %q", target, moves, diags, want)
			}
		}
	}
	check(nil, map[string]string{"pve2": "vm 151 runs there", "pve4": "allows only pve1, pve2, pve3", "pve3": "", "pve1": ""})
	check(map[int]string{151: "pve3"}, map[string]string{"pve3": "the HA manager is moving vm 151 there", "pve2": "vm 151 runs there"})
	// Not HA-managed after the plan: a plain migration, none of the HA manager's business.
	var diags diag.Diagnostics
	vmresource.CheckHAMove(snap, rules, &vmresource.Model{Node: types.StringValue("pve2")}, state, 150, &diags)
	if diags.HasError() {
		t.Errorf("leaving HA: %v", diags)
	}
}

// A changed pin to a lower priority node of an admin's node rule, while a higher one is
// online, is a plan error: the HA manager would move the VM back (failback). With the HA
// resource's failback off the pin is kept.
func TestCheckHAMovePriorities(t *testing.T) {
	snap := scheduler.Snapshot{Guests: []scheduler.Guest{{VMID: 150, Node: "pve1", Type: scheduler.GuestQEMU}}}
	for _, n := range []string{"pve1", "pve2", "pve3"} {
		snap.Nodes = append(snap.Nodes, scheduler.Node{Name: n, Online: true})
	}
	rules := []scheduler.HARule{{Name: "prefer", Type: scheduler.HANodeAffinity, Strict: true, VMIDs: []int{150},
		Nodes: []string{"pve1", "pve2"}, Priorities: map[string]int{"pve1": 2}}}
	ha := haBlockOf("started", 1, 1, types.StringNull())
	state := &vmresource.Model{Node: types.StringValue("pve3"), HA: ha}
	move := func(target string) diag.Diagnostics {
		var diags diag.Diagnostics
		vmresource.CheckHAMove(snap, rules, &vmresource.Model{Node: types.StringValue(target), HA: ha}, state, 150, &diags)
		return diags
	}
	want := "HA rule prefer (node-affinity): pve2 has priority 0, the HA manager moves the VM back to pve1 (priority 2)"
	if diags := move("pve2"); !strings.Contains(fmt.Sprint(diags.Errors()), want) || diags.Errors()[0].Summary() != "Cannot migrate to pve2" {
		t.Errorf("pin to pve2: %v, want %q", diags, want)
	}
	if diags := move("pve1"); diags.HasError() {
		t.Errorf("pin to pve1, the top priority: %v", diags)
	}
	snap.HAFailbackOff = map[int]bool{150: true}
	if diags := move("pve2"); diags.HasError() {
		t.Errorf("pin to pve2 with failback off: %v", diags)
	}
}

// PVE 8 keeps no rules: one warning per provider process, however many VMs want rules.
func TestWarnPVE8Once(t *testing.T) {
	var c config.HACache
	var diags diag.Diagnostics
	c.WarnPVE8(&diags)
	c.WarnPVE8(&diags)
	if len(diags) != 1 || diags.HasError() || !strings.Contains(diags[0].Detail(), "PVE 8") {
		t.Fatalf("diagnostics %v, want one warning", diags)
	}
}

// processWarnings logs the warnings of each provider process (each Terraform command starts
// one) apart.
type processWarnings struct {
	mu    sync.Mutex
	procs []*warningLog
}

func (p *processWarnings) factories() map[string]func() (tfprotov6.ProviderServer, error) {
	return map[string]func() (tfprotov6.ProviderServer, error){"qemuscheduler": func() (tfprotov6.ProviderServer, error) {
		log := &warningLog{}
		p.mu.Lock()
		p.procs = append(p.procs, log)
		p.mu.Unlock()
		s, err := providerserver.NewProtocol6WithError(New("test")())()
		return warningServer{s, log}, err
	}}
}

// count is how many warnings hold summary in each process.
func (p *processWarnings) count(summary string) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]int, len(p.procs))
	for i, log := range p.procs {
		log.mu.Lock()
		for _, text := range log.texts {
			if strings.HasPrefix(text, summary+":") {
				out[i]++
			}
		}
		log.mu.Unlock()
	}
	return out
}

// PVE 8 (no /cluster/ha/rules): three HA VMs kept apart, which want a rule, plan with one
// warning per provider process, not one per VM, and no rules request other than the reads is
// made, through the create, a replan and the destroy; ha.rules stays empty.
func TestAccVMHARulesPVE8(t *testing.T) {
	c := haRulesCluster()
	c.HARules = nil // PVE 8
	env, sim := simEnv(t, c)
	var procs processWarnings
	const summary = "No HA rules on this Proxmox VE"
	noWrites := func() error {
		for _, w := range []string{"POST /cluster/ha/rules", "PUT /cluster/ha/rules/{rule}", "DELETE /cluster/ha/rules/{rule}"} {
			if n := sim.Requests(w); n != 0 {
				return fmt.Errorf("%d requests %s on PVE 8", n, w)
			}
		}
		return nil
	}
	warnedOnce := func(*terraform.State) error {
		counts := procs.count(summary)
		warned := 0
		for _, n := range counts {
			if n > 1 {
				return fmt.Errorf("a provider process warned %d times: %v", n, counts)
			}
			warned += n
		}
		if warned == 0 {
			return fmt.Errorf("no process warned %q: %v", summary, counts)
		}
		return nil
	}
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: procs.factories(),
		Steps: []resource.TestStep{
			// The plan of the create warns already: the group will want its rule.
			{Config: haGroup(env, 3, ""), Check: resource.ComposeTestCheckFunc(apartOnNodes(sim, 100, 101, 102), warnedOnce)},
			// The three are HA resources now: each wants the group's rule.
			{Config: haGroup(env, 3, ""), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr("qemuscheduler_vm.web.0", "ha.rules.#", "0"),
					resource.TestCheckResourceAttr("qemuscheduler_vm.web.2", "ha.rules.#", "0"),
					warnedOnce,
					func(*terraform.State) error {
						if sim.Requests("GET /cluster/ha/rules") == 0 {
							return fmt.Errorf("the rules were never read")
						}
						return noWrites()
					},
				)},
		},
		CheckDestroy: func(*terraform.State) error { return noWrites() },
	})
}

// The pre-write check names PVE's refusal of a group rule over a VM an admin's node rule
// holds with two priority classes, and the admin's rule.
func TestRefusalsMultiplePriorities(t *testing.T) {
	admin := scheduler.HARule{Name: "admin-prefer", Type: scheduler.HANodeAffinity, VMIDs: []int{100}, Nodes: []string{"pve1", "pve2"},
		Priorities: map[string]int{"pve1": 2}}
	apart := scheduler.HARule{Name: apartWeb, Type: scheduler.HAResourceAffinity, Affinity: scheduler.HANegative, VMIDs: []int{100, 101}}
	changes := []harules.Change{{Op: harules.Create, Rule: apart, Policy: "required vm_anti_affinity on tags web with topology_key node"}}
	got := vmresource.Refusals(changes, []scheduler.HARule{admin}, 3)
	want := "HA rule qemuscheduler-apart-web (keeping required vm_anti_affinity on tags web with topology_key node): " +
		"resources are in node affinity rules with multiple priorities (with rule admin-prefer)"
	if len(got) != 1 || got[0] != want {
		t.Fatalf("refusals %q, want %q", got, want)
	}
	admin.Priorities["pve2"] = 2 // one class
	if got := vmresource.Refusals(changes, []scheduler.HARule{admin}, 3); len(got) != 0 {
		t.Fatalf("one priority class: refusals %q", got)
	}
}

// A pin moved next to a negative peer that the HA manager is moving there (vm 101 leaving
// pve2 for maintenance towards pve3) is a plan error, as PVE's CRM would refuse the
// migration; once the move is over and the peer is back, the pins plan as before.
func TestAccVMHARulesPinNextToMovingPeer(t *testing.T) {
	env, sim := simEnv(t, haRulesCluster())
	config := func(a, b string) string {
		return haVM(env, "web-${count.index}", "2", fmt.Sprintf("node = [%q, %q][count.index]", a, b), strictFailover)
	}
	runSteps(t,
		resource.TestStep{Config: config("pve1", "pve2"), Check: ruleHolds(t, sim, apartWeb, "negative", 2)},
		resource.TestStep{PreConfig: func() {
			sim.HoldTasks()
			must(t, sim.SetNodeHAState("pve2", "maintenance"))
			if moves, err := simClient(t, sim).HAMoves(context.Background()); err != nil || moves[101] != "pve3" {
				t.Fatalf("HA moves %v, %v; want vm 101 moving to pve3", moves, err)
			}
		}, Config: config("pve3", "pve2"), ExpectError: regexp.MustCompile(`(?s)Cannot migrate to pve3.*the\s+HA\s+manager\s+is\s+moving\s+vm\s+101\s+there.*terraform\s+destroy\s+-refresh=false`)},
		resource.TestStep{PreConfig: func() {
			sim.ReleaseTasks()
			must(t, sim.SetNodeHAState("pve2", "online"))
		}, Config: config("pve1", "pve2"), Check: apartOnNodes(sim, 100, 101)},
	)
}

// Two HA VMs kept together on a node, each allowed only pve1-pve3: one positive rule over the
// pair, whichever has the term, and one node rule for both (PVE allows a positive group in one
// node-affinity rule only, of one priority class), so both applies succeed, and a failover
// moves the pair together onto an allowed node.
func TestAccVMHARulesPositivePairSharesOneNodeRule(t *testing.T) {
	env, sim := simEnv(t, haRulesCluster())
	config := env.config(`resource "qemuscheduler_vm" "web" {
  count       = 2
  name        = "pair-${count.index}"
  memory      = 512
  tags        = ["web"]
  annotations = { "node.qemu-scheduler/regex" = "pve[1-3]" }
  clone {
    source_vmid = 9000
  }
  vm_affinity {
    tags = ["web"]
  }
  ha {}
}`)
	nodeRules := func(*terraform.State) error {
		var names []string
		for _, r := range simRules(t, sim) {
			if r.Type == scheduler.HANodeAffinity {
				names = append(names, r.Name)
			}
		}
		if len(names) != 1 || !slices.Equal(simRuleNodes(t, sim, names[0]), []string{"pve1", "pve2", "pve3"}) {
			return fmt.Errorf("node rules %v, want one on pve1-pve3", names)
		}
		return nil
	}
	runSteps(t,
		resource.TestStep{Config: config, Check: resource.ComposeTestCheckFunc(ruleHolds(t, sim, "qemuscheduler-together-web-100-101", "positive", 2), nodeRules)},
		resource.TestStep{Config: config, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
		resource.TestStep{PreConfig: func() {
			g, _ := sim.Guest(100)
			_, err := sim.FailNode(g.Node)
			must(t, err)
		}, Config: config, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check: func(*terraform.State) error {
				a, _ := sim.Guest(100)
				b, _ := sim.Guest(101)
				if a.Node != b.Node || a.Node == "pve4" {
					return fmt.Errorf("after the failover the pair runs on %s and %s, want one node of pve1-pve3", a.Node, b.Node)
				}
				return nil
			}},
	)
}

// simRuleNodes are the nodes of the cluster's rule id.
func simRuleNodes(t *testing.T, sim *pvesim.Server, id string) []string {
	for _, r := range simRules(t, sim) {
		if r.Name == id {
			nodes := slices.Clone(r.Nodes)
			sort.Strings(nodes)
			return nodes
		}
	}
	return nil
}

// A VM updated in the apply that a peer created earlier (depends_on) put into the group's rule
// records the rule: its ha.rules, planned unknown as its vCPUs change (the nodes its node rule
// may list), is what its own write of the rules leaves it in. An update the rules do not read
// (description, memory, a tag no group selects by) plans them as the state has them, and
// applies so.
func TestAccVMHARulesPeerWritesBeforeUpdate(t *testing.T) {
	env, sim := simEnv(t, haRulesCluster())
	config := func(attrs, tags string, peer bool) string {
		vm := func(name string, vmid int, attrs, tags, extra string) string {
			return fmt.Sprintf(`resource "qemuscheduler_vm" %q {
  name   = %q
  vmid   = %d
  %s
  tags   = [%s]
  clone {
    source_vmid = 9000
  }
  vm_anti_affinity {
    tags = ["web"]
  }
  ha {
    failover = "strict"
  }
  %s
}
`, name, name, vmid, attrs, tags, extra)
		}
		hcl := vm("old", 100, attrs, tags, "")
		if peer {
			hcl = vm("old", 100, attrs, tags, "depends_on = [qemuscheduler_vm.peer]") + vm("peer", 101, "", `"web"`, "")
		}
		return env.config(hcl)
	}
	both := func(*terraform.State) error {
		for _, r := range simRules(t, sim) {
			if r.Name == apartWeb && slices.Equal(r.VMIDs, []int{100, 101}) {
				return nil
			}
		}
		return fmt.Errorf("no rule %s over 100 and 101: %+v", apartWeb, simRules(t, sim))
	}
	grown := "cores = 2\n  memory = 768\n  description = \"web tier\""
	runSteps(t,
		resource.TestStep{Config: config("", `"web"`, false), Check: resource.TestCheckResourceAttr("qemuscheduler_vm.old", "ha.rules.#", "0")},
		resource.TestStep{Config: config("cores = 2", `"web"`, true), Check: resource.ComposeTestCheckFunc(
			resource.TestCheckResourceAttr("qemuscheduler_vm.old", "ha.rules.0.id", apartWeb),
			resource.TestCheckResourceAttr("qemuscheduler_vm.peer", "ha.rules.0.id", apartWeb), both)},
		resource.TestStep{Config: config("cores = 2", `"web"`, true), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check: resource.TestCheckResourceAttr("qemuscheduler_vm.old", "ha.rules.0.id", apartWeb)},
		resource.TestStep{Config: config(grown, `"web", "blue"`, true), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plancheck.ExpectResourceAction("qemuscheduler_vm.old", plancheck.ResourceActionUpdate),
			plancheck.ExpectKnownValue("qemuscheduler_vm.old", tfjsonpath.New("ha").AtMapKey("rules"), knownvalue.ListExact([]knownvalue.Check{knownvalue.ObjectPartial(map[string]knownvalue.Check{"id": knownvalue.StringExact(apartWeb)})})),
		}}, Check: both},
		resource.TestStep{Config: config(grown, `"web", "blue"`, true), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check: resource.TestCheckResourceAttr("qemuscheduler_vm.old", "ha.rules.0.id", apartWeb)},
	)
}

// Placement is sticky for an HA VM too: a node_selector its node no longer passes keeps that
// node in the VM's node rule (besides the nodes that pass), so the HA manager does not move
// the VM away on its own, which no plan showed; the plan warns as for any VM.
func TestAccVMHARulesStickyNodeSelector(t *testing.T) {
	env, sim := simEnv(t, haRulesCluster())
	config := func(zone string) string { return haDB(env, fmt.Sprintf("node_selector = { zone = %q }", zone)) }
	var node string
	stays := func(*terraform.State) error {
		// The HA manager runs a round after each read.
		for range 5 {
			if _, err := simClient(t, sim).HAResources(context.Background()); err != nil {
				return err
			}
		}
		if g, _ := sim.Guest(150); g.Node != node {
			return fmt.Errorf("VM 150 moved from %s to %s", node, g.Node)
		}
		for _, r := range simRules(t, sim) {
			if r.Name == "qemuscheduler-vm-150" && slices.Equal(r.Nodes, []string{"pve1", "pve2", node}) {
				return nil
			}
		}
		return fmt.Errorf("no node rule for VM 150 on zone a and %s: %+v", node, simRules(t, sim))
	}
	runSteps(t,
		resource.TestStep{Config: config("b"), Check: func(*terraform.State) error {
			g, _ := sim.Guest(150)
			node = g.Node
			return nil
		}},
		// The VM's own node rule is decided at plan: the plan shows it as the apply writes it.
		resource.TestStep{Config: config("a"), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plannedDBRule(func() []string { return []string{"pve1", "pve2", node} })}}, Check: stays},
		resource.TestStep{Config: config("a"), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check: stays},
	)
}

// plannedDBRule checks that the plan of VM 150 (qemuscheduler_vm.db) has its ha.rules known:
// its own node rule on exactly nodes(), read when the plan is checked.
func plannedDBRule(nodes func() []string) plancheck.PlanCheck {
	return planChangeCheck(func(rc *tfjson.ResourceChange) error {
		if rc.Address != "qemuscheduler_vm.db" {
			return nil
		}
		if unknown, _ := rc.Change.AfterUnknown.(map[string]any)["ha"].(map[string]any); unknown["rules"] != nil {
			return fmt.Errorf("ha.rules planned unknown (%v), want known", unknown["rules"])
		}
		ha, _ := rc.Change.After.(map[string]any)["ha"].(map[string]any)
		rules, _ := ha["rules"].([]any)
		if len(rules) != 1 {
			return fmt.Errorf("planned ha.rules %v, want one rule", ha["rules"])
		}
		rule, _ := rules[0].(map[string]any)
		planned, _ := rule["nodes"].(map[string]any)
		if rule["id"] != "qemuscheduler-vm-150" || rule["type"] != "node-affinity" || rule["affinity"] != nil ||
			!slices.Equal(slices.Sorted(maps.Keys(planned)), nodes()) || fmt.Sprint(rule["resources"]) != "[vm:150]" {
			return fmt.Errorf("planned ha.rules %v, want the node rule of VM 150 on %v", rules, nodes())
		}
		return nil
	})
}

// planChangeCheck runs check on each resource change of a plan.
type planChangeCheck func(*tfjson.ResourceChange) error

func (f planChangeCheck) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	for _, rc := range req.Plan.ResourceChanges {
		if resp.Error = f(rc); resp.Error != nil {
			return
		}
	}
}

// A state written with ha.rules as ids (schema version 1) is upgraded and refreshed: the
// rules read in full, and the plan of the unchanged VM is empty.
func TestAccVMHARulesStateUpgrade(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TF_ACC_TEMP_DIR", dir) // where the steps' state file is, to write it as version 1 did
	env, _ := simEnv(t, haRulesCluster())
	config := haDB(env, `node_selector = { zone = "a" }`)
	runSteps(t,
		resource.TestStep{Config: config},
		resource.TestStep{PreConfig: func() { writeRuleIDs(t, dir) }, Config: config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check: resource.ComposeTestCheckFunc(
				resource.TestCheckResourceAttr("qemuscheduler_vm.db", "ha.rules.#", "1"),
				resource.TestCheckResourceAttr("qemuscheduler_vm.db", "ha.rules.0.id", "qemuscheduler-vm-150"),
				resource.TestCheckResourceAttr("qemuscheduler_vm.db", "ha.rules.0.type", "node-affinity"),
				resource.TestCheckResourceAttr("qemuscheduler_vm.db", "ha.rules.0.nodes.%", "2"),
				resource.TestCheckResourceAttrSet("qemuscheduler_vm.db", "ha.rules.0.nodes.pve1"),
				resource.TestCheckResourceAttr("qemuscheduler_vm.db", "ha.rules.0.resources.0", "vm:150"),
				resource.TestCheckNoResourceAttr("qemuscheduler_vm.db", "ha.rules.0.affinity"))},
	)
}

// writeRuleIDs rewrites the state file under dir as schema version 1 wrote it: ha.rules the
// rules' ids.
func writeRuleIDs(t *testing.T, dir string) {
	t.Helper()
	var file string
	must(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "terraform.tfstate" {
			file = path
		}
		return err
	}))
	raw, err := os.ReadFile(file)
	must(t, err)
	var state map[string]any
	must(t, json.Unmarshal(raw, &state))
	resources, _ := state["resources"].([]any)
	for _, r := range resources {
		r, _ := r.(map[string]any)
		for _, inst := range r["instances"].([]any) {
			inst, _ := inst.(map[string]any)
			ha, _ := inst["attributes"].(map[string]any)["ha"].(map[string]any)
			rules, _ := ha["rules"].([]any)
			for i, rule := range rules {
				rules[i] = rule.(map[string]any)["id"]
			}
			inst["schema_version"] = 1
		}
	}
	raw, err = json.Marshal(state)
	must(t, err)
	must(t, os.WriteFile(file, raw, 0o600))
}

// A group rule that the VMs' placement breaks (two VMs on one node, then one keeps apart from
// the other) makes PVE's HA manager move one of them once it is written: the plan's warning
// says so, where it said that the VM stays; afterwards they run apart, and the member without
// the term of its own stays in the rule.
func TestAccVMHARulesBreakWarns(t *testing.T) {
	env, sim := simEnv(t, haRulesCluster())
	config := func(apart bool) string {
		node, rule := `node = "pve1"`, ""
		if apart {
			node, rule = "", `dynamic "vm_anti_affinity" {
    for_each = count.index == 0 ? [1] : []
    content {
      tags = ["web"]
    }
  }`
		}
		return webPair(env, node+"\n  "+rule)
	}
	log := &warningLog{}
	runLoggingWarnings(t, log,
		resource.TestStep{Config: config(false)},
		resource.TestStep{Config: config(true), ExpectNonEmptyPlan: true, Check: resource.ComposeTestCheckFunc(
			log.has("VM 100 no longer fits its node", "Placement is sticky, but HA rule "+apartWeb+
				" (negative resource affinity) holds it with VM 101 on pve1", "this VM or its peer leaves once the rule is written"),
			ruleHolds(t, sim, apartWeb, "negative", 2))},
		// web-1's pin was dropped with no change of its own (unpinning is free), so its pin stays
		// recorded until an apply of it; the rule this apply wrote had the HA manager move it off
		// its old pin, which this plan records (its node planned unknown, then where it runs).
		resource.TestStep{Config: config(true)},
		// web-1 declares no anti-affinity but stays in the rule web-0's record keeps it in:
		// no change, where each apply of one took out what the other's put in.
		resource.TestStep{Config: config(true), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check: resource.ComposeTestCheckFunc(apartOnNodes(sim, 100, 101), ruleHolds(t, sim, apartWeb, "negative", 2))},
	)
}

// apartWebState is the state of web-0, VM 100 on pve1, HA-managed with strict failover and
// kept apart from the web group on nodes, in the group's rule.
func apartWebState() *vmresource.Model {
	m := existingVM()
	m.ID, m.VMID, m.Node, m.Name = types.StringValue("100"), types.Int64Value(100), types.StringValue("pve1"), types.StringValue("web-0")
	m.PlacementSummary = types.StringValue("web-0: pve1")
	m.Tags = types.SetValueMust(types.StringType, stringValues([]string{"web"}))
	m.VMAntiAffinity = []scheduling.VMGroupTermModel{{GroupSelectorModel: scheduling.GroupSelectorModel{Tags: types.ListValueMust(types.StringType, stringValues([]string{"web"})),
		TagsAnyOf: types.ListNull(types.StringType), TagsNoneOf: types.ListNull(types.StringType)}, TopologyKey: types.StringValue("node"), Weight: types.Int64Null()}}
	m.HA = haBlockOf("started", 1, 1, types.StringNull())
	m.HA.Failover = types.StringValue(harules.FailoverStrict)
	m.HA.Rules = apartWebRules()
	return m
}

// apartWebRules is web-0's ha.rules in apartWebCluster: the web group's rule over VMs 100 and 101.
func apartWebRules() types.List {
	return scheduling.HARulesValue([]scheduler.HARule{apartWebRule()})
}

// apartWebRule is the web group's rule over VMs 100 and 101.
func apartWebRule() scheduler.HARule {
	return scheduler.HARule{Name: apartWeb, Type: scheduler.HAResourceAffinity, Affinity: scheduler.HANegative, VMIDs: []int{100, 101}}
}

// apartWebCluster is a PVE 9 cluster of three nodes running web-0 to web-2 (VMs 100 to 102),
// the first two HA resources in the web group's rule as web-0 wants it: a client for it.
func apartWebCluster(t *testing.T) *proxmox.Client {
	ctx := context.Background()
	c := pvesim.Cluster{HARules: []pvesim.HARuleSpec{}, Storages: []pvesim.StorageSpec{{Name: "ceph", Type: "rbd", Content: []string{"images"}, Shared: true, SizeGiB: 2000}}}
	for i := 1; i <= 3; i++ {
		node := fmt.Sprintf("pve%d", i)
		c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: node, CPUs: 8, MemoryGiB: 16})
		c.Guests = append(c.Guests, pvesim.GuestSpec{VMID: 99 + i, Node: node, Name: fmt.Sprintf("web-%d", i-1), Status: "running", Cores: 1,
			MemoryMiB: 512, Tags: []string{"web"}, Config: map[string]string{"scsi0": "ceph:vm-disk,size=20G"}})
	}
	client := simClient(t, pvesim.NewTestServer(t, c))
	for _, vmid := range []int{100, 101} {
		must(t, client.AddHAResource(ctx, vmid, proxmox.HASettings{State: "started", MaxRestart: 1, MaxRelocate: 1}))
	}
	must(t, client.CreateHARule(ctx, scheduler.HARule{Name: apartWeb, Type: scheduler.HAResourceAffinity, Affinity: scheduler.HANegative,
		VMIDs: []int{100, 101}, Comment: "qemuscheduler: VMs tagged web apart (required vm_anti_affinity)"}))
	return client
}

// A refresh finds a write due when the VM's rules are not as it wants them: none while they
// are, one after its rule was changed or deleted outside Terraform; with placement_rules off,
// none, as the rules peers put it in are theirs.
func TestRulesDue(t *testing.T) {
	ctx := context.Background()
	client := apartWebCluster(t)
	r := planResource(client)
	due := func(m *vmresource.Model) bool {
		t.Helper()
		got, tags, err := r.RulesDue(ctx, m)
		must(t, err)
		if tags == nil {
			t.Error("no group tags recorded")
		}
		return got
	}
	off := apartWebState()
	off.HA.PlacementRules = types.BoolValue(false)
	if due(apartWebState()) || due(off) {
		t.Fatal("a write due with the rules in sync")
	}
	set, err := client.ReadHARules(ctx)
	must(t, err)
	edited := set.Rules[0]
	edited.Affinity = scheduler.HAPositive
	must(t, client.UpdateHARule(ctx, edited, set.Digest))
	if !due(apartWebState()) {
		t.Error("no write due after the rule's affinity was changed outside")
	}
	must(t, client.DeleteHARule(ctx, apartWeb))
	if !due(apartWebState()) {
		t.Error("no write due after the rule was deleted outside")
	}
	if due(off) {
		t.Error("a write due for a VM whose placement_rules are off")
	}
}

// Terraform plans a change again at apply, right before applying it, when peers of the same
// apply may have written; what the first plan had known must come out the same ("Provider
// produced inconsistent final plan"). Here web-0, in its group's rule, is planned while a peer
// joins the group: the peer's HA resource is registered, its write of the rule still to come,
// when web-0 is planned again. Its ha.rules must not follow the cluster of that moment, with
// a change of its own (the memory) or none.
func TestPlannedRulesHoldWhilePeersWrite(t *testing.T) {
	ctx := context.Background()
	client := apartWebCluster(t)
	grown := apartWebState()
	grown.Memory = types.Int64Value(768)
	grown.HA.Rules = types.ListUnknown(scheduling.HARuleType) // as the framework plans a computed attribute of a change
	for _, tt := range []struct {
		name string
		plan *vmresource.Model
	}{{"no change", apartWebState()}, {"memory grown", grown}} {
		t.Run(tt.name, func(t *testing.T) {
			r := planResource(client)
			planned := func() types.List { return plannedRules(t, r, apartWebState(), tt.plan) }
			first := planned()
			must(t, client.AddHAResource(ctx, 102, proxmox.HASettings{State: "started", MaxRestart: 1, MaxRelocate: 1}))
			defer func() { must(t, client.RemoveHAResource(ctx, 102)) }()
			if again := planned(); !first.IsUnknown() && !again.Equal(first) {
				t.Errorf("planned ha.rules %s, then %s at apply", first, again)
			}
		})
	}
}

// An update that cannot change which rules the VM is in (its description, its memory) plans
// the state's ha.rules, not "known after apply" in every plan of an HA VM; one that changes
// its policy, its groups (tags) or its size plans them as the configuration, the state and the
// cluster read at plan decide them while no peer changes in the same plan, and unknown beside
// a peer's change (here web-1's destroy, planned first), as its group's rule depends on its
// peers and the plan Terraform makes again at apply must come out the same; one that takes it
// out of the rules (placement_rules off, HA ignoring it) plans none.
func TestPlannedRulesOfAnUpdate(t *testing.T) {
	client := apartWebCluster(t)
	change := func(edit func(m *vmresource.Model)) *vmresource.Model {
		m := apartWebState()
		m.HA.Rules = types.ListUnknown(scheduling.HARuleType) // as the framework plans a computed attribute of a change
		edit(m)
		return m
	}
	none, unknownRules := scheduling.HARulesValue(nil), types.ListUnknown(scheduling.HARuleType)
	ownZoneA := scheduling.HARulesValue([]scheduler.HARule{apartWebRule(), {Name: "qemuscheduler-vm-100", Type: scheduler.HANodeAffinity,
		Nodes: []string{"pve1"}, Strict: true, VMIDs: []int{100}}})
	tests := []struct {
		name string
		plan *vmresource.Model
		// alone: planned alone; beside: after a peer's destroy (the state's, unknown, or none)
		alone, beside types.List
	}{
		{"description", change(func(m *vmresource.Model) { m.Description = types.StringValue("the web tier") }), apartWebRules(), apartWebRules()},
		{"memory", change(func(m *vmresource.Model) { m.Memory = types.Int64Value(768) }), apartWebRules(), apartWebRules()},
		{"ha comment", change(func(m *vmresource.Model) { m.HA.Comment = types.StringValue("web") }), apartWebRules(), apartWebRules()},
		{"tags", change(func(m *vmresource.Model) {
			m.Tags = types.SetValueMust(types.StringType, stringValues([]string{"web", "blue"}))
		}), apartWebRules(), unknownRules},
		{"cores", change(func(m *vmresource.Model) { m.Cores = types.Int64Value(2) }), apartWebRules(), unknownRules},
		{"anti-affinity over zones", change(func(m *vmresource.Model) { m.VMAntiAffinity[0].TopologyKey = types.StringValue("zone") }), none, unknownRules},
		{"node selector", change(func(m *vmresource.Model) {
			m.NodeSelector = types.MapValueMust(types.StringType, map[string]attr.Value{"zone": types.StringValue("a")})
		}), ownZoneA, unknownRules},
		{"placement_rules off", change(func(m *vmresource.Model) { m.HA.PlacementRules = types.BoolValue(false) }), none, none},
		{"HA ignores it", change(func(m *vmresource.Model) { m.HA.State = types.StringValue("ignored") }), none, none},
	}
	for _, tt := range tests {
		for _, peer := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/peer destroyed %t", tt.name, peer), func(t *testing.T) {
				r, want := planResource(client), tt.alone
				if peer {
					web1 := apartWebState()
					web1.ID, web1.VMID, web1.Node, web1.Name = types.StringValue("101"), types.Int64Value(101), types.StringValue("pve2"), types.StringValue("web-1")
					if resp := modifyPlan(t, r, web1, nil); resp.Diagnostics.HasError() {
						t.Fatalf("plan of the destroy: %v", resp.Diagnostics)
					}
					want = tt.beside
				}
				if rules := plannedRules(t, r, apartWebState(), tt.plan); !rules.Equal(want) {
					t.Errorf("planned ha.rules %s, want %s", rules, want)
				}
			})
		}
	}
}

// plannedRules is the ha.rules r's plan of the change from state to plan plans.
func plannedRules(t *testing.T, r *vmresource.Resource, state, plan *vmresource.Model) types.List {
	t.Helper()
	resp := modifyPlan(t, r, state, plan)
	if resp.Diagnostics.HasError() {
		t.Fatalf("plan: %v", resp.Diagnostics)
	}
	var rules types.List
	if d := resp.Plan.GetAttribute(context.Background(), path.Root("ha").AtName("rules"), &rules); d.HasError() {
		t.Fatal(d)
	}
	return rules
}

// A tag change moves the VM into or out of a group rule only where a group selects by that
// tag: its own terms, or the terms the last refresh found in the cluster's placement records
// (rulesRecord.groupTags). Other tags plan ha.rules as the state has them; before any refresh
// recorded the groups' tags, every tag change counts.
func TestRulesInputsSameTags(t *testing.T) {
	ctx := context.Background()
	r := planResource(apartWebCluster(t))
	tagged := func(tags ...string) *vmresource.Model {
		m := apartWebState()
		m.Tags = types.SetValueMust(types.StringType, stringValues(tags))
		return m
	}
	peers := vmresource.RulesRecord{GroupTags: []string{"db"}, TagsKnown: true} // a peer's record keeps VMs tagged db apart
	tests := []struct {
		name string
		plan *vmresource.Model
		rec  vmresource.RulesRecord
		same bool
	}{
		{"a tag no group reads", tagged("web", "blue"), peers, true},
		{"its own group's tag dropped", tagged("blue"), peers, false},
		{"its own group's tag, in other case", tagged("WEB"), peers, true},
		{"a tag a peer's group reads", tagged("web", "DB"), peers, false},
		{"the groups' tags not recorded yet", tagged("web", "blue"), vmresource.RulesRecord{}, false},
		{"tags known after apply", func() *vmresource.Model { m := apartWebState(); m.Tags = types.SetUnknown(types.StringType); return m }(), peers, false},
	}
	for _, tt := range tests {
		var d diag.Diagnostics
		req, _, _ := r.Request(ctx, tt.plan, false, &d)
		if d.HasError() {
			t.Fatal(d)
		}
		if got := r.RulesInputsSame(ctx, tt.plan, apartWebState(), req, tt.rec); got != tt.same {
			t.Errorf("%s: same %t, want %t", tt.name, got, tt.same)
		}
	}
}

func stringValues(names []string) []attr.Value {
	out := make([]attr.Value, len(names))
	for i, n := range names {
		out[i] = types.StringValue(n)
	}
	return out
}

package provider

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// spreadConfig is HA web VMs (100, 101, ...) pinned to nodes, one a node, apart on nodes
// and spread over the zones (haRulesCluster: pve1 and pve2 in zone a, pve3 and pve4 in zone b).
func spreadConfig(env *accEnv, nodes ...string) string {
	attrs := fmt.Sprintf(`vmid = 100 + count.index
  node = [%s][count.index]
  topology_spread {
    tags         = ["web"]
    topology_key = "zone"
  }`, strings.Join(quoted(nodes), ", "))
	return env.providerBlock("  read_node_notes = true") + haWebResource("web-${count.index}", strconv.Itoa(len(nodes)), attrs, "ha {}")
}

// quoted is each string as an HCL string.
func quoted(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strconv.Quote(s)
	}
	return out
}

// ranks checks that the node rule id lists exactly the nodes of want, with those priorities.
func ranks(t *testing.T, sim *pvesim.Server, id string, want map[string]int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, r := range simRules(t, sim) {
			if r.Name != id {
				continue
			}
			got := map[string]int{}
			for _, n := range r.Nodes {
				got[n] = r.Priorities[n]
			}
			if !maps.Equal(got, want) {
				return fmt.Errorf("rule %s ranks %v, want %v", id, got, want)
			}
			return nil
		}
		return fmt.Errorf("no rule %s in %+v", id, simRules(t, sim))
	}
}

// A pinned move of one member of a zone spread gives it a new home, which the classes of the
// other members count: the apply that moves it rewrites their rules too, each as its own plan
// wants it, and the plan after it is empty. Before: zone a holds web-0 and web-1, zone b web-2;
// web-1 moves to zone b. A member created later is a new home as well.
func TestAccVMHAPeersReranked(t *testing.T) {
	env, sim := simEnv(t, haRulesCluster())
	runSteps(t,
		resource.TestStep{Config: spreadConfig(env, "pve1", "pve2", "pve3"), Check: resource.ComposeAggregateTestCheckFunc(
			// web-0: its zone first, but pve2 holds web-1; zone b has fewer members, but pve3
			// holds web-2.
			ranks(t, sim, "qemuscheduler-vm-100", map[string]int{"pve1": 2, "pve2": 0, "pve3": 0, "pve4": 1}),
			ranks(t, sim, "qemuscheduler-vm-102", map[string]int{"pve1": 0, "pve2": 0, "pve3": 2, "pve4": 2}),
		)},
		resource.TestStep{Config: spreadConfig(env, "pve1", "pve4", "pve3"),
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check: resource.ComposeAggregateTestCheckFunc(
				ranks(t, sim, "qemuscheduler-vm-101", map[string]int{"pve1": 0, "pve2": 1, "pve3": 0, "pve4": 2}),
				// web-0: pve2 is free now, and zone b holds more members than zone a.
				ranks(t, sim, "qemuscheduler-vm-100", map[string]int{"pve1": 2, "pve2": 2, "pve3": 0, "pve4": 0}),
				// web-2: zone a has fewer members now (pve1 holds web-0), pve4 holds web-1.
				ranks(t, sim, "qemuscheduler-vm-102", map[string]int{"pve1": 0, "pve2": 1, "pve3": 2, "pve4": 0}),
			)},
		resource.TestStep{PreConfig: func() { sim.RunHARounds(5) }, Config: spreadConfig(env, "pve1", "pve4", "pve3"),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
		// A member created later counts too: web-3 on pve2 evens the zones, and its create
		// rewrites the others' rules.
		resource.TestStep{Config: spreadConfig(env, "pve1", "pve4", "pve3", "pve2"),
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check: resource.ComposeAggregateTestCheckFunc(
				ranks(t, sim, "qemuscheduler-vm-100", map[string]int{"pve1": 2, "pve2": 0, "pve3": 0, "pve4": 0}),
				ranks(t, sim, "qemuscheduler-vm-101", map[string]int{"pve1": 0, "pve2": 0, "pve3": 0, "pve4": 2}),
				ranks(t, sim, "qemuscheduler-vm-102", map[string]int{"pve1": 0, "pve2": 0, "pve3": 2, "pve4": 0}),
				ranks(t, sim, "qemuscheduler-vm-103", map[string]int{"pve1": 0, "pve2": 2, "pve3": 0, "pve4": 0}),
			)},
	)
}

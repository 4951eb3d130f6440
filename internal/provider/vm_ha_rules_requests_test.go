package provider

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// haRuleRequests counts what the HA rules cost in a step: rules reads, HA resource reads,
// rules writes and the writes that lost a race.
type haRuleRequests struct {
	sim                                     *pvesim.Server
	rulesReads, resourceReads, writes, lost int
}

func (c *haRuleRequests) take() {
	c.rulesReads = c.sim.Requests("GET /cluster/ha/rules")
	c.resourceReads = c.sim.Requests("GET /cluster/ha/resources")
	c.writes, c.lost = 0, 0
	for _, w := range []string{"POST /cluster/ha/rules", "PUT /cluster/ha/rules/{rule}", "DELETE /cluster/ha/rules/{rule}"} {
		c.writes += c.sim.Requests(w)
		c.lost += c.sim.FailedRequests(w)
	}
}

// The HA rules of a 20-VM apply into one group kept apart: at most one successful rules
// write per VM (a create or an update of the group's rule), plus the writes that lost a race
// to the apply's own parallel creates and were made again; the figures go to
// benchmarks/ha-rules.md.
func TestAccRequestsHARules(t *testing.T) {
	const n = 20
	c := pvesim.Cluster{HARules: []pvesim.HARuleSpec{}, Storages: []pvesim.StorageSpec{{Name: "local-lvm", Content: []string{"images"}, SizeGiB: 500}}}
	for i := 1; i <= 24; i++ {
		c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: fmt.Sprintf("pve%d", i), CPUs: 8, MemoryGiB: 16})
	}
	env := newAccEnv(t, c)
	sim := env.needsSim(t)
	config := env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  count  = %d
  name   = "web-${count.index}"
  memory = 512
  tags   = ["web"]
  vm_anti_affinity {
    tags         = ["web"]
    topology_key = "node"
  }
  ha {
    failover = "strict"
  }
}`, n))
	var before, after haRuleRequests
	before.sim, after.sim = sim, sim
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: steadyProviders,
		Steps: []resource.TestStep{{
			PreConfig: before.take,
			Config:    config,
			ConfigPlanChecks: resource.ConfigPlanChecks{
				PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
			},
			Check: resource.ComposeTestCheckFunc(ruleHolds(t, sim, apartWeb, "negative", n), func(*terraform.State) error {
				after.take()
				reads, resources := after.rulesReads-before.rulesReads, after.resourceReads-before.resourceReads
				t.Logf("apply of %d HA VMs: %d rules writes (%d lost a race), %d rules reads, %d HA resource reads",
					n, after.writes, after.lost, reads, resources)
				if done := after.writes - after.lost; done > n {
					return fmt.Errorf("%d rules writes succeeded for %d VMs, want at most one per VM", done, n)
				}
				return nil
			}),
		}},
	})
}

package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// steadyProviders share one cluster view for longer than any test runs, so that the counts
// of cluster reads below do not depend on the machine's speed (with the default age of 2 s a
// slow run reads more often, a fast one less).
var steadyProviders = map[string]func() (tfprotov6.ProviderServer, error){
	"qemuscheduler": providerserver.NewProtocol6WithError(&qemuProvider{version: "test", snapshotAge: time.Hour}),
}

const clusterReads = "GET /cluster/resources"

// readCounter takes readings of the simulator's cluster-read counter at the points of a test
// step and checks the reads between two of them against a bound.
type readCounter struct {
	t    *testing.T
	sim  *pvesim.Server
	last int
}

// since returns the reads since the last reading, and takes a new one.
func (c *readCounter) since() int {
	now := c.sim.Requests(clusterReads)
	n := now - c.last
	c.last = now
	return n
}

// atMost is a check that the reads since the last reading are at most limit.
func (c *readCounter) atMost(what string, limit int) func() error {
	return func() error {
		n := c.since()
		c.t.Logf("%s: %d cluster reads (at most %d)", what, n, limit)
		if n > limit {
			return fmt.Errorf("%s read /cluster/resources %d times, want at most %d", what, n, limit)
		}
		return nil
	}
}

// planCheck runs a check as a plan check, at the points of a step where plans are made.
type planCheck func() error

func (f planCheck) CheckPlan(_ context.Context, _ plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	resp.Error = f()
}

// Cluster reads of count = N beside a placement data source of N names through Terraform
// (parallelism 10): per apply at most
// ⌈N/10⌉ + 2, per refresh at most 2, per destroy at most 2, per plan at most 1, and at most 5
// for the plan, apply, plans after it and destroy together (the change set's budget). The
// guests still get distinct ids and spread over the nodes.
func TestAccRequestsPerApplyRefreshAndDestroy(t *testing.T) {
	t.Run("20 on 3 nodes", func(t *testing.T) { requestsPerApply(t, 20, equalCluster()) })
	// The change set's own scale: 50 VMs and 50 names on 64 nodes × 10,000 guests.
	t.Run("50 on 64 nodes x 10000 guests", func(t *testing.T) { requestsPerApply(t, 50, scaleCluster(64, 10000)) })
}

func requestsPerApply(t *testing.T, n int, cluster pvesim.Cluster) {
	const parallelism, total = 10, 5
	env, sim := simEnv(t, cluster)
	reads := &readCounter{t: t, sim: sim}
	var start int
	// Beside the VMs, a placement data source places n names of its own in the same plan: the
	// change set decides them together, with no read of their own.
	config := env.config(countedVMs("web", n, 512, "")) + fmt.Sprintf(`
data "qemuscheduler_placement" "db" {
  names  = [for i in range(%d) : "db-${i}"]
  memory = 512
}
`, n)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: steadyProviders,
		Steps: []resource.TestStep{{
			PreConfig: func() { reads.since(); start = reads.last },
			Config:    config,
			ConfigPlanChecks: resource.ConfigPlanChecks{
				PreApply:             []plancheck.PlanCheck{planCheck(reads.atMost("the plan", 1))},
				PostApplyPreRefresh:  []plancheck.PlanCheck{planCheck(reads.atMost("the plan after the apply", 1))},
				PostApplyPostRefresh: []plancheck.PlanCheck{planCheck(reads.atMost(fmt.Sprintf("the refresh and plan of %d VMs", n), 2))},
			},
			Check: func(*terraform.State) error {
				if err := reads.atMost(fmt.Sprintf("the apply of count = %d", n), (n+parallelism-1)/parallelism+2)(); err != nil {
					return err
				}
				return distinctAndSpread(sim, "web-", n)
			},
		}},
		CheckDestroy: func(*terraform.State) error {
			if err := reads.atMost(fmt.Sprintf("the destroy of %d VMs", n), 2)(); err != nil {
				return err
			}
			if all := reads.last - start; all > total {
				return fmt.Errorf("plan, apply, plans after it and destroy of count = %d read /cluster/resources %d times, want at most %d", n, all, total)
			}
			return nil
		},
	})
}

// distinctAndSpread checks that the n guests named prefix* have distinct ids and that no node
// holds more than its share plus two.
func distinctAndSpread(sim *pvesim.Server, prefix string, n int) error {
	perNode := map[string]int{}
	count := 0
	for _, id := range sim.Guests() {
		if g, ok := sim.Guest(id); ok && strings.HasPrefix(g.Config["name"], prefix) {
			count++
			perNode[g.Node]++
		}
	}
	if count != n {
		return fmt.Errorf("%d guests named %s*, want %d with distinct ids", count, prefix, n)
	}
	for node, k := range perNode {
		if k > n/len(perNode)+2 {
			return fmt.Errorf("%s holds %d of the %d VMs: %v", node, k, n, perNode)
		}
	}
	return nil
}

// A plan of N placement data sources reads the cluster once.
func TestAccRequestsPerPlanOfDataSources(t *testing.T) {
	const n = 12
	env := newAccEnv(t, equalCluster())
	reads := &readCounter{t: t, sim: env.needsSim(t)}
	var hcl strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&hcl, "data \"qemuscheduler_placement\" \"p%d\" {\n  names = [\"vm-%d\"]\n}\n", i, i)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: steadyProviders,
		Steps: []resource.TestStep{{
			PreConfig: func() { reads.since() },
			Config:    env.config(hcl.String()),
			ConfigPlanChecks: resource.ConfigPlanChecks{
				PreApply: []plancheck.PlanCheck{planCheck(reads.atMost(fmt.Sprintf("the plan with %d data sources", n), 1))},
			},
		}},
	})
}

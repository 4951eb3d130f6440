package provider

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// scaleCluster has nodes nodes of 64 CPUs and 512 GiB and guests running guests of 1 vCPU
// and 1 GiB spread over them: with 10,000 guests on 64 nodes, a CPU ratio of 2.4 and a
// /cluster/resources answer of about 2.7 MB.
func scaleCluster(nodes, guests int) pvesim.Cluster {
	c := pvesim.Cluster{Storages: []pvesim.StorageSpec{{Name: "local-lvm", Content: []string{"images"}, SizeGiB: 100000}}}
	for i := 1; i <= nodes; i++ {
		c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: fmt.Sprintf("pve%d", i), CPUs: 64, MemoryGiB: 512})
	}
	for i := 0; i < guests; i++ {
		c.Guests = append(c.Guests, pvesim.GuestSpec{VMID: 100000 + i, Node: fmt.Sprintf("pve%d", i%nodes+1), Name: fmt.Sprintf("vm-%d", i),
			Status: "running", Cores: 1, MemoryMiB: 1024})
	}
	return c
}

// BenchmarkApplyRefreshCount50 runs `count = 50` through Terraform (parallelism 10) on a
// 3-node cluster with 10 guests and on a 64-node one with 10,000, with simulator tasks of 0
// and 200 ms, with the provider as users get it (a shared cluster view of up to 2 s).
// apply-s is the plan and apply, refresh-s the refresh and plan after it; *-reads count
// GET /cluster/resources. The ratio of the two clusters' times is in benchmarks/scale.md.
func BenchmarkApplyRefreshCount50(b *testing.B) {
	if os.Getenv("TF_ACC") == "" {
		b.Skip("drives Terraform: set TF_ACC=1")
	}
	for _, task := range []time.Duration{0, 200 * time.Millisecond} {
		for _, size := range []struct{ nodes, guests int }{{3, 10}, {64, 10000}} {
			b.Run(fmt.Sprintf("task=%v/cluster=%dx%d", task, size.nodes, size.guests), func(b *testing.B) {
				cluster := scaleCluster(size.nodes, size.guests)
				for i := 0; i < b.N; i++ {
					benchApplyRefresh(b, cluster, task)
				}
			})
		}
	}
}

func benchApplyRefresh(b *testing.B, cluster pvesim.Cluster, task time.Duration) {
	sim := pvesim.NewTestServer(b, cluster, pvesim.WithTaskDuration(task))
	env := &accEnv{sim: sim}
	// Readings (time, cluster reads) before the plan, after the apply, after the plan that
	// follows it without refresh, and after the refresh and plan.
	var at [4]time.Time
	var reads [4]int
	mark := func(i int) planCheck {
		return func() error {
			at[i], reads[i] = time.Now(), sim.Requests(clusterReads)
			return nil
		}
	}
	resource.Test(benchT{b}, resource.TestCase{
		ProtoV6ProviderFactories: testProviders,
		Steps: []resource.TestStep{{
			PreConfig: func() { _ = mark(0)() },
			Config:    env.config(countedVMs("web", 50, 512, "")),
			Check:     func(*terraform.State) error { return mark(1)() },
			ConfigPlanChecks: resource.ConfigPlanChecks{
				PostApplyPreRefresh:  []plancheck.PlanCheck{mark(2)},
				PostApplyPostRefresh: []plancheck.PlanCheck{mark(3)},
			},
		}},
	})
	apply, refresh := at[1].Sub(at[0]), at[3].Sub(at[2])
	b.ReportMetric(apply.Seconds(), "apply-s")
	b.ReportMetric(float64(reads[1]-reads[0]), "apply-reads")
	b.ReportMetric(refresh.Seconds(), "refresh-s")
	b.ReportMetric(float64(reads[3]-reads[2]), "refresh-reads")
	b.ReportMetric((apply + refresh).Seconds(), "total-s")
}

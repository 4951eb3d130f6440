package provider

import (
	"os"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// benchT lets a benchmark drive terraform-plugin-testing, which wants a T that can Parallel.
type benchT struct{ *testing.B }

func (benchT) Parallel() {}

// BenchmarkApplyCount50 times `terraform apply` of count = 50 VMs with Terraform's default
// parallelism of 10 against a simulator whose tasks take 200 ms. Each VM runs two tasks
// (create, start), so the ideal is 50/10 x 2 x 200 ms = 2 s. apply-s is the simulator's view
// (first task start to last task end: scheduling, creates, starts, polling); plan-apply-s
// adds Terraform's plan. The ratio is apply-s over the ideal.
func BenchmarkApplyCount50(b *testing.B) {
	if os.Getenv("TF_ACC") == "" {
		b.Skip("drives Terraform: set TF_ACC=1")
	}
	const taskTime = 200 * time.Millisecond
	ideal := 50 / 10 * 2 * taskTime
	for i := 0; i < b.N; i++ {
		sim := pvesim.NewTestServer(b, equalCluster(), pvesim.WithTaskDuration(taskTime))
		env := &accEnv{sim: sim}
		var start time.Time
		var planApply, apply time.Duration
		resource.Test(benchT{b}, resource.TestCase{
			ProtoV6ProviderFactories: testProviders,
			Steps: []resource.TestStep{{
				PreConfig: func() { start = time.Now() },
				Config:    env.config(countedVMs("web", 50, 512, "")),
				Check: func(*terraform.State) error {
					planApply = time.Since(start)
					first, last := sim.TaskWindow()
					apply = last.Sub(first)
					return nil
				},
			}},
		})
		b.ReportMetric(planApply.Seconds(), "plan-apply-s")
		b.ReportMetric(apply.Seconds(), "apply-s")
		b.ReportMetric(apply.Seconds()/ideal.Seconds(), "ratio-to-ideal")
	}
}

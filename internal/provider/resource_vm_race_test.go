package provider

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// Three terraform processes (separate states and provider instances, as CI pipelines run)
// apply count = 20 each at once, in one VMID range, on three 16-CPU nodes with CPU ratio 4:
// room for 63 VMs of 3 vCPUs. Each sees the others' VMs only through PVE, while they are
// being created (locked) or marked pending. Every apply must succeed, the 60 VMs must have
// distinct ids, and no node may end over its ratio. The runs meet before their destroy, so
// the assertions see all 60 VMs whatever the timing.
func TestAccVMThreeProcessesShareCapacityAndIDs(t *testing.T) {
	env := newAccEnv(t, equalCluster(), pvesim.WithTaskDuration(200*time.Millisecond))
	sim := env.needsSim(t)
	check := func() error {
		ids := map[int]string{}
		vcpus := map[string]int{}
		for _, id := range sim.Guests() {
			g, ok := sim.Guest(id)
			if !ok || !strings.HasPrefix(g.Config["name"], "run-") {
				continue
			}
			ids[id] = g.Config["name"]
			if g.Status == "running" {
				cores, err := strconv.Atoi(g.Config["cores"])
				if err != nil {
					return fmt.Errorf("VM %d: cores %q: %v", id, g.Config["cores"], err)
				}
				vcpus[g.Node] += cores
			}
		}
		if len(ids) != 60 {
			return fmt.Errorf("%d VMs with distinct ids, want 60: %v", len(ids), ids)
		}
		for node, n := range vcpus {
			if n > 4*16 {
				return fmt.Errorf("%s runs %d vCPUs on 16 CPUs: %.2f over the ratio 4 (all nodes: %v)", node, n, float64(n)/16, vcpus)
			}
		}
		return nil
	}
	provider := env.providerBlock(`  plugin_config {
    filter {
      name = "CPUOvercommit"
      args = { ratio = "4" }
    }
  }`)
	concurrentApplies(t, []string{"a", "b", "c"}, func(run string) string {
		return provider + fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  count       = 20
  name        = "run-%s-${count.index}"
  cores       = 3
  annotations = { "vmid.qemu-scheduler/range" = "1000-1199" }
}`, run)
	}, check)
}

// concurrentApplies runs one terraform process per run at once, each applying config(run),
// and checks the cluster with check once every apply is done: the runs meet before their
// destroy, so check sees what all of them made whatever the timing.
func concurrentApplies(t *testing.T, runs []string, config func(run string) string, check func() error) {
	var arrived sync.WaitGroup
	arrived.Add(len(runs))
	allThere := make(chan struct{})
	go func() { arrived.Wait(); close(allThere) }()
	meet := func(*terraform.State) error {
		arrived.Done()
		select {
		case <-allThere:
		case <-time.After(4 * time.Minute):
			return fmt.Errorf("the other applies never finished")
		}
		return check()
	}
	// Goroutines rather than t.Parallel: go test runs at most GOMAXPROCS parallel subtests,
	// and on a 2-CPU machine the third run would wait for the others, which wait for it.
	var done sync.WaitGroup
	for _, run := range runs {
		done.Add(1)
		go t.Run("run "+run, func(t *testing.T) {
			defer done.Done()
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: map[string]func() (tfprotov6.ProviderServer, error){
					"qemuscheduler": providerserver.NewProtocol6WithError(New("test")()),
				},
				Steps: []resource.TestStep{{Config: config(run), Check: meet}},
			})
		})
	}
	done.Wait()
}

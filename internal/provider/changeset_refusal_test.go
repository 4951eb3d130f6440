package provider

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// refusalHeader is a placement error's header and the address Terraform shows it on.
var refusalHeader = regexp.MustCompile(`Error: No placement for "web-(\d+)"\s+with qemuscheduler_vm\.web\[(\d+)\]`)

// A count = 200 of which 12 fit fails its plan with one error, on one address whose VM its
// header names, counting the whole set once and naming its cause (13 VMs for 12 vCPUs);
// nothing is created.
func TestAccChangeSetCount200RefusedOnce(t *testing.T) {
	env, sim := simEnv(t, sizedCluster(3, 4, 16))
	t.Parallel()
	cli := newCLIDir(t, env.providerBlock(cpuRatioOne)+webVMs("web", 200, ""))
	start := time.Now()
	out, err := cli.run("plan", "-input=false")
	t.Logf("the refused plan of count = 200 took %v (benchmarks/changeset.md)", time.Since(start))
	flat := strings.Join(strings.Fields(out), " ")
	if err == nil || strings.Count(out, "Error: ") != 1 || !strings.Contains(flat, "only 12 of the plan's 200 new VMs can be placed together") ||
		!strings.Contains(flat, "and 3 more need 13 vCPUs on pve1, pve2, pve3, which have 12 vCPUs free (CPUOvercommit)") {
		t.Fatalf("plan of count = 200 with room for 12: error %v, want exactly one error counting the 200 and naming its cause; output:\n%s", err, out)
	}
	m := refusalHeader.FindStringSubmatch(out)
	if m == nil || m[1] != m[2] {
		t.Errorf("the error's header names another VM than its address's (%v); output:\n%s", m, out)
	}
	noGuests(t, sim)()
}

// zonedCluster is n nodes of memGiB GiB and 16 CPUs, alternately in zones a and b.
func zonedCluster(n int, memGiB float64) pvesim.Cluster {
	c := pvesim.Cluster{Storages: []pvesim.StorageSpec{{Name: "local-lvm", Content: []string{"images"}, SizeGiB: 500}}}
	for i := 1; i <= n; i++ {
		c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: fmt.Sprintf("pve%d", i), CPUs: 16, MemoryGiB: memGiB,
			Notes: "qemu-scheduler/labels: zone=" + []string{"a", "b"}[(i-1)%2]})
	}
	return c
}

// The tight set: 15 VMs on 4 nodes of 16 GiB in two zones, 6 web VMs of 6 GiB and 6
// api VMs of 4 GiB each spread over the zones, and 3 of 1 GiB: 63 of the 64 GiB, with one
// packing per zone up to symmetry (two webs and an api on one node, a web, two apis and the
// small VMs on the other). The set plans and applies whole, the spreads even.
func TestAccChangeSetTightSetWithTwoSpreads(t *testing.T) {
	env, sim := simEnv(t, zonedCluster(4, 16))
	spread := func(group string) string {
		return fmt.Sprintf(`
  tags  = [%q]
  topology_spread {
    tags         = [%q]
    topology_key = "zone"
  }`, group, group)
	}
	config := env.providerBlock("  read_node_notes = true") +
		strings.Replace(countedVMs("web", 6, 6144, spread("web")), `"web"`, `"webs"`, 1) + "\n" +
		strings.Replace(countedVMs("api", 6, 4096, spread("api")), `"web"`, `"apis"`, 1) + "\n" +
		strings.Replace(countedVMs("small", 3, 1024, ""), `"web"`, `"smalls"`, 1)
	runParallel(t, resource.TestStep{
		Config: config,
		Check: func(*terraform.State) error {
			perZone := map[string]map[string]int{}
			for _, g := range guests(sim) {
				group := strings.SplitN(g.Config["name"], "-", 2)[0]
				zone := map[string]string{"pve1": "a", "pve3": "a", "pve2": "b", "pve4": "b"}[g.Node]
				if perZone[group] == nil {
					perZone[group] = map[string]int{}
				}
				perZone[group][zone]++
			}
			for _, group := range []string{"web", "api"} {
				if perZone[group]["a"] != 3 || perZone[group]["b"] != 3 {
					return fmt.Errorf("%s VMs per zone %v, want 3 and 3", group, perZone[group])
				}
			}
			if n := len(guests(sim)); n != 15 {
				return fmt.Errorf("%d guests, want the 15 of the set", n)
			}
			return nil
		},
	})
}

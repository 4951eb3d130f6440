package provider

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// bigNodeCluster has one node far larger and idler than the others, so that capacity alone
// would put every VM there: whatever spreads them is the group policy.
func bigNodeCluster(nodes int) pvesim.Cluster {
	c := pvesim.Cluster{Storages: []pvesim.StorageSpec{{Name: "local-lvm", Content: []string{"images"}, SizeGiB: 500}}}
	c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: "pve1", CPUs: 64, MemoryGiB: 512})
	for i := 2; i <= nodes; i++ {
		c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: fmt.Sprintf("pve%d", i), CPUs: 16, MemoryGiB: 64, CPULoad: 0.3, MemUsedGiB: 20})
	}
	return c
}

// guestsPerNode counts the simulator's guests whose name starts with prefix, per node.
func guestsPerNode(sim *pvesim.Server, prefix string) (map[string]int, []int) {
	perNode := map[string]int{}
	var ids []int
	for _, g := range guests(sim) {
		if strings.HasPrefix(g.Config["name"], prefix) {
			perNode[g.Node]++
			ids = append(ids, g.VMID)
		}
	}
	sort.Ints(ids)
	return perNode, ids
}

// wantPerNode checks the guests named prefix* against a per-node count.
func wantPerNode(sim *pvesim.Server, prefix string, want map[string]int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got, _ := guestsPerNode(sim, prefix)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("%s* per node %v, want %v", prefix, got, want)
		}
		return nil
	}
}

// webVMs is a qemuscheduler_vm "web" with count VMs named prefix-N and the group policy body.
func webVMs(prefix string, count int, body string) string {
	return countedVMs(prefix, count, 1024, body)
}

// countedVMs is a qemuscheduler_vm "web" with count VMs named prefix-N, of memory MiB each,
// and body.
func countedVMs(prefix string, count, memory int, body string) string {
	return fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  count  = %d
  name   = "%s-${count.index}"
  memory = %d%s
}`, count, prefix, memory, body)
}

const webAntiAffinity = `
  tags   = ["web"]
  vm_anti_affinity {
    tags = ["web"]
  }`

// count = 3 with required anti-affinity: three nodes, in one apply, although each instance is
// decided on its own (the in-flight reservations carry the tags).
func TestAccVMGroupsAntiAffinityCountThree(t *testing.T) {
	applyWebVMs(t, bigNodeCluster(3), 3, webAntiAffinity, map[string]int{"pve1": 1, "pve2": 1, "pve3": 1})
}

// applyWebVMs applies count web VMs with body on a fresh cluster and checks how many land on
// each node.
func applyWebVMs(t *testing.T, cluster pvesim.Cluster, count int, body string, want map[string]int) {
	env := newAccEnv(t, cluster)
	sim := env.needsSim(t)
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders,
		Steps: []resource.TestStep{{
			Config: env.config(webVMs("web", count, body)),
			Check:  wantPerNode(sim, "web-", want),
		}},
	})
}

// count = 4 on three nodes fails at plan with a message that says why and what to use, in the
// data source and in the resource, which places the whole set before creating any of it.
func TestAccVMGroupsAntiAffinityTooMany(t *testing.T) {
	tooMany := wrapped(`3 node\(s\) already run a guest tagged \[web\] \(required vm_anti_affinity by node; all 3 nodes already run one, so no more VMs of the group can be kept apart: use topology_spread with max_skew = 1`)
	t.Run("data source", func(t *testing.T) {
		env, _ := simEnv(t, bigNodeCluster(3))
		resource.ParallelTest(t, resource.TestCase{
			ProtoV6ProviderFactories: testProviders,
			Steps: []resource.TestStep{{
				Config:      env.config(placement(`names = ["w1", "w2", "w3", "w4"]` + webAntiAffinity)),
				ExpectError: regexp.MustCompile(`(?s)No placement for "w\d".*` + tooMany.String()),
			}},
		})
	})
	t.Run("resource", func(t *testing.T) {
		env := newAccEnv(t, bigNodeCluster(3))
		sim := env.needsSim(t)
		resource.ParallelTest(t, resource.TestCase{
			ProtoV6ProviderFactories: testProviders,
			Steps: []resource.TestStep{{
				Config:      env.config(webVMs("web", 4, webAntiAffinity)),
				ExpectError: tooMany,
			}, {
				// Nothing created: the plan refused the set.
				PreConfig:   noGuests(t, sim),
				Config:      env.config(webVMs("web", 4, webAntiAffinity)),
				PlanOnly:    true,
				ExpectError: tooMany,
			}},
		})
	})
}

// count = 6 with max_skew 1 lands 2-2-2, in the resource and in the data source.
func TestAccVMGroupsSpreadTwoTwoTwo(t *testing.T) {
	spread := `
  tags   = ["web"]
  topology_spread {
    tags     = ["web"]
    max_skew = 1
  }`
	t.Run("resource", func(t *testing.T) {
		applyWebVMs(t, bigNodeCluster(3), 6, spread, map[string]int{"pve1": 2, "pve2": 2, "pve3": 2})
	})
	t.Run("data source", func(t *testing.T) {
		env, _ := simEnv(t, bigNodeCluster(3))
		resource.ParallelTest(t, resource.TestCase{
			ProtoV6ProviderFactories: testProviders,
			Steps: []resource.TestStep{{
				Config: env.config(placement(`names = ["w0", "w1", "w2", "w3", "w4", "w5"]` + spread)),
				Check: func(s *terraform.State) error {
					attrs := s.RootModule().Resources[ds].Primary.Attributes
					perNode := map[string]int{}
					for i := 0; i < 6; i++ {
						perNode[attrs[fmt.Sprintf("placements.%d.node", i)]]++
					}
					if fmt.Sprint(perNode) != "map[pve1:2 pve2:2 pve3:2]" {
						return fmt.Errorf("placements per node %v, want 2-2-2", perNode)
					}
					return nil
				},
			}},
		})
	})
}

// A preference that cannot be met still places the VM, and the scores say why it went where
// it did: every node runs a web VM already, pve1 (best on capacity) two of them, so pve1
// scores 0 on VMAffinity and the others 100.
func TestAccVMGroupsPreferredAntiAffinity(t *testing.T) {
	cluster := bigNodeCluster(3)
	for i, node := range []string{"pve1", "pve1", "pve2", "pve3"} {
		cluster.Guests = append(cluster.Guests, pvesim.GuestSpec{VMID: 100 + i, Node: node, Name: fmt.Sprintf("old-web-%d", i),
			Status: "stopped", Cores: 1, MemoryMiB: 512, Tags: []string{"web"}})
	}
	env, _ := simEnv(t, cluster)
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders,
		Steps: []resource.TestStep{{
			Config: env.config(placement(`name = "web-9"
  tags = ["web"]
  vm_anti_affinity {
    tags   = ["web"]
    weight = 100
  }`)),
			Check: resource.ComposeTestCheckFunc(
				func(s *terraform.State) error {
					if n := s.RootModule().Resources[ds].Primary.Attributes["node"]; n == "pve1" {
						return fmt.Errorf("placed on %s, which runs two web VMs", n)
					}
					return nil
				},
				resource.TestCheckResourceAttr(ds, "candidates.0.scores.VMAffinity", "0"),
				resource.TestCheckResourceAttr(ds, "candidates.1.scores.VMAffinity", "100"),
				resource.TestCheckResourceAttr(ds, "candidates.2.scores.VMAffinity", "100"),
			),
		}},
	})
}

// Affinity to an existing guest: the app VM joins the db guest's node; ProxLB tags on an
// existing guest keep a VM carrying the same tag away from it, unless the provider switch is off.
func TestAccVMGroupsAffinityAndProxLB(t *testing.T) {
	cluster := bigNodeCluster(3)
	cluster.Guests = []pvesim.GuestSpec{
		{VMID: 100, Node: "pve2", Name: "db-1", Status: "stopped", Cores: 2, MemoryMiB: 2048, Tags: []string{"db"}},
		{VMID: 101, Node: "pve1", Name: "lb-1", Status: "running", Cores: 1, MemoryMiB: 512, Tags: []string{"plb_anti_affinity_lb"}},
	}
	env, _ := simEnv(t, cluster)
	proxLB := placement(`name = "lb-2"
  tags = ["plb_anti_affinity_lb"]`)
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders,
		Steps: []resource.TestStep{{
			Config: env.config(`data "qemuscheduler_placement" "app" {
  name = "app-1"
  vm_affinity {
    tags = ["db"]
  }
}
` + proxLB),
			Check: resource.ComposeTestCheckFunc(
				resource.TestCheckResourceAttr("data.qemuscheduler_placement.app", "node", "pve2"),
				resource.TestCheckResourceAttr("data.qemuscheduler_placement.app", "candidates.0.reasons.0",
					"VMAffinity: pve1 runs no guest tagged [db] (1 guest elsewhere)"),
				func(s *terraform.State) error {
					if n := s.RootModule().Resources[ds].Primary.Attributes["node"]; n == "pve1" {
						return fmt.Errorf("lb-2 placed next to lb-1 on %s despite plb_anti_affinity_lb", n)
					}
					return nil
				},
			),
		}, {
			Config: env.providerBlock("honor_proxlb_tags = false") + proxLB,
			Check:  resource.TestCheckResourceAttr(ds, "node", "pve1"),
		}},
	})
}

// Two provider processes apply count = 3 each with the same anti-affinity at once on six
// nodes: they do not see each other's reservations, so keeping all six apart is not promised,
// but both succeed with distinct ids.
func TestAccVMGroupsConcurrentProcesses(t *testing.T) {
	env := newAccEnv(t, bigNodeCluster(6), pvesim.WithTaskDuration(100*time.Millisecond))
	sim := env.needsSim(t)
	applyConcurrently(t, []string{"a", "b"}, func(run string) string {
		return env.config(webVMs(run, 3, webAntiAffinity))
	}, func(run string) error {
		if perNode, ids := guestsPerNode(sim, run+"-"); len(ids) != 3 || len(perNode) != 3 {
			return fmt.Errorf("run %s: ids %v on %v, want 3 on 3 nodes", run, ids, perNode)
		}
		return nil
	})
}

// applyConcurrently applies config(run) for every run at once, each in a provider process of
// its own (so with reservations of its own), and checks each run once applied.
func applyConcurrently(t *testing.T, runs []string, config func(run string) string, check func(run string) error) {
	for _, run := range runs {
		t.Run("run "+run, func(t *testing.T) {
			t.Parallel()
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: map[string]func() (tfprotov6.ProviderServer, error){
					"qemuscheduler": providerserver.NewProtocol6WithError(New("test")()),
				},
				Steps: []resource.TestStep{{
					Config: config(run),
					Check:  func(*terraform.State) error { return check(run) },
				}},
			})
		})
	}
}

// Each mistake fails the plan on its attribute.
func TestAccVMGroupsValidation(t *testing.T) {
	env := newAccEnv(t, bigNodeCluster(3))
	for _, tc := range []struct{ block, want string }{
		{`vm_anti_affinity {
    tags = []
  }`, `Attribute vm_anti_affinity\[0\].tags list must contain at least 1 elements`},
		{`vm_affinity {
    tags   = ["web"]
    weight = 101
  }`, `Attribute vm_affinity\[0\].weight value must be between 1 and 100, got: 101`},
		{`vm_affinity {
    tags         = ["web"]
    topology_key = "-zone"
  }`, `vm_affinity\[0\].topology_key: "-zone"`},
		{`topology_spread {
    tags     = ["Web!"]
  }`, `Attribute topology_spread\[0\].tags\[0\] must be a PVE tag`},
		{`topology_spread {
    tags     = ["web"]
    max_skew = 0
  }`, `Attribute topology_spread\[0\].max_skew value must be at least 1, got: 0`},
		{`topology_spread {
    tags               = ["web"]
    when_unsatisfiable = "Sometimes"
  }`, `Attribute topology_spread\[0\].when_unsatisfiable value must be one of`},
		{`vm_affinity {
    topology_key = "zone"
  }`, `Missing group[\s\S]*\d+:\s+vm_affinity \{[\s\S]*name the group with tags \(carries all of them\), tags_any_of \(at least one\) or\s+tags_none_of \(none\)`},
		{`vm_anti_affinity {
    tags_any_of = []
  }`, `Attribute vm_anti_affinity\[0\].tags_any_of list must contain at least 1 elements`},
		{`topology_spread {
    tags_none_of = ["Old!"]
  }`, `Attribute topology_spread\[0\].tags_none_of\[0\] must be a PVE tag`},
		{`topology_spread {
    tags               = ["web"]
    when_unsatisfiable = "ScheduleAnyway"
    min_domains        = 2
  }`, `Invalid min_domains[\s\S]*min_domains = 2[\s\S]*min_domains applies to when_unsatisfiable = "DoNotSchedule" only`},
		{`topology_spread {
    tags        = ["web"]
    min_domains = 0
  }`, `Attribute topology_spread\[0\].min_domains value must be at least 1, got: 0`},
		{`topology_spread {
    tags               = ["web"]
    node_taints_policy = "honor"
  }`, `Attribute topology_spread\[0\].node_taints_policy value must be one of`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			resource.ParallelTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testProviders,
				Steps: []resource.TestStep{{
					Config: env.config(`resource "qemuscheduler_vm" "web" {
  name = "web-1"
  ` + tc.block + `
}`),
					PlanOnly:    true,
					ExpectError: wrapped(tc.want),
				}},
			})
		})
	}
}

// The same with clones: until its setup writes the VM's own tags, a clone carries its source's,
// and the in-flight reservation stands for it with the tags it is being given.
func TestAccVMGroupsAntiAffinityClones(t *testing.T) {
	applyWebVMs(t, labCluster(), 3, webAntiAffinity+`
  clone {
    source_vmid = 9000
  }`, map[string]int{"pve1": 1, "pve2": 1, "pve3": 1})
}

// Zones from the provider's node blocks: count = 6 spread by zone lands 2-2-2 per zone (pve1,
// the big node, alone would take them all), and a VM with affinity to the db guest's zone goes
// to either node of zone b, not only to the db guest's own node.
func TestAccVMGroupsZones(t *testing.T) {
	cluster := bigNodeCluster(5)
	cluster.Guests = []pvesim.GuestSpec{{VMID: 100, Node: "pve4", Name: "db-1", Status: "running", Cores: 2, MemoryMiB: 2048, Tags: []string{"db"}}}
	env := newAccEnv(t, cluster)
	sim := env.needsSim(t)
	var blocks []string
	for node, zone := range map[string]string{"pve1": "a", "pve2": "a", "pve3": "b", "pve4": "b", "pve5": "c"} {
		blocks = append(blocks, fmt.Sprintf("node {\n  name = %q\n  labels = { zone = %q }\n}", node, zone))
	}
	sort.Strings(blocks)
	provider := env.providerBlock(strings.Join(blocks, "\n"))
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders,
		Steps: []resource.TestStep{{
			Config: provider + webVMs("web", 6, `
  tags   = ["web"]
  topology_spread {
    tags         = ["web"]
    topology_key = "zone"
  }`) + `
data "qemuscheduler_placement" "app" {
  name = "app-1"
  vm_affinity {
    tags         = ["db"]
    topology_key = "zone"
  }
}`,
			Check: resource.ComposeTestCheckFunc(
				func(*terraform.State) error {
					perNode, _ := guestsPerNode(sim, "web-")
					perZone := map[string]int{"a": perNode["pve1"] + perNode["pve2"], "b": perNode["pve3"] + perNode["pve4"], "c": perNode["pve5"]}
					if fmt.Sprint(perZone) != "map[a:2 b:2 c:2]" {
						return fmt.Errorf("web-* per zone %v (per node %v), want 2-2-2", perZone, perNode)
					}
					return nil
				},
				resource.TestCheckResourceAttr("data.qemuscheduler_placement.app", "node", "pve3"),
				resource.TestCheckResourceAttr("data.qemuscheduler_placement.app", "candidates.0.reasons.0",
					"VMAffinity: zone=a runs no guest tagged [db] (1 guest elsewhere)"),
			),
		}},
	})
}

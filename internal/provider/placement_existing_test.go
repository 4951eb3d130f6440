package provider

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// existingAppsCluster has four equal nodes, four anti-affine apps two by two on pve1 and pve2,
// and db-1 off the nodes its rules allow (pve3, pve4).
func existingAppsCluster() pvesim.Cluster {
	guest := func(vmid int, node, name, tag string) pvesim.GuestSpec {
		return pvesim.GuestSpec{VMID: vmid, Node: node, Name: name, Status: "running", Cores: 1, MemoryMiB: 1024, Tags: []string{tag}}
	}
	cluster := pvesim.Cluster{Storages: []pvesim.StorageSpec{{Name: "local-lvm", Content: []string{"images"}, SizeGiB: 500}}}
	for i := 1; i <= 4; i++ {
		cluster.Nodes = append(cluster.Nodes, pvesim.NodeSpec{Name: fmt.Sprintf("pve%d", i), CPUs: 16, MemoryGiB: 64})
	}
	cluster.Guests = []pvesim.GuestSpec{guest(201, "pve1", "app-1", "app"), guest(202, "pve1", "app-2", "app"),
		guest(203, "pve2", "app-3", "app"), guest(204, "pve2", "app-4", "app"),
		guest(301, "pve1", "db-1", "db"), guest(302, "pve3", "db-2", "db")}
	return cluster
}

// Pins and budgets that cannot act on an existing VM warn, naming the attribute and the fix:
// node pins new VMs only, and max_moves_per_group bounds moves that only move_existing makes.
func TestAccPlacementExistingVMWarnings(t *testing.T) {
	env, _ := simEnv(t, existingAppsCluster())
	log := &warningLog{}
	runLoggingWarnings(t, log, resource.TestStep{
		Config: env.config(`data "qemuscheduler_placement" "p" {
  name                = "app-1"
  node                = "pve3"
  max_moves_per_group = 2
}`),
		Check: resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttr("data.qemuscheduler_placement.p", "node", "pve1"),
			resource.TestCheckResourceAttr("data.qemuscheduler_placement.p", "vmid", "201"),
			log.has(`"app-1" exists on pve1: node pins new VMs only`, "set the node of the resource that manages it"),
			log.has("max_moves_per_group without moves", `set move_existing = "violations"`)),
	})
}

// A placement data source with move_existing = "violations" and a rebalance data source over
// the same VMs and rules never disagree: the VMs the placement answers on another node are
// exactly the rebalance's moves, to the same nodes, and the VMs listed in violations are those
// still breaking their rules once the moves are done. Without move_existing nothing moves and
// every VM that breaks its rules now is listed.
func TestAccPlacementMovesWhatTheRebalanceMoves(t *testing.T) {
	cluster := existingAppsCluster()
	env, _ := simEnv(t, cluster)
	apps := `names = ["app-1", "app-2", "app-3", "app-4"]
  tags  = ["app"]
  vm_anti_affinity {
    tags = ["app"]
  }`
	dbs := `names       = ["db-1", "db-2"]
  tags        = ["db"]
  annotations = { "node.qemu-scheduler/regex" = "pve[34]" }`
	rules := func(body string) string { // the rebalance's rules: the placement's, without names
		return body[strings.Index(body, "\n")+1:]
	}
	for _, tc := range []struct {
		name, body, budget string
		moves, violations  string // name>to, sorted; the names in violations
		summary            string // a line of the placement's summary
	}{
		{"anti-affinity, budget 1", apps, "1", "app-1>", "app-3,app-4",
			"app-3: existing VM 203 stays on pve2, storage local-lvm; it breaks its rules there (violations) and stays: policy violation on pve2: VMAntiAffinity"},
		{"anti-affinity, budget 2", apps, "2", "app-1>,app-3>", "", "app-2: existing VM 202 stays on pve1, storage local-lvm\n"},
		{"node regex", dbs, "1", "db-1>", "", "db-1: existing VM 301 moves from pve1 to pve"},
		{"nothing moves unless asked", apps, "", "", "app-1,app-2,app-3,app-4",
			`app-1: existing VM 201 stays on pve1, storage local-lvm; it breaks its rules there (violations): move_existing = "violations" moves it`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			move, budget := "", "1"
			if tc.budget != "" {
				move, budget = fmt.Sprintf("move_existing = \"violations\"\n  max_moves_per_group = %s", tc.budget), tc.budget
			}
			cfg := env.config(fmt.Sprintf(`data "qemuscheduler_placement" "p" {
  %s
  %s
}
data "qemuscheduler_rebalance" "r" {
  max_moves_per_group = %s
  %s
}`, tc.body, move, budget, rules(tc.body)))
			runParallel(t, resource.TestStep{Config: cfg, Check: func(s *terraform.State) error {
				p := s.RootModule().Resources["data.qemuscheduler_placement.p"].Primary.Attributes
				r := s.RootModule().Resources["data.qemuscheduler_rebalance.r"].Primary.Attributes
				runs := map[string]string{}
				for _, g := range cluster.Guests {
					runs[g.Name] = g.Node
				}
				var moved, planned, broken []string
				for i := 0; p[fmt.Sprintf("placements.%d.name", i)] != ""; i++ {
					name, node := p[fmt.Sprintf("placements.%d.name", i)], p[fmt.Sprintf("placements.%d.node", i)]
					if node != runs[name] {
						moved = append(moved, name+">"+node)
					}
				}
				for i := 0; r[fmt.Sprintf("moves.%d.name", i)] != ""; i++ {
					planned = append(planned, r[fmt.Sprintf("moves.%d.name", i)]+">"+r[fmt.Sprintf("moves.%d.to", i)])
				}
				for i := 0; p[fmt.Sprintf("violations.%d.name", i)] != ""; i++ {
					broken = append(broken, p[fmt.Sprintf("violations.%d.name", i)])
				}
				sort.Strings(moved)
				sort.Strings(planned)
				var names []string
				for _, m := range moved {
					names = append(names, m[:strings.Index(m, ">")+1])
				}
				switch {
				case tc.budget != "" && strings.Join(moved, ",") != strings.Join(planned, ","):
					return fmt.Errorf("the placement moves %v, the rebalance %v", moved, planned)
				case strings.Join(names, ",") != tc.moves:
					return fmt.Errorf("the placement moves %v, want %s", moved, tc.moves)
				case strings.Join(broken, ",") != tc.violations:
					return fmt.Errorf("violations of %v, want %s", broken, tc.violations)
				case !strings.Contains(p["summary"]+"\n", tc.summary):
					return fmt.Errorf("summary %q lacks %q", p["summary"], tc.summary)
				}
				return nil
			}})
		})
	}
}

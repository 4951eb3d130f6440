package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// appCluster has four equal nodes and, on pve4, an HA-managed guest that takes half of it:
// three anti-affine VMs land on pve1-pve3, and the HA manager, counting its services per node,
// takes a VM leaving for maintenance to another app VM's node, not to pve4.
func appCluster() pvesim.Cluster {
	c := pvesim.Cluster{
		Storages: []pvesim.StorageSpec{
			{Name: "local-lvm", Type: "lvmthin", Content: []string{"images"}, SizeGiB: 500},
			{Name: "ceph", Type: "rbd", Content: []string{"images"}, Shared: true, SizeGiB: 2000},
		},
		Guests: []pvesim.GuestSpec{{VMID: 900, Node: "pve4", Name: "anchor", Status: "running", Cores: 4, MemoryMiB: 8192}},
	}
	for i := 1; i <= 4; i++ {
		c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: fmt.Sprintf("pve%d", i), CPUs: 8, MemoryGiB: 16})
	}
	return c
}

// appConfig feeds three bpg VMs from one placement data source with a required anti-affinity
// over their tag, beside a rebalance data source over the same VMs and rule; move is the
// data source's move_existing line. The outputs show whether the answer settles.
func appConfig(env *accEnv, move string) string {
	bpg := fmt.Sprintf("provider \"proxmox\" {\n  endpoint  = %q\n  api_token = %q\n  insecure  = true\n}\n", env.sim.URL(), env.sim.APIToken())
	return env.providerBlock("") + bpg + fmt.Sprintf(`
data "qemuscheduler_placement" "app" {
  names       = ["app-1", "app-2", "app-3"]
  memory      = 1024
  tags        = ["app"]
  annotations = { "vmid.qemu-scheduler/range" = "3000-3099" }
  vm_anti_affinity {
    tags = ["app"]
  }
  %s
}

data "qemuscheduler_rebalance" "app" {
  tags = ["app"]
  vm_anti_affinity {
    tags = ["app"]
  }
}

resource "proxmox_virtual_environment_vm" "app" {
  count     = 3
  name      = data.qemuscheduler_placement.app.placements[count.index].name
  node_name = data.qemuscheduler_placement.app.placements[count.index].node
  vm_id     = data.qemuscheduler_placement.app.placements[count.index].vmid
  migrate   = true
  tags      = ["app"]

  memory {
    dedicated = 1024
  }
  disk {
    datastore_id = "ceph"
    interface    = "scsi0"
    size         = 4
  }
  network_device {
    bridge = "vmbr0"
  }
}

output "placements" {
  value = data.qemuscheduler_placement.app.placements
}

output "violations" {
  value = data.qemuscheduler_placement.app.violations
}
`, move)
}

// The oracle, through bpg v0.80.0: three anti-affine VMs are created and the next plan
// is empty, outputs included. HA maintenance moves the HA-managed app-2 next to another app
// VM: the data source answers every VM where it runs (bpg plans nothing), lists the
// violation, and the rebalance data source proposes one move. move_existing = "violations"
// moves exactly that VM, where the rebalance said, and the next plan is empty again.
func TestAccBpgExistingVMsStayUnlessAsked(t *testing.T) {
	env, sim := simEnv(t, appCluster())
	bpgMirror(t)
	vms := map[string]int{} // name -> VMID, once created
	var maintained, crowded string
	const ds, rb = "data.qemuscheduler_placement.app", "data.qemuscheduler_rebalance.app"
	settled := resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}
	unchanged := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{}}
	for i := range 3 {
		unchanged.PreApply = append(unchanged.PreApply, plancheck.ExpectResourceAction(fmt.Sprintf("proxmox_virtual_environment_vm.app[%d]", i), plancheck.ResourceActionNoop))
	}
	runCase(t, resource.TestCase{
		ExternalProviders: map[string]resource.ExternalProvider{"proxmox": {Source: "bpg/proxmox", VersionConstraint: bpgVersion}},
		Steps: []resource.TestStep{
			{Config: appConfig(env, ""), ConfigPlanChecks: settled, Check: func(s *terraform.State) error {
				nodes := map[string]bool{}
				for i, name := range []string{"app-1", "app-2", "app-3"} {
					attrs := s.RootModule().Resources[fmt.Sprintf("proxmox_virtual_environment_vm.app.%d", i)]
					if attrs == nil {
						return fmt.Errorf("%s is not in the state", name)
					}
					var vmid int
					if _, err := fmt.Sscan(attrs.Primary.Attributes["vm_id"], &vmid); err != nil {
						return err
					}
					vms[name] = vmid
					nodes[sim.MustGuest(t, vmid).Node] = true
				}
				if len(nodes) != 3 || nodes["pve4"] {
					return fmt.Errorf("the apps run on %v, want three nodes of pve1-pve3", nodes)
				}
				return nil
			}},
			{
				PreConfig: func() {
					ctx := context.Background()
					maintained = sim.MustGuest(t, vms["app-2"]).Node
					must(t, simClient(t, sim).AddHAResource(ctx, vms["app-2"], proxmox.HASettings{State: "started", MaxRestart: 1, MaxRelocate: 1}))
					must(t, sim.SetNodeHAState(maintained, "maintenance"))
					for i := 0; i < 20 && crowded == ""; i++ {
						sim.RunHARounds(1)
						if g := sim.MustGuest(t, vms["app-2"]); g.Node != maintained && g.Lock == "" {
							crowded = g.Node
						}
					}
					if crowded == "" || crowded == "pve4" {
						t.Fatalf("HA maintenance of %s took app-2 to %q, want the node of another app VM", maintained, crowded)
					}
				},
				Config: appConfig(env, ""), ConfigPlanChecks: unchanged,
				Check: func(s *terraform.State) error {
					attrs := s.RootModule().Resources[ds].Primary.Attributes
					for i, name := range []string{"app-1", "app-2", "app-3"} {
						if g := sim.MustGuest(t, vms[name]); attrs[fmt.Sprintf("placements.%d.node", i)] != g.Node {
							return fmt.Errorf("%s answered on %s, runs on %s", name, attrs[fmt.Sprintf("placements.%d.node", i)], g.Node)
						}
					}
					var broken []string
					for i := 0; attrs[fmt.Sprintf("violations.%d.name", i)] != ""; i++ {
						if rule := attrs[fmt.Sprintf("violations.%d.rule", i)]; rule != "VMAntiAffinity" {
							return fmt.Errorf("violation %d breaks %s (%s), want VMAntiAffinity", i, rule, attrs[fmt.Sprintf("violations.%d.why", i)])
						}
						broken = append(broken, attrs[fmt.Sprintf("violations.%d.name", i)])
					}
					if len(broken) != 2 || !strings.Contains(strings.Join(broken, ","), "app-2") {
						return fmt.Errorf("violations of %v, want app-2 and the app VM it shares %s with", broken, crowded)
					}
					if n := s.RootModule().Resources[rb].Primary.Attributes["moves.#"]; n != "1" {
						return fmt.Errorf("the rebalance plans %s moves, want 1", n)
					}
					return nil
				},
			},
			{
				Config: appConfig(env, `move_existing = "violations"`), ConfigPlanChecks: settled,
				Check: func(s *terraform.State) error {
					moves := s.RootModule().Resources[rb].Primary.Attributes
					attrs := s.RootModule().Resources[ds].Primary.Attributes
					moved, to := moves["moves.0.name"], moves["moves.0.to"]
					if attrs["violations.#"] != "0" {
						return fmt.Errorf("%s violations after the moves, want none", attrs["violations.#"])
					}
					for i, name := range []string{"app-1", "app-2", "app-3"} {
						g := sim.MustGuest(t, vms[name])
						answered := attrs[fmt.Sprintf("placements.%d.node", i)]
						switch {
						case name == moved && (answered != to || g.Node != to):
							return fmt.Errorf("%s: the rebalance moves it to %s, the data source answered %s, it runs on %s", name, to, answered, g.Node)
						case name != moved && (answered != g.Node || g.Node == to):
							return fmt.Errorf("%s, which the rebalance keeps: answered %s, runs on %s (the move went to %s)", name, answered, g.Node, to)
						}
					}
					return nil
				},
			},
			{
				// The HA resource goes before bpg destroys the VMs, as an admin would remove it.
				PreConfig: func() { must(t, simClient(t, sim).RemoveHAResource(context.Background(), vms["app-2"])) },
				Config:    appConfig(env, `move_existing = "violations"`), PlanOnly: true,
			},
		},
	})
}

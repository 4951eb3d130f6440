package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// bpgVersion is the bpg provider version scripts/bpg.sh builds.
const bpgVersion = "0.80.0"

// bpgMirror makes the bpg provider, built once by scripts/bpg.sh from the Go module proxy and
// cached, installable by terraform init without a registry: a filesystem mirror for
// Terraform's and OpenTofu's registry hosts, named by a CLI configuration that replaces the
// caller's for this test. It skips the test, saying why, only when the module cannot be
// downloaded.
func bpgMirror(t *testing.T) {
	t.Helper()
	out, err := exec.Command("../../scripts/bpg.sh").Output()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 2:
		t.Skipf("the bpg provider is not available, so it cannot be tested against the simulator: %s", strings.TrimSpace(string(exit.Stderr)))
	case errors.As(err, &exit):
		t.Fatalf("scripts/bpg.sh: %v\n%s", err, exit.Stderr)
	case err != nil:
		t.Fatalf("scripts/bpg.sh: %v", err)
	}
	binary := filepath.Join(strings.TrimSpace(string(out)), "terraform-provider-proxmox")
	mirror := t.TempDir()
	for _, host := range []string{"registry.terraform.io", "registry.opentofu.org"} {
		dir := filepath.Join(mirror, host, "bpg", "proxmox", bpgVersion, runtime.GOOS+"_"+runtime.GOARCH)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(binary, filepath.Join(dir, "terraform-provider-proxmox_v"+bpgVersion)); err != nil {
			t.Fatal(err)
		}
	}
	rc := filepath.Join(t.TempDir(), "terraformrc")
	cfg := fmt.Sprintf("provider_installation {\n  filesystem_mirror {\n    path    = %q\n    include = [\"registry.terraform.io/bpg/proxmox\", \"registry.opentofu.org/bpg/proxmox\"]\n  }\n}\n", mirror)
	if err := os.WriteFile(rc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TF_CLI_CONFIG_FILE", rc)
}

// bpgLabConfig is the README's recipe as this test applies it: two clones of the lab's
// template placed on different nodes (anti-affinity over their tag) and a VM from scratch with
// a disk, each on the node and with the VMID the placement data sources chose. The two data
// sources take their VMIDs from distinct ranges, so that no two VMs of the plan share one.
func bpgLabConfig(env *accEnv, memory int) string {
	bpg := fmt.Sprintf("provider \"proxmox\" {\n  endpoint  = %q\n  api_token = %q\n  insecure  = true\n}\n", env.sim.URL(), env.sim.APIToken())
	return env.providerBlock(bpgProviderSettings) + bpg + fmt.Sprintf(bpgRecipe, memory)
}

// bpgMovingConfig is bpgLabConfig with the recipe's commented move_existing line in force.
func bpgMovingConfig(env *accEnv, memory int) string {
	return strings.Replace(bpgLabConfig(env, memory), "# move_existing", "move_existing", 1)
}

// bpgProviderSettings is the qemuscheduler provider block's body of the recipe: the lab keeps
// its taints in node Notes (pve5 is a GPU node), which only read_node_notes reads. The README
// shows the block with it (TestReadmeBpgRecipe).
const bpgProviderSettings = "  read_node_notes = true # the lab's taints live in node Notes (GPU node pve5)"

// bpgRecipe is the configuration of bpgLabConfig, the VMs' memory in MiB its one verb; the
// README shows it with 2048 (TestReadmeBpgRecipe).
const bpgRecipe = `
data "qemuscheduler_placement" "clones" {
  names       = ["bpg-clone-1", "bpg-clone-2"]
  cores       = 2
  memory      = %[1]d
  disk_gib    = 8
  storage     = "ceph"
  tags        = ["bpg-clone"]
  annotations = { "vmid.qemu-scheduler/range" = "2000-2099" }
  vm_anti_affinity {
    tags = ["bpg-clone"]
  }
  # move_existing = "violations" # move the clones that break their rules (see violations)
}

data "qemuscheduler_placement" "scratch" {
  name        = "bpg-scratch"
  memory      = %[1]d
  disk_gib    = 16
  annotations = { "vmid.qemu-scheduler/range" = "2100-2199" }
}

resource "proxmox_virtual_environment_vm" "clone" {
  count     = 2
  name      = data.qemuscheduler_placement.clones.names[count.index]
  node_name = data.qemuscheduler_placement.clones.placements[count.index].node
  vm_id     = data.qemuscheduler_placement.clones.placements[count.index].vmid
  migrate   = true # a rebalance move (a new node_name) migrates instead of re-creating
  tags      = ["bpg-clone"]

  clone {
    vm_id     = 9000
    node_name = "pve1" # the template's node
  }
  cpu {
    cores = 2
  }
  memory {
    dedicated = %[1]d
  }
  disk {
    datastore_id = "ceph"
    interface    = "scsi0"
    size         = 8
  }
  network_device {
    bridge = "vmbr0"
  }
}

resource "proxmox_virtual_environment_vm" "scratch" {
  name      = "bpg-scratch"
  node_name = data.qemuscheduler_placement.scratch.node
  vm_id     = data.qemuscheduler_placement.scratch.vmid
  migrate   = true

  memory {
    dedicated = %[1]d
  }
  disk {
    datastore_id = data.qemuscheduler_placement.scratch.storage
    interface    = "scsi0"
    size         = 16
  }
  network_device {
    bridge = "vmbr0"
  }
}
`

// The bpg provider (v0.80.0, built from its module) fed by qemuscheduler_placement, against the
// simulated lab cluster: create, an empty plan, an in-place update, an empty plan, a clone's
// node in HA maintenance (the clone stays, its violation listed, the plan empty), the clone
// migrated once move_existing = "violations" is uncommented, an empty plan, destroy leaving
// nothing, with every request answered (no 501, an endpoint pvesim lacks).
func TestAccBpgProviderFedByPlacement(t *testing.T) {
	c := pvesim.LoadTestCluster(t, "../../examples/lab/cluster.yaml")
	// The lab cluster's template 9000 on pve1, its ceph storage and the request log.
	env, sim := simEnv(t, c)
	bpgMirror(t)
	leftAsFound := bpgLeavesNothing(t, sim)
	clones := []string{"proxmox_virtual_environment_vm.clone[0]", "proxmox_virtual_environment_vm.clone[1]"}
	all := append(clones, "proxmox_virtual_environment_vm.scratch")
	updated := []plancheck.PlanCheck{}
	for _, addr := range all {
		updated = append(updated, plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate))
	}
	first := &bpgClone{}
	runCase(t, resource.TestCase{
		ExternalProviders: map[string]resource.ExternalProvider{"proxmox": {Source: "bpg/proxmox", VersionConstraint: bpgVersion}},
		Steps: []resource.TestStep{
			{Config: bpgLabConfig(env, 2048), Check: bpgPlaced(sim, 2048)},
			{Config: bpgLabConfig(env, 2048), PlanOnly: true},
			{Config: bpgLabConfig(env, 3072), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: updated},
				Check: resource.ComposeTestCheckFunc(bpgPlaced(sim, 3072), first.record)},
			{Config: bpgLabConfig(env, 3072), PlanOnly: true},
			// HA maintenance on the first clone's node: the clone (no HA resource) stays there,
			// answered where it runs with the rule it breaks, and bpg plans nothing.
			{PreConfig: func() { must(t, sim.SetNodeHAState(first.node, "maintenance")) }, Config: bpgLabConfig(env, 3072),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check: resource.ComposeTestCheckFunc(first.stayed(sim),
					resource.TestCheckResourceAttr("data.qemuscheduler_placement.clones", "violations.#", "1"),
					resource.TestCheckResourceAttr("data.qemuscheduler_placement.clones", "violations.0.name", "bpg-clone-1"),
					resource.TestCheckResourceAttr("data.qemuscheduler_placement.clones", "violations.0.rule", "TaintToleration"))},
			// Asked to move it, the data source answers another node and the clone's own VMID,
			// and bpg (migrate = true) migrates it, in place.
			{Config: bpgMovingConfig(env, 3072),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(clones[0], plancheck.ResourceActionUpdate)}},
				Check: resource.ComposeTestCheckFunc(bpgPlaced(sim, 3072), first.migrated(sim),
					resource.TestCheckResourceAttr("data.qemuscheduler_placement.clones", "violations.#", "0"))},
			{Config: bpgMovingConfig(env, 3072), PlanOnly: true},
		},
		CheckDestroy: leftAsFound,
	})
	bpgAnswered(t, sim)
}

// bpgLeavesNothing records the cluster's guests and storage use; the CheckDestroy it returns
// fails unless a destroy left both as recorded.
func bpgLeavesNothing(t *testing.T, sim *pvesim.Server) resource.TestCheckFunc {
	before, usedBefore := sim.Guests(), storageUse(t, sim)
	return func(*terraform.State) error {
		if after := sim.Guests(); fmt.Sprint(after) != fmt.Sprint(before) {
			return fmt.Errorf("guests after destroy = %v, want the lab's %v", after, before)
		}
		if used := storageUse(t, sim); used != usedBefore {
			return fmt.Errorf("storage use after destroy = %s, want the lab's %s: disks were left behind", used, usedBefore)
		}
		return nil
	}
}

// bpgClone is where the first clone was before its node went into maintenance.
type bpgClone struct {
	vmid, node string
}

func (c *bpgClone) record(s *terraform.State) error {
	attrs := s.RootModule().Resources["proxmox_virtual_environment_vm.clone.0"].Primary.Attributes
	c.vmid, c.node = attrs["vm_id"], attrs["node_name"]
	return nil
}

// migrated checks that the first clone left its node under the same VMID: migrated, not
// destroyed and created again under another id.
func (c *bpgClone) migrated(sim *pvesim.Server) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		attrs := s.RootModule().Resources["proxmox_virtual_environment_vm.clone.0"].Primary.Attributes
		var vmid int
		if _, err := fmt.Sscan(c.vmid, &vmid); err != nil {
			return fmt.Errorf("clone 0's vm_id %q: %w", c.vmid, err)
		}
		g, ok := sim.Guest(vmid)
		switch {
		case attrs["vm_id"] != c.vmid:
			return fmt.Errorf("clone 0 is VM %s now, was %s: re-created instead of migrated", attrs["vm_id"], c.vmid)
		case !ok || g.Node == c.node:
			return fmt.Errorf("VM %d (in the cluster: %v) is still on %s, whose HA maintenance should move it", vmid, ok, c.node)
		}
		return nil
	}
}

// stayed checks that the first clone is still on its node, under its VMID.
func (c *bpgClone) stayed(sim *pvesim.Server) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		attrs := s.RootModule().Resources["proxmox_virtual_environment_vm.clone.0"].Primary.Attributes
		if attrs["vm_id"] != c.vmid || attrs["node_name"] != c.node {
			return fmt.Errorf("clone 0 is VM %s on %s, was %s on %s: nothing should have moved it", attrs["vm_id"], attrs["node_name"], c.vmid, c.node)
		}
		var vmid int
		if _, err := fmt.Sscan(c.vmid, &vmid); err != nil {
			return err
		}
		if g, ok := sim.Guest(vmid); !ok || g.Node != c.node {
			return fmt.Errorf("VM %d (in the cluster: %v) left %s", vmid, ok, c.node)
		}
		return nil
	}
}

// bpgAnswered fails the test for every request bpg made that pvesim does not implement (501).
func bpgAnswered(t *testing.T, sim *pvesim.Server) {
	t.Helper()
	for _, req := range sim.RequestLog() {
		if req.Status == 501 {
			t.Errorf("bpg called %s %s, which pvesim does not implement (501)", req.Method, req.Path)
		}
	}
}

// bpgPlaced checks that bpg created each VM where the data sources said, the clones on two
// different nodes, with its memory and its disk of the requested size.
func bpgPlaced(sim *pvesim.Server, memory int) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		nodes := map[string]bool{}
		for _, addr := range []string{"proxmox_virtual_environment_vm.clone.0", "proxmox_virtual_environment_vm.clone.1", "proxmox_virtual_environment_vm.scratch"} {
			rs := s.RootModule().Resources[addr]
			if rs == nil {
				return fmt.Errorf("%s is not in the state", addr)
			}
			var vmid int
			if _, err := fmt.Sscan(rs.Primary.ID, &vmid); err != nil {
				return fmt.Errorf("%s: id %q: %w", addr, rs.Primary.ID, err)
			}
			g, ok := sim.Guest(vmid)
			if !ok {
				return fmt.Errorf("%s: VM %d is not in the cluster", addr, vmid)
			}
			size := "size=8G"
			if strings.HasSuffix(addr, "scratch") {
				size = "size=16G"
			} else {
				nodes[g.Node] = true
			}
			switch {
			case g.Node != rs.Primary.Attributes["node_name"]:
				return fmt.Errorf("%s: VM %d is on %s, the state says %s", addr, vmid, g.Node, rs.Primary.Attributes["node_name"])
			case g.Config["memory"] != fmt.Sprint(memory):
				return fmt.Errorf("%s: memory %q, want %d", addr, g.Config["memory"], memory)
			case !strings.Contains(g.Config["scsi0"], size):
				return fmt.Errorf("%s: scsi0 %q, want %s", addr, g.Config["scsi0"], size)
			case g.Node == "pve5":
				return fmt.Errorf("%s: VM %d is on pve5, the GPU node its Notes taint dedicated=gpu:NoSchedule", addr, vmid)
			}
		}
		if len(nodes) != 2 {
			return fmt.Errorf("the two clones share a node: %v", nodes)
		}
		return nil
	}
}

// storageUse is every storage's used bytes on every node, as the cluster reports them.
func storageUse(t *testing.T, sim *pvesim.Server) string {
	t.Helper()
	c := simClient(t, sim)
	snap, err := c.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var use []string
	for _, n := range snap.Nodes {
		for _, st := range n.Storages {
			use = append(use, fmt.Sprintf("%s/%s=%d", n.Name, st.Name, st.Used))
		}
	}
	return strings.Join(use, " ")
}

// The report, through the real CLI: placement data sources without a VMID range, two
// single-name ones and a for_each of them, feed bpg VMs in one apply. They answered one VMID
// each (pve5/105 twice), and the second bpg VM failed "VM 105 already exists"; every pick of
// a plan now debits the same plan-time ledger. Once the VMs exist the picks stay (an empty
// plan), and a destroy leaves the cluster as found.
func TestAccBpgFedByPlacementsWithoutRange(t *testing.T) {
	env, sim := simEnv(t, pvesim.LoadTestCluster(t, "../../examples/lab/cluster.yaml"))
	bpgMirror(t)
	leftAsFound := bpgLeavesNothing(t, sim)
	bpg := fmt.Sprintf("provider \"proxmox\" {\n  endpoint  = %q\n  api_token = %q\n  insecure  = true\n}\n", sim.URL(), sim.APIToken())
	cli := newCLIDirRequiring(t, fmt.Sprintf(`    proxmox = { source = "bpg/proxmox", version = %q }`, bpgVersion),
		env.providerBlock(bpgProviderSettings)+bpg+`
data "qemuscheduler_placement" "a" {
  name   = "fed-a"
  memory = 1024
}
data "qemuscheduler_placement" "b" {
  name   = "fed-b"
  memory = 1024
}
data "qemuscheduler_placement" "each" {
  for_each = toset(["fed-x", "fed-y"])
  name     = each.key
  memory   = 1024
}
locals {
  picks = merge({ a = data.qemuscheduler_placement.a, b = data.qemuscheduler_placement.b }, data.qemuscheduler_placement.each)
}
resource "proxmox_virtual_environment_vm" "fed" {
  for_each  = local.picks
  name      = each.value.name
  node_name = each.value.node
  vm_id     = each.value.vmid
  memory {
    dedicated = 1024
  }
  network_device {
    bridge = "vmbr0"
  }
}
output "picks" {
  value = { for k, p in local.picks : p.name => "${p.node}/${p.vmid}" }
}
`)
	cli.mustRun("apply", "-auto-approve", "-input=false")
	var picks map[string]string
	if err := json.Unmarshal([]byte(cli.mustRun("output", "-json", "picks")), &picks); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for name, at := range picks {
		var node string
		var vmid int
		if _, err := fmt.Sscanf(strings.Replace(at, "/", " ", 1), "%s %d", &node, &vmid); err != nil {
			t.Fatalf("pick of %s = %q: %v", name, at, err)
		}
		if other, taken := ids[fmt.Sprint(vmid)]; taken {
			t.Errorf("%s and %s were both given VMID %d", other, name, vmid)
		}
		ids[fmt.Sprint(vmid)] = name
		if g, ok := sim.Guest(vmid); !ok || g.Node != node || g.Config["name"] != name {
			t.Errorf("pick %s = %s: the cluster's VM %d is %v on %q named %q, want bpg's VM there", name, at, vmid, ok, g.Node, g.Config["name"])
		}
	}
	if len(picks) != 4 {
		t.Fatalf("picks %v, want 4", picks)
	}
	// The picks stay with their VMs: the plan after the apply changes nothing.
	if out, err := cli.run("plan", "-detailed-exitcode", "-input=false"); err != nil {
		t.Errorf("the plan after the apply: %v, want no changes (the picks stay with their VMs); output:\n%s", err, out)
	}
	cli.mustRun("destroy", "-auto-approve", "-input=false")
	if err := leftAsFound(nil); err != nil {
		t.Error(err)
	}
	bpgAnswered(t, sim)
}

package provider

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

const vmAddr = "qemuscheduler_vm.web"

// guestCheck asserts on the simulator's copy of the VM the resource manages, which must be
// where the state says; check nil asserts only that.
func guestCheck(sim *pvesim.Server, check func(g pvesim.GuestState) error) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		vmid, node, err := stateVM(s)
		if err != nil {
			return err
		}
		return guestExists(sim, vmid, func(g pvesim.GuestState) error {
			if g.Node != node {
				return fmt.Errorf("state says node %s, cluster says %s", node, g.Node)
			}
			if check == nil {
				return nil
			}
			return check(g)
		})(s)
	}
}

// stateVM is the VMID and node the state has for the VM of vmAddr.
func stateVM(s *terraform.State) (int, string, error) {
	rs, ok := s.RootModule().Resources[vmAddr]
	if !ok {
		return 0, "", fmt.Errorf("%s not in state", vmAddr)
	}
	vmid, err := strconv.Atoi(rs.Primary.Attributes["vmid"])
	if err != nil {
		return 0, "", fmt.Errorf("vmid in state: %w", err)
	}
	return vmid, rs.Primary.Attributes["node"], nil
}

func expectConfig(want map[string]string) func(g pvesim.GuestState) error {
	return func(g pvesim.GuestState) error {
		for k, v := range want {
			if g.Config[k] != v {
				return fmt.Errorf("config %s = %q, want %q (config %v)", k, g.Config[k], v, g.Config)
			}
		}
		return nil
	}
}

func TestAccVMLifecycleFromScratch(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	vm := func(extra string) string {
		return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name        = "web-1"
  cores       = 2
  memory      = 2048
  tags        = ["web", "prod"]
  description = "front end"
  annotations = { "vmid.qemu-scheduler/range" = "500-599" }
  disk {
    slot = "scsi0"
    size = %s
  }
  network {
    slot = "net0"
    vlan = 20
  }
  cloud_init {
    user      = "debian"
    ssh_keys  = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@host"]
    ip_config = ["ip=dhcp"]
  }
  %s
}`, "10", extra))
	}
	runSteps(t,
		resource.TestStep{Config: vm(""), Check: resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, "node", "pve2"),
			resource.TestCheckResourceAttr(vmAddr, "vmid", "500"),
			resource.TestCheckResourceAttr(vmAddr, "id", "500"),
			resource.TestCheckResourceAttr(vmAddr, "storage", "ceph"),
			resource.TestCheckResourceAttr(vmAddr, "disk.0.storage", "ceph"),
			resource.TestMatchResourceAttr(vmAddr, "network.0.mac", regexp.MustCompile(`^BC:24:11:`)),
			resource.TestMatchResourceAttr(vmAddr, "placement_summary", regexp.MustCompile(`^web-1: pve2 \(score 186.56; 3/4 nodes feasible\), vmid 500 \(range 500-599\)`)),
			guestCheck(sim, func(g pvesim.GuestState) error {
				if g.Status != "running" {
					return fmt.Errorf("status %s, want running", g.Status)
				}
				return expectConfig(map[string]string{"cores": "2", "memory": "2048", "tags": "prod;qemuscheduler-record;web", "scsi0": "ceph:vm-500-disk-0,size=10G",
					"ciuser": "debian", "sshkeys": "ssh-ed25519%20AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl%20user%40host", "ipconfig0": "ip=dhcp", "ide2": "ceph:vm-500-cloudinit,media=cdrom"})(g)
			}),
		)},
		// Update in place: sizes, tags, description, a bigger disk, a stopped VM.
		resource.TestStep{Config: vm(`started = false`), Check: resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, "vmid", "500"),
			guestCheck(sim, func(g pvesim.GuestState) error {
				if g.Status != "stopped" {
					return fmt.Errorf("status %s, want stopped", g.Status)
				}
				return nil
			}),
		)},
		resource.TestStep{Config: vm(`started = false
  node    = "pve4"`), ExpectError: wrapped(`(?s)pve4 fails the scheduling rules for this VM: NodeOnline: node is offline.*terraform destroy -refresh=false`)},
		resource.TestStep{Config: vm(`started = false
  node    = "pve3"`), Check: resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, "node", "pve3"),
			resource.TestCheckResourceAttr(vmAddr, "vmid", "500"),
			resource.TestMatchResourceAttr(vmAddr, "placement_summary", regexp.MustCompile(`^web-1: pve3 \(migrated; placed on pve2 with score 186.56; 3/4 nodes feasible\), vmid 500`)),
			guestCheck(sim, nil),
		)},
		resource.TestStep{ResourceName: vmAddr, ImportState: true, ImportStateId: "pve3/500", ImportStateVerify: true,
			ImportStateVerifyIgnore: []string{"annotations", "placement_summary", "storage", "cloud_init", "timeouts", "%"}},
	)
}

func TestAccVMUpdateInPlace(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	vm := func(cores, memory, size int, tags, desc string) string {
		return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name        = "web-1"
  cores       = %d
  memory      = %d
  balloon     = 512
  tags        = %s
  description = %q
  on_boot     = true
  disk {
    slot    = "scsi0"
    storage = "local-lvm"
    size    = %d
  }
}`, cores, memory, tags, desc, size))
	}
	runSteps(t,
		resource.TestStep{Config: vm(1, 1024, 8, `["a"]`, "one")},
		resource.TestStep{Config: vm(4, 4096, 20, `["b", "c"]`, "two"), Check: guestCheck(sim, expectConfig(map[string]string{
			"cores": "4", "memory": "4096", "tags": "b;c", "description": "two", "scsi0": "local-lvm:vm-101-disk-0,size=20G", "onboot": "1", "balloon": "512"}))},
		resource.TestStep{Config: vm(4, 4096, 10, `["b", "c"]`, "two"), ExpectError: wrapped(`scsi0 is 20 GiB; Proxmox VE cannot shrink disks`)},
	)
}

func TestAccVMClone(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	runSteps(t, resource.TestStep{
		Config: env.config(`resource "qemuscheduler_vm" "web" {
  name   = "web-clone"
  memory = 1024
  clone {
    source_vmid = 9000
  }
  disk {
    slot = "scsi0"
    size = 16
  }
}`),
		Check: resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, "node", "pve2"),
			resource.TestCheckResourceAttr(vmAddr, "cores", "2"),
			guestCheck(sim, expectConfig(map[string]string{"name": "web-clone", "memory": "1024", "cores": "2", "scsi0": "ceph:vm-101-disk-0,size=16G"})),
		),
	})
}

func TestAccVMCountGetsDistinctIDsAndSpreads(t *testing.T) {
	env, sim := simEnv(t, equalCluster())
	runSteps(t, resource.TestStep{
		Config: env.config(countedVMs("web", 20, 2048, "")),
		Check: func(*terraform.State) error {
			perNode := map[string]int{}
			all := guests(sim)
			for _, g := range all {
				perNode[g.Node]++
			}
			if len(all) != 20 {
				return fmt.Errorf("%d guests, want 20", len(all))
			}
			for node, n := range perNode {
				if n < 5 || n > 8 {
					return fmt.Errorf("placements per node %v: %s has %d, want an even spread", perNode, node, n)
				}
			}
			return nil
		},
	})
}

// Someone else creates the chosen VMID between our decision and our create: the resource
// marks it taken and decides again.
func TestAccVMRetriesWhenTheIDIsTaken(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	runSteps(t, resource.TestStep{
		PreConfig: func() {
			sim.FailRequests("POST /nodes/{node}/qemu", 1, 500, "unable to create VM 101 - VM 101 already exists on node 'pve1'")
		},
		Config: env.config(`resource "qemuscheduler_vm" "web" {
  name = "web-1"
}`),
		Check: resource.TestCheckResourceAttr(vmAddr, "vmid", "108"), // the retry skips a few free ids, a fixed offset from the name (see provision.skipFor), lest competitors collide again
	})
}

func TestAccVMFailures(t *testing.T) {
	t.Run("clone task fails, nothing is left behind", func(t *testing.T) {
		env, sim := simEnv(t, labCluster())
		runCase(t, resource.TestCase{
			Steps: []resource.TestStep{{
				PreConfig: func() { sim.FailNextTask("qmclone", "clone failed: storage 'ceph' is full") },
				Config: env.config(`resource "qemuscheduler_vm" "web" {
  name = "web-1"
  clone {
    source_vmid = 9000
  }
}`),
				ExpectError: wrapped(`clone failed: storage 'ceph' is full`),
			}},
			CheckDestroy: guestGone(sim, 101),
		})
	})
	t.Run("start fails after create: the VM is tainted, not orphaned", func(t *testing.T) {
		env, sim := simEnv(t, labCluster())
		runCase(t, resource.TestCase{
			Steps: []resource.TestStep{{
				PreConfig:   func() { sim.FailNextTask("qmstart", "start failed: QEMU exited with code 1") },
				Config:      env.config(`resource "qemuscheduler_vm" "web" { name = "web-1" }`),
				ExpectError: wrapped(`QEMU exited with code 1`),
			}},
			CheckDestroy: guestGone(sim, 101),
		})
	})
	t.Run("node goes offline before apply: rescheduled", func(t *testing.T) {
		env, sim := simEnv(t, labCluster())
		runSteps(t, resource.TestStep{
			PreConfig: func() { sim.SetNodeOnline("pve2", false) },
			Config:    env.config(`resource "qemuscheduler_vm" "web" { name = "web-1" }`),
			Check:     resource.TestCheckResourceAttr(vmAddr, "node", "pve3"),
		})
	})
	t.Run("nothing fits fails the plan", func(t *testing.T) {
		env, _ := simEnv(t, labCluster())
		runSteps(t, resource.TestStep{
			Config: env.config(`resource "qemuscheduler_vm" "web" {
  name   = "big"
  memory = 65536
}`),
			PlanOnly:    true,
			ExpectError: wrapped(`0/4 nodes are available: 3 node\(s\) exceeded memory overcommit ratio 1, 1 node\(s\) were offline`),
		})
	})
}

func TestAccVMDriftAndOutsideChanges(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	cfg := env.config(`resource "qemuscheduler_vm" "web" { name = "web-1" }`)
	runSteps(t,
		resource.TestStep{Config: cfg, Check: resource.TestCheckResourceAttr(vmAddr, "node", "pve2")},
		// Moved by HA: not drift, since node is not pinned.
		resource.TestStep{PreConfig: func() { sim.SetGuestNode(101, "pve3") }, Config: cfg, Check: resource.TestCheckResourceAttr(vmAddr, "node", "pve3")},
		// Sticky: new annotations that exclude its node do not move it (the plan warns).
		resource.TestStep{Config: env.config(`resource "qemuscheduler_vm" "web" {
  name        = "web-1"
  annotations = { "node.qemu-scheduler/regex" = "pve1" }
}`), Check: resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, "node", "pve3"),
			resource.TestCheckResourceAttr(vmAddr, "vmid", "101"),
			guestCheck(sim, nil))},
		// Deleted behind Terraform's back: removed from state and planned again.
		resource.TestStep{PreConfig: func() { sim.DeleteGuest(101) }, Config: cfg, PlanOnly: true, ExpectNonEmptyPlan: true},
	)
}

// Two applies with separate provider instances (as two terraform processes have) race for
// the same VMIDs on one cluster: both must finish, with distinct ids.
func TestAccVMConcurrentApplies(t *testing.T) {
	env, sim := simEnv(t, equalCluster(), pvesim.WithTaskDuration(100*time.Millisecond))
	applyConcurrently(t, []string{"a", "b"}, func(run string) string {
		return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  count = 5
  name  = "%s-${count.index}"
}`, run))
	}, func(run string) error {
		if _, ids := guestsPerNode(sim, run+"-"); len(ids) != 5 {
			return fmt.Errorf("run %s owns %d VMs, want 5", run, len(ids))
		}
		return nil
	})
}

func TestAccVMNetworkCloudInitAndReplace(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	vm := func(vlan int, user, pin string) string {
		return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name = "web-1"
  %s
  network {
    slot = "net0"
    vlan = %d
  }
  cloud_init {
    user       = %q
    nameserver = "10.0.0.53"
  }
}`, pin, vlan, user))
	}
	var mac string
	runSteps(t,
		resource.TestStep{Config: vm(10, "debian", ""), Check: resource.ComposeAggregateTestCheckFunc(
			guestCheck(sim, func(g pvesim.GuestState) error {
				mac = g.Config["net0"][len("virtio="):len("virtio=BC:24:11:00:00:00")]
				return expectConfig(map[string]string{"ciuser": "debian", "nameserver": "10.0.0.53"})(g)
			}))},
		resource.TestStep{Config: vm(30, "ops", ""), Check: guestCheck(sim, func(g pvesim.GuestState) error {
			return expectConfig(map[string]string{"ciuser": "ops", "net0": "virtio=" + mac + ",bridge=vmbr0,tag=30"})(g)
		})},
		resource.TestStep{Config: vm(30, "ops", "vmid = 700"), ConfigPlanChecks: resource.ConfigPlanChecks{
			PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionDestroyBeforeCreate)},
		}, Check: resource.TestCheckResourceAttr(vmAddr, "vmid", "700")},
	)
}

// A VM made by hand is imported by node/vmid; a configuration that describes it plans no
// changes.
func TestAccVMImportThenPlanIsEmpty(t *testing.T) {
	env, _ := simEnv(t, labCluster())
	importPlansEmpty(t, env, legacyVM(map[string]string{"tags": "old", "description": "made by hand", "onboot": "1", "start": "1"}),
		legacyConfig(env, `tags        = ["old"]
  description = "made by hand"
  on_boot     = true`))
}

// legacyVM is the PVE config of the VM made by hand that the import tests import, with extra.
func legacyVM(extra map[string]string) map[string]string {
	cfg := map[string]string{"name": "legacy", "cores": "2", "memory": "1024", "scsi0": "local-lvm:8", "net0": "virtio,bridge=vmbr0"}
	maps.Copy(cfg, extra)
	return cfg
}

// legacyConfig is the configuration that describes legacyVM, with attrs.
func legacyConfig(env *accEnv, attrs string) string {
	return env.config(`resource "qemuscheduler_vm" "web" {
  name        = "legacy"
  cores       = 2
  memory      = 1024
  ` + attrs + `
  disk {
    slot = "scsi0"
    size = 8
  }
  network {
    slot = "net0"
  }
}`)
}

// A VM cloned from the template outside Terraform (or by a configuration whose state was
// lost) is imported into a configuration with its clone block, as the docs' import example
// does with the worker of examples/resources: PVE does not say what a VM was cloned from, so
// the first apply after the import takes the clone block as it is, in place, instead of
// destroying the VM to clone it anew. From then on a changed clone block replaces, as always.
func TestAccVMImportClonedVMKeepsIt(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	vm := func(source int) string {
		return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name = "web-1"
  clone {
    source_vmid = %d
  }
  disk {
    slot = "scsi0"
    size = 8
  }
  network {
    slot = "net0"
  }
}`, source))
	}
	clone := func() {
		must(t, simClient(t, env.sim).CloneVM(context.Background(), proxmox.CloneRequest{SourceVMID: 9000, NewID: 150, Target: "pve3", Name: "web-1", Full: true}))
	}
	runSteps(t,
		resource.TestStep{PreConfig: clone, Config: vm(9000), ResourceName: vmAddr, ImportState: true, ImportStateId: "150", ImportStatePersist: true},
		resource.TestStep{Config: vm(9000), ConfigPlanChecks: resource.ConfigPlanChecks{
			PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate)},
		}, Check: resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, "vmid", "150"),
			resource.TestCheckResourceAttr(vmAddr, "clone.source_vmid", "9000"),
			guestCheck(sim, nil),
		)},
		resource.TestStep{Config: vm(9001), ConfigPlanChecks: resource.ConfigPlanChecks{
			PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionDestroyBeforeCreate)},
		}},
	)
}

// importPlansEmpty creates VM 150 on pve3 by hand with config, imports it as pve3/150 under
// cfg, and then cfg must plan no changes.
func importPlansEmpty(t *testing.T, env *accEnv, config map[string]string, cfg string) {
	t.Helper()
	runSteps(t,
		resource.TestStep{PreConfig: func() { env.createVM(t, "pve3", 150, config) }, Config: cfg,
			ResourceName: vmAddr, ImportState: true, ImportStateId: "pve3/150", ImportStatePersist: true},
		resource.TestStep{Config: cfg, PlanOnly: true},
	)
}

// A template on local storage can only be cloned onto its own node: the scheduler is told so,
// and a pin elsewhere fails the plan with the reason.
func TestAccVMCloneFromLocalTemplate(t *testing.T) {
	env, _ := simEnv(t, labCluster())
	vm := func(pin string) string {
		return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name = "web-1"
  %s
  clone {
    source_vmid = 9001
  }
}`, pin))
	}
	runSteps(t,
		resource.TestStep{Config: vm(`node = "pve2"`), PlanOnly: true, ExpectError: wrapped(`(?s)keeps scsi0 on storage "local-lvm", which is local to pve3.*clone from a template on shared storage\.\s+If this is a destroy.*terraform destroy -refresh=false`)},
		resource.TestStep{Config: vm(""), Check: resource.TestCheckResourceAttr(vmAddr, "node", "pve3")},
	)
}

// OpenTofu's generated configuration of an imported VM (tofu plan -generate-config-out) writes
// the VM's empty cpu_type and description as "" where Terraform writes null: "" is PVE's
// default CPU type, so that configuration validates and plans no changes, and a create with it
// sends no cpu.
func TestAccVMImportGeneratedConfigWithEmptyStrings(t *testing.T) {
	env, _ := simEnv(t, labCluster())
	importPlansEmpty(t, env, legacyVM(nil), legacyConfig(env, `cpu_type    = ""
  description = ""
  started     = false`))
	fresh, sim := simEnv(t, labCluster())
	runSteps(t, resource.TestStep{Config: fresh.config(`resource "qemuscheduler_vm" "web" {
  name     = "new"
  cpu_type = ""
}`), Check: resource.ComposeAggregateTestCheckFunc(
		resource.TestCheckResourceAttr(vmAddr, "cpu_type", ""),
		guestCheck(sim, func(g pvesim.GuestState) error {
			if cpu, ok := g.Config["cpu"]; ok {
				return fmt.Errorf("config has cpu %q, want none (PVE's default)", cpu)
			}
			return nil
		}),
	)})
}

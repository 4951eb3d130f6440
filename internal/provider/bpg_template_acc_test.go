package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// bpgTemplateConfig is a template made with bpg (template = true on a VM from scratch, which
// v0.80.0 creates with template: 1, so PVE's create_disks makes its disk a base volume) and a
// linked clone of it on another node of the shared storage.
func bpgTemplateConfig(env *accEnv) string {
	return fmt.Sprintf(`provider "proxmox" {
  endpoint  = %q
  api_token = %q
  insecure  = true
}

resource "proxmox_virtual_environment_vm" "template" {
  name      = "bpg-template"
  node_name = "pve1"
  vm_id     = 2200
  template  = true
  started   = false # as bpg's clone guide: started (true by default) would plan its addresses again

  disk {
    datastore_id = "ceph"
    interface    = "virtio0"
    size         = 4
  }
}

resource "proxmox_virtual_environment_vm" "linked" {
  name      = "bpg-linked"
  node_name = "pve2"
  vm_id     = 2201

  clone {
    vm_id     = proxmox_virtual_environment_vm.template.vm_id
    node_name = "pve1"
    full      = false
  }
}
`, env.sim.URL(), env.sim.APIToken())
}

// The bpg provider (v0.80.0) makes a template (template = true) and a linked clone of it
// against the simulated lab cluster: the template's disk is a base volume, the clone's disk
// is layered on it, a second plan is empty, and destroy leaves the cluster as it was, with
// every request answered (no 501).
func TestAccBpgTemplateAndLinkedClone(t *testing.T) {
	env, sim := simEnv(t, pvesim.LoadTestCluster(t, "../../examples/lab/cluster.yaml"))
	bpgMirror(t)
	leftAsFound, cephBefore := bpgLeavesNothing(t, sim), cephUsed(t, sim)
	runCase(t, resource.TestCase{
		ExternalProviders: map[string]resource.ExternalProvider{"proxmox": {Source: "bpg/proxmox", VersionConstraint: bpgVersion}},
		Steps: []resource.TestStep{
			{Config: bpgTemplateConfig(env), Check: bpgTemplateMade(t, sim, cephBefore)},
			{Config: bpgTemplateConfig(env), PlanOnly: true},
		},
		CheckDestroy: leftAsFound,
	})
	bpgAnswered(t, sim)
}

// bpgTemplateMade checks the template's base volume and the linked clone on pve2, whose disk
// is layered on it: ceph holds the template's 4 GiB more than before, and nothing for the clone.
func bpgTemplateMade(t *testing.T, sim *pvesim.Server, cephBefore uint64) resource.TestCheckFunc {
	return func(*terraform.State) error {
		tmpl, ok := sim.Guest(2200)
		if !ok {
			return fmt.Errorf("VM 2200 is not in the cluster")
		}
		clone, ok := sim.Guest(2201)
		switch {
		case tmpl.Config["template"] != "1" || !strings.HasPrefix(tmpl.Config["virtio0"], "ceph:base-2200-disk-0,"):
			return fmt.Errorf("template 2200: template %q, virtio0 %q, want 1 and a base volume", tmpl.Config["template"], tmpl.Config["virtio0"])
		case !ok:
			return fmt.Errorf("linked clone 2201 is not in the cluster")
		case clone.Node != "pve2" || clone.Config["template"] != "" || !strings.HasPrefix(clone.Config["virtio0"], "ceph:vm-2201-disk-0,"):
			return fmt.Errorf("clone 2201 on %s, template %q, virtio0 %q", clone.Node, clone.Config["template"], clone.Config["virtio0"])
		}
		if used := cephUsed(t, sim); used != cephBefore+4<<30 {
			return fmt.Errorf("ceph used %d bytes, want %d: the template's 4 GiB and a linked clone's nothing", used, cephBefore+4<<30)
		}
		return nil
	}
}

// cephUsed is the bytes the lab's shared ceph storage uses.
func cephUsed(t *testing.T, sim *pvesim.Server) uint64 {
	t.Helper()
	snap, err := simClient(t, sim).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range snap.Nodes[0].Storages {
		if st.Name == "ceph" {
			return st.Used
		}
	}
	t.Fatalf("node %s has no ceph storage", snap.Nodes[0].Name)
	return 0
}

// bpg v0.80.0's template = true on a clone only writes template: 1 into the clone's config
// (its clone path's config update), so the disks stay vm-N-disk-M volumes and PVE refuses a
// linked clone of that template, as the README says; the apply fails with PVE's message.
func TestAccBpgClonedTemplateRefusesLinkedClones(t *testing.T) {
	env, sim := simEnv(t, pvesim.LoadTestCluster(t, "../../examples/lab/cluster.yaml"))
	bpgMirror(t)
	config := fmt.Sprintf(`provider "proxmox" {
  endpoint  = %q
  api_token = %q
  insecure  = true
}

resource "proxmox_virtual_environment_vm" "template" {
  name      = "bpg-cloned-template"
  node_name = "pve1"
  vm_id     = 2210
  template  = true
  started   = false

  clone {
    vm_id = 9000
  }
}

resource "proxmox_virtual_environment_vm" "linked" {
  name      = "bpg-linked"
  node_name = "pve1"
  vm_id     = 2211

  clone {
    vm_id = proxmox_virtual_environment_vm.template.vm_id
    full  = false
  }
}
`, env.sim.URL(), env.sim.APIToken())
	runCase(t, resource.TestCase{
		ExternalProviders: map[string]resource.ExternalProvider{"proxmox": {Source: "bpg/proxmox", VersionConstraint: bpgVersion}},
		Steps: []resource.TestStep{{Config: config,
			ExpectError: regexp.MustCompile(`Linked clone feature is not supported for 'ceph:vm-2210-disk-0' \(scsi0\)`)}},
		CheckDestroy: bpgLeavesNothing(t, sim),
	})
	bpgAnswered(t, sim)
}

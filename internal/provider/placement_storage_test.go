package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// A kept placement answers the storage the VM's disks are on, not the one a new VM would get:
// fed to bpg's datastore_id, the other answer moved the disks on the next apply, and back on
// the one after (each move leaves the other storage with more free space). The guest's
// config is read once per kept name; a new name costs no read. A node pin does not move it (it
// pins new VMs only): it is answered where it runs, with its storage.
func TestAccPlacementExistingVMKeepsItsStorage(t *testing.T) {
	cluster := pvesim.Cluster{
		Nodes: []pvesim.NodeSpec{{Name: "pve1", CPUs: 16, MemoryGiB: 64}, {Name: "pve2", CPUs: 16, MemoryGiB: 64}},
		Storages: []pvesim.StorageSpec{
			{Name: "local-lvm", Type: "lvmthin", Content: []string{"images"}, SizeGiB: 500},
			{Name: "tank", Type: "zfspool", Content: []string{"images"}, SizeGiB: 490, UsedGiB: 40},
		},
		Guests: []pvesim.GuestSpec{{VMID: 100, Node: "pve1", Name: "db-1", Status: "running", Cores: 2, MemoryMiB: 2048,
			Config: map[string]string{"scsi0": "tank:vm-100-disk-0,size=32G", "scsi1": "local-lvm:vm-100-disk-1,size=8G"}}},
	}
	env := newAccEnv(t, cluster)
	sim := env.needsSim(t)
	reads := 0
	runSteps(t, resource.TestStep{
		PreConfig: func() { reads = sim.Requests(vmConfigReads) },
		Config: env.config(`data "qemuscheduler_placement" "p" {
  names    = ["db-1", "db-2"]
  memory   = 2048
  disk_gib = 32
}`),
		Check: resource.ComposeTestCheckFunc(
			resource.TestCheckResourceAttr("data.qemuscheduler_placement.p", "placements.0.storage", "tank"),
			resource.TestCheckResourceAttr("data.qemuscheduler_placement.p", "placements.1.storage", "local-lvm"),
			resource.TestMatchResourceAttr("data.qemuscheduler_placement.p", "summary", regexp.MustCompile(`^db-1: existing VM 100 stays on pve1, storage tank\n`)),
			func(*terraform.State) error {
				// The plan and the apply's refresh read the data source: one config read each.
				if n := sim.Requests(vmConfigReads) - reads; n < 1 || n > 2 {
					return fmt.Errorf("%d config reads, want one per read of the data source (at most 2)", n)
				}
				return nil
			}),
	}, resource.TestStep{
		Config: env.config(`data "qemuscheduler_placement" "p" {
  name     = "db-1"
  node     = "pve2"
  memory   = 2048
  disk_gib = 32
}`),
		Check: resource.ComposeTestCheckFunc(
			resource.TestCheckResourceAttr("data.qemuscheduler_placement.p", "placements.0.node", "pve1"),
			resource.TestCheckResourceAttr("data.qemuscheduler_placement.p", "placements.0.vmid", "100"),
			resource.TestCheckResourceAttr("data.qemuscheduler_placement.p", "placements.0.storage", "tank")),
	})
}

package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// No silent misconfiguration, through Terraform: a typo in a node Notes key and a malformed
// label warn naming the node and the line (the GPU node keeps its taint, loses only its
// broken label), and memory = 16 meant as GiB warns that memory is in MiB.
func TestAccMisconfigurationWarns(t *testing.T) {
	c := labCluster()
	c.Nodes[0].Notes = "qemu-scheduler/taint: dedicated=gpu:NoSchedule"
	c.Nodes[1].Notes = "qemu-scheduler/labels: zone=a, zone"
	env, _ := simEnv(t, c)
	log := &warningLog{}
	runLoggingWarnings(t, log, resource.TestStep{
		Config: env.providerBlock("read_node_notes = true") + `data "qemuscheduler_placement" "p" {
  name = "web"
}
resource "qemuscheduler_vm" "tiny" {
  name   = "tiny"
  memory = 16
}`,
		Check: resource.ComposeTestCheckFunc(
			log.has(`node pve1, Notes line 1 "qemu-scheduler/taint: dedicated=gpu:NoSchedule": unknown key qemu-scheduler/taint`, "the line is ignored"),
			log.has(`node pve2, Notes line 1`, "the entry is skipped"),
			log.has("Memory is in MiB", "memory = 16 gives the VM 16 MiB", "for 16 GiB write 16384"),
		),
	})
}

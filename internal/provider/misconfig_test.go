package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// No silent misconfiguration, through Terraform: a typo in a node Notes key warns naming the
// node, the line and the known keys (the GPU node goes untainted, so the warning is all that
// tells); a malformed label warns naming the node, the line and what the node loses (its
// zone), and drops only that label (pve2 keeps its rack); a skipped entry whose key another
// entry gives says what the node keeps instead; memory = 16 meant as GiB warns that memory is
// in MiB.
func TestAccMisconfigurationWarns(t *testing.T) {
	c := labCluster()
	c.Nodes[0].Notes = "qemu-scheduler/taint: dedicated=gpu:NoSchedule"
	c.Nodes[1].Notes = "qemu-scheduler/labels: zone=a b, rack=r1"
	c.Nodes[2].Notes = "qemu-scheduler/labels: zone=b, zone"
	env, _ := simEnv(t, c)
	log := &warningLog{}
	nodes := "data.qemuscheduler_nodes.n"
	runLoggingWarnings(t, log, resource.TestStep{
		Config: env.providerBlock("read_node_notes = true") + `data "qemuscheduler_placement" "p" {
  name = "web"
}
data "qemuscheduler_nodes" "n" {}
resource "qemuscheduler_vm" "tiny" {
  name   = "tiny"
  memory = 16
}`,
		Check: resource.ComposeTestCheckFunc(
			log.has(`node pve1, Notes line 1 "qemu-scheduler/taint: dedicated=gpu:NoSchedule": unknown key qemu-scheduler/taint; `+
				`the known keys are qemu-scheduler/labels and qemu-scheduler/taints`, "the line is ignored"),
			resource.TestCheckResourceAttr(nodes, "nodes.0.taints.#", "0"),
			log.has(`node pve2, Notes line 1 "qemu-scheduler/labels: zone=a b, rack=r1": label "zone"`,
				"the entry is skipped, so node pve2 has no label zone from its Notes"),
			resource.TestCheckNoResourceAttr(nodes, "nodes.1.labels.zone"),
			resource.TestCheckResourceAttr(nodes, "nodes.1.labels.rack", "r1"),
			log.has(`node pve3, Notes line 1 "qemu-scheduler/labels: zone=b, zone"`,
				"the entry is skipped, so node pve3 keeps the label zone=b of another entry of its Notes"),
			resource.TestCheckResourceAttr(nodes, "nodes.2.labels.zone", "b"),
			log.has("Memory is in MiB", "memory = 16 gives the VM 16 MiB", "for 16 GiB write 16384"),
		),
	})
}

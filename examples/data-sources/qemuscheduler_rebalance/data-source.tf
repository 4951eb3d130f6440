# Which opted-in VMs should move, and where? Read-only: nothing moves until you pin them.
data "qemuscheduler_rebalance" "web" {
  tags = ["rebalance"] # only guests carrying every one of these tags may move

  # The rules of the guests without a placement record; a guest with one (every VM
  # qemuscheduler_vm created with a policy) is checked against its own.
  annotations = { "node.qemu-scheduler/regex" = "pve[0-9]+" }

  # Balance by configured size: nodes above a target give guests to nodes under the thresholds.
  low_node_utilization {
    cpu_threshold    = 30
    memory_threshold = 30
    cpu_target       = 70
    memory_target    = 70
  }
  max_moves           = 5
  max_moves_per_node  = 2
  max_moves_per_group = 1 # the disruption budget of each anti-affinity or spread group
}

# Act on a move with qemuscheduler_vm: copy the `to` node into the VM's `node` (a pinned node
# migrates), or with the bpg provider: node_name = <to>, migrate = true. Give the data source
# `depends_on = [<those VMs>]` so that the apply that moves them reads it after the moves;
# otherwise its outputs show the moves just made until the next apply.
output "moves" {
  value = data.qemuscheduler_rebalance.web.summary
}

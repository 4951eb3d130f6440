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
  min_gain            = 10 # a move must narrow the gap between its nodes by 10 points
  max_moves           = 5
  max_moves_per_node  = 2
  max_moves_per_group = 1 # the disruption budget of each anti-affinity or spread group
}

# Power saving: empty the nodes under 20% of their CPUs and memory into the fullest nodes that
# pass each guest's rules. Opted-in guests on a node they no longer pass (HA maintenance, a
# new taint) move too (remove_policy_violations).
data "qemuscheduler_rebalance" "consolidate" {
  tags                     = ["rebalance"]
  remove_policy_violations = true # the default
  high_node_utilization {
    cpu_threshold    = 20
    memory_threshold = 20
  }
}

# Patching: empty pve4 of the opted-in guests. Groups that must stay together move as one
# step; apply the moves in order (step by step) and nothing lands on pve4.
data "qemuscheduler_rebalance" "patch" {
  tags        = ["rebalance"]
  drain_nodes = ["pve4"]
  max_moves   = 20
}

# ProxLB-style: balance memory alone when the fullest and the emptiest node are more than 15
# points apart; no thresholds to compute from the cluster's mean.
data "qemuscheduler_rebalance" "memory" {
  tags = ["rebalance"]
  low_node_utilization {
    balanciness = 15
    resources   = ["memory"]
  }
}

# Act on a move with qemuscheduler_vm: copy the `to` node into the VM's `node` (a pinned node
# migrates), or with the bpg provider: node_name = <to>, migrate = true. Give the data source
# `depends_on = [<those VMs>]` so that the apply that moves them reads it after the moves;
# otherwise its outputs show the moves just made until the next apply.
output "moves" {
  value = data.qemuscheduler_rebalance.web.summary
}

output "consolidation" {
  value = [for m in data.qemuscheduler_rebalance.consolidate.moves : "${m.name} (${m.vmid}): ${m.from} -> ${m.to}, ${m.reason}"]
}

output "drain_steps" {
  value = [for m in data.qemuscheduler_rebalance.patch.moves : "step ${m.step}: ${m.name} ${m.from} -> ${m.to}"]
}

output "allocation_after" { # per node, once the moves are done
  value = { for n in data.qemuscheduler_rebalance.consolidate.nodes_after : n.node => "cpu ${n.cpu_percent}%, memory ${n.memory_percent}%, ${n.running_guests} guests" }
}

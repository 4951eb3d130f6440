# The scheduler's view of the cluster: labels, taints, maintenance, capacity and load.
data "qemuscheduler_nodes" "all" {}

# Nodes that take new VMs: online, no NoSchedule taint (maintenance included).
output "schedulable_nodes" {
  value = [for n in data.qemuscheduler_nodes.all.nodes : n.name
  if n.online && length([for t in n.taints : t if endswith(t, ":NoSchedule")]) == 0]
}

# Free memory per zone label, from what is allocated (not live use).
output "free_mib_by_zone" {
  value = {
    for zone in distinct([for n in data.qemuscheduler_nodes.all.nodes : lookup(n.labels, "zone", "none")]) :
    zone => sum(concat([0], [for n in data.qemuscheduler_nodes.all.nodes :
    n.memory_mib - n.allocated_memory_mib if lookup(n.labels, "zone", "none") == zone && n.online]))
  }
}

# Only some nodes, by a regular expression on the whole name.
data "qemuscheduler_nodes" "rack1" {
  names_regex = "pve[1-4]"
}

# Where would three web servers go? Read-only, at plan time.
data "qemuscheduler_placement" "web" {
  names    = ["web-1", "web-2", "web-3"]
  cores    = 2
  memory   = 4096
  disk_gib = 40 # must fit the chosen storage (the StorageCapacity filter)
  # profile = "packing"   # a provider profile; the summary then names it
  annotations = {
    "node.qemu-scheduler/regex" = "pve[0-9]+"
    "vmid.qemu-scheduler/range" = "1000-1099"
  }

  # The VMs will carry these tags: one web server per node, and near the database's zone if
  # possible (zone is a node label from the provider's node blocks).
  tags = ["web", "prod"]
  vm_anti_affinity {
    tags = ["web"] # topology_key defaults to "node"; no weight: required
  }
  vm_affinity {
    tags         = ["db"]
    topology_key = "zone"
    weight       = 50 # a preference
  }
}

# Six workers over the zones, at most one more in any zone than in the emptiest.
data "qemuscheduler_placement" "workers" {
  names = [for i in range(6) : "worker-${i}"]
  tags  = ["worker"]
  topology_spread {
    tags               = ["worker"]
    topology_key       = "zone"
    max_skew           = 1
    when_unsatisfiable = "DoNotSchedule" # or "ScheduleAnyway": a preference
  }
}

# Feed any Proxmox resource, e.g. the bpg provider's VM:
#   node_name = data.qemuscheduler_placement.web.placements[count.index].node
#   vm_id     = data.qemuscheduler_placement.web.placements[count.index].vmid

output "why" {
  value = data.qemuscheduler_placement.web.summary
}

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
}

# Feed any Proxmox resource, e.g. the bpg provider's VM:
#   node_name = data.qemuscheduler_placement.web.placements[count.index].node
#   vm_id     = data.qemuscheduler_placement.web.placements[count.index].vmid

output "why" {
  value = data.qemuscheduler_placement.web.summary
}

provider "qemuscheduler" {
  endpoint  = "https://pve.example.com:8006" # or PROXMOX_VE_ENDPOINT
  api_token = var.pve_api_token              # USER@REALM!TOKENID=SECRET, or PROXMOX_VE_API_TOKEN
  # or a ticket login: username = "terraform@pve" and password (PROXMOX_VE_USERNAME, _PASSWORD)
  # A private CA (a PVE cluster's own is /etc/pve/pve-root-ca.pem on any node):
  #   ca_cert = file("pve-root-ca.pem")
  # or insecure = true (PROXMOX_VE_INSECURE) to skip TLS verification altogether.

  # Defaults for every data source and resource: the reference's plugin-config.yaml as it
  # is, then blocks, which have the last word.
  plugin_config_yaml = file("plugin-config.yaml")
  plugin_config {
    filter {
      name = "CPUOvercommit"
      args = { ratio = "8" }
    }
  }

  # Named profiles, chosen per data source or resource with profile = "packing". Their layers
  # go over the defaults above and under the object's own plugin config.
  profile {
    name = "packing" # fill one node before the next, by configured size
    plugin_config {
      score {
        name   = "NodeResource"
        enable = false
      }
      score { name = "MostAllocated" }
    }
  }
  profile {
    name               = "cappx"
    plugin_config_yaml = file("plugin-config.yaml") # a CAPPX file is a whole profile
  }
  profile {
    name = "tenant-a" # defaults for the objects that select it; their own attributes win
    annotations = {
      "vmid.qemu-scheduler/range" = "4000-4099" # the tenant's VMID range, set once
    }
    node_selector = { zone = "a" }
  }

  # Node labels and taints (PVE nodes have none), for node_selector, node_affinity and
  # toleration. One block per node; blocks win per key over the nodes' Notes.
  node {
    name   = "pve1"
    labels = { zone = "a", disk = "nvme" }
  }
  node {
    name   = "pve5"
    labels = { zone = "b", gpu = "a100" }
    taints = ["dedicated=gpu:NoSchedule"] # only VMs with a matching toleration
  }
  # Also read "qemu-scheduler/labels: ..." and "qemu-scheduler/taints: ..." lines from each
  # node's Notes (needs Sys.Audit on /).
  read_node_notes = true

  # ProxLB's guest tags (plb_anti_affinity_*, plb_affinity_*, plb_pin_*) are honoured unless
  # this is false.
  honor_proxlb_tags = true
}

variable "pve_api_token" {
  type      = string
  sensitive = true
}

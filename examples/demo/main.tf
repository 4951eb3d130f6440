# The `make demo` example: a small web tier and a database placed on the simulated lab
# cluster (examples/lab/cluster.yaml), then created there.

terraform {
  required_providers {
    qemuscheduler = {
      source = "qemuscheduler/qemuscheduler"
    }
  }
}

variable "ca_cert_file" {
  description = "PEM of the simulator's TLS certificate (make demo writes it)."
  type        = string
}

# endpoint and api_token come from PROXMOX_VE_ENDPOINT and PROXMOX_VE_API_TOKEN.
provider "qemuscheduler" {
  ca_cert = file(var.ca_cert_file)

  # The reference scheduler's plugin-config.yaml, verbatim: vCPUs may be overcommitted 8:1.
  plugin_config_yaml = <<-EOT
    filters:
      CPUOvercommit:
        config:
          ratio: 8
  EOT

  # Node labels and taints: the lab's node Notes give zones a and b and make pve5 a GPU node
  # with the taint dedicated=gpu:NoSchedule (see examples/lab/cluster.yaml); node blocks add
  # to them and win per key.
  read_node_notes = true
  node {
    name   = "pve2"
    labels = { backup = "nightly" }
  }
}

variable "web_count" {
  description = "How many web servers: one per node. The lab has three usable nodes, so 4 is one too many, and the plan refuses the whole set before anything is created (make demo shows it)."
  type        = number
  default     = 3
}

# Three web servers, cloned from the cloud-init template and created where the scheduler
# puts them. The node and VMID are decided at apply, one VM after the other under a lock, so
# each sees the capacity and the web VMs the others took, and they get distinct ids from the
# web range. On capacity alone two would share a node; the anti-affinity keeps one per node,
# so a node failure takes out one web server, not two.
resource "qemuscheduler_vm" "web" {
  count  = var.web_count
  name   = "web-${count.index + 1}"
  cores  = 2
  memory = 4096
  tags   = ["demo", "web"]
  annotations = {
    "node.qemu-scheduler/regex" = "pve[1-4]"
    "vmid.qemu-scheduler/range" = "1000-1099"
  }
  vm_anti_affinity {
    tags = ["web"] # no weight: required; topology_key "node" by default
  }
  clone {
    source_vmid = 9000
  }
  disk {
    slot = "scsi0"
    size = 20
  }
  cloud_init {
    user      = "debian"
    ip_config = ["ip=dhcp"]
  }
  # HA-managed: PVE's HA manager restarts a web server elsewhere when its node fails. The
  # provider keeps PVE 9 HA rules from the placement rules above, so the recovery honours
  # them: a negative resource-affinity rule over the web tier (never two on one node) and a
  # node-affinity rule per VM for the node regex (never on the GPU node pve5).
  ha {}
}

# The database wants a big node in zone a and an id that reads as 2xxx.
data "qemuscheduler_placement" "db" {
  name          = "db-2"
  cores         = 8
  memory        = 32768
  node_selector = { zone = "a" }
  annotations = {
    "vmid.qemu-scheduler/regex" = "2[0-9]{3}"
  }
}

# A training VM needs the GPU node: it selects the gpu label and tolerates the node's taint,
# which keeps every other VM off that node.
data "qemuscheduler_placement" "ml" {
  name          = "ml-1"
  cores         = 8
  memory        = 16384
  node_selector = { gpu = "a100" }
  toleration {
    key   = "dedicated"
    value = "gpu"
  }
}

# The web tier as the scheduler sees it once created: each VM kept where it is (sticky), and
# every node's verdict for web-1, which says why the others hold no second web server.
data "qemuscheduler_placement" "web_check" {
  names      = qemuscheduler_vm.web[*].name
  cores      = 2
  memory     = 4096
  tags       = ["demo", "web"]
  depends_on = [qemuscheduler_vm.web]
  annotations = {
    "node.qemu-scheduler/regex" = "pve[1-4]"
  }
  vm_anti_affinity {
    tags = ["web"]
  }
}

# The scheduler's view of the nodes: labels from Notes and blocks, taints, maintenance.
data "qemuscheduler_nodes" "lab" {}

output "web" {
  description = "Where each web server went, and why."
  value       = { for vm in qemuscheduler_vm.web : vm.name => vm.placement_summary }
}

output "web_ha_rules" {
  description = "The PVE HA rules that hold each web server: a node rule's nodes, a resource rule's affinity and members."
  value = { for vm in qemuscheduler_vm.web : vm.name => join("; ", [
    for r in vm.ha.rules : r.type == "node-affinity" ? "${r.id} on ${join(",", keys(r.nodes))}" : "${r.id} ${r.affinity} ${join(",", r.resources)}"
  ]) }
}

output "web_nodes" {
  description = "Where each web server runs now."
  value       = { for vm in qemuscheduler_vm.web : vm.name => vm.node }
}

output "web_why" {
  description = "Every node's verdict for web-1 with the web tier in place: one web server per node."
  value = { for c in data.qemuscheduler_placement.web_check.candidates : c.node =>
    c.feasible ? "web-1 stays here" : join("; ", c.reasons)
  }
}

output "db" {
  description = "Where the database would go (a plan-time, read-only decision)."
  value       = data.qemuscheduler_placement.db.summary
}

output "db_candidates" {
  description = "Every node's verdict for the database."
  value = { for c in data.qemuscheduler_placement.db.candidates : c.node =>
    c.feasible ? "feasible, score ${c.score}" : join("; ", c.reasons)
  }
}

output "ml" {
  description = "Where the GPU-bound VM would go."
  value       = data.qemuscheduler_placement.ml.summary
}

output "nodes" {
  description = "Each node's zone and taints."
  value = { for n in data.qemuscheduler_nodes.lab.nodes : n.name =>
    "zone ${lookup(n.labels, "zone", "-")}${length(n.taints) > 0 ? ", taints ${join(" ", n.taints)}" : ""}"
  }
}

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
}

# Three web servers in one decision: each placement debits its node before the next, so
# they spread, and they take ids from the web range.
data "qemuscheduler_placement" "web" {
  names  = ["web-1", "web-2", "web-3"]
  cores  = 2
  memory = 4096
  annotations = {
    "node.qemu-scheduler/regex" = "pve[1-4]"
    "vmid.qemu-scheduler/range" = "1000-1099"
  }
}

# The database wants a big node and an id that reads as 2xxx.
data "qemuscheduler_placement" "db" {
  name   = "db-2"
  cores  = 8
  memory = 32768
  annotations = {
    "vmid.qemu-scheduler/regex" = "2[0-9]{3}"
  }
}

output "web" {
  description = "Where each web server goes."
  value       = { for p in data.qemuscheduler_placement.web.placements : p.name => "${p.node} / vmid ${p.vmid} / ${p.storage}" }
}

output "why" {
  description = "One line per decision."
  value       = split("\n", "${data.qemuscheduler_placement.web.summary}\n${data.qemuscheduler_placement.db.summary}")
}

output "db_candidates" {
  description = "Every node's verdict for the database."
  value = { for c in data.qemuscheduler_placement.db.candidates : c.node =>
    c.feasible ? "feasible, score ${c.score}" : join("; ", c.reasons)
  }
}

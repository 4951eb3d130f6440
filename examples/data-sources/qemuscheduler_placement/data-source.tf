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

# A GPU VM: a node with an A100 is required, one with NVMe disks preferred, and the toleration
# lets it onto the GPU node, tainted dedicated=gpu:NoSchedule for everything else (labels and
# taints come from the provider's node blocks and the nodes' Notes).
data "qemuscheduler_placement" "ml" {
  name     = "ml-1"
  cores    = 8
  memory   = 32768
  disk_gib = 100
  node_affinity { # no weight: required; each node_selector_term is one way to match
    node_selector_term {
      match_expressions {
        key      = "gpu"
        operator = "In" # In, NotIn, Exists, DoesNotExist, Gt, Lt
        values   = ["a100"]
      }
    }
  }
  node_affinity {
    key      = "disk"
    operator = "In"
    values   = ["nvme"]
    weight   = 20 # a preference: the NodeAffinity score
  }
  toleration {
    key      = "dedicated"
    operator = "Equal" # the default; "Exists" tolerates any value of the key
    value    = "gpu"
    effect   = "NoSchedule" # empty: every effect of the key
  }
}

# API servers spread over the zones together with their canaries (guests tagged api or
# api-canary, retired ones not counted), in at least two zones before any zone holds one more.
data "qemuscheduler_placement" "api" {
  names = ["api-1", "api-2", "api-3"]
  tags  = ["api"]
  topology_spread {
    tags_any_of          = ["api", "api-canary"] # members: guests carrying either tag ...
    tags_none_of         = ["retired"]           # ... and not this one
    topology_key         = "zone"
    min_domains          = 2
    node_affinity_policy = "Honor" # count only nodes the VM may use (the default)
    node_taints_policy   = "Honor" # nor nodes whose taints it does not tolerate (the default)
  }
}

# Feed any Proxmox resource, e.g. the bpg provider's VM (with migrate = true, else a move
# replaces the VM):
#   node_name = data.qemuscheduler_placement.web.placements[count.index].node
#   vm_id     = data.qemuscheduler_placement.web.placements[count.index].vmid
# Once a VM exists it is answered where it runs, even after HA moved it next to an
# anti-affine peer: the VMs that break their rules are listed in violations, and
# move_existing = "violations" moves them as qemuscheduler_rebalance would (the fewest moves,
# at most max_moves_per_group per group).
data "qemuscheduler_placement" "db" {
  names               = ["db-1", "db-2", "db-3"]
  tags                = ["db"]
  move_existing       = "violations"
  max_moves_per_group = 1
  vm_anti_affinity {
    tags = ["db"]
  }
}

output "db_violations" {
  value = data.qemuscheduler_placement.db.violations # [{ name, rule, why }], empty once every VM keeps its rules
}

output "why" {
  value = data.qemuscheduler_placement.web.summary
}

output "ml" {
  value = data.qemuscheduler_placement.ml.placements[0] # { name, node, vmid, storage }: the same on the plans after the VM exists
}

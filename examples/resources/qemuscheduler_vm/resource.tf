resource "qemuscheduler_vm" "worker" {
  count  = 3
  name   = "k8s-worker-${count.index}"
  cores  = 4
  memory = 8192
  tags   = ["k8s", "worker"]
  # profile = "packing"   # a provider profile; placement_summary then names it

  # Workers spread evenly over the nodes (count may exceed the node count); the tags above
  # make each worker a member of the group.
  topology_spread {
    tags     = ["k8s", "worker"]
    max_skew = 1
  }

  annotations = {
    "node.qemu-scheduler/regex" = "pve[0-9]+"
    "vmid.qemu-scheduler/range" = "3000-3099"
  }

  clone {
    source_vmid = 9000   # a cloud-init template on shared storage
    source_node = "pve1" # where it is; looked up when left out
    full        = true   # the default; false makes a linked clone of a template
  }

  disk {
    slot    = "scsi0"
    size    = 40
    discard = true # the guest's TRIM frees space on the thin volume
    ssd     = true
  }

  network {
    slot     = "net0"
    bridge   = "vmbr0"
    model    = "virtio" # the default
    vlan     = 20
    firewall = true # the PVE firewall on this NIC
  }

  cloud_init {
    user         = "debian"
    nameserver   = "10.0.20.1"
    searchdomain = "k8s.example.com"
    ssh_keys     = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl admin@example.com"]
    ip_config    = ["ip=dhcp"]
    # A snippet copied into /var/lib/vz/snippets/ on every node (storage local with the
    # snippets content type), e.g. packages to install; user-data stays generated.
    vendor_data = "local:snippets/k8s-worker-vendor.yaml"
    # user_data and network_data name snippets the same way; they replace what PVE generates
    # (user_data: user, password and ssh_keys; network_data: ip_config, nameserver, searchdomain).
    upgrade = false
  }

  timeouts {
    create = "20m"
    update = "20m" # a migration of a large VM included
    delete = "10m" # a running VM is shut down for half of it, then stopped
  }
}

# A UEFI VM from scratch on a q35 machine, with Secure Boot keys and a serial console for the
# cloud image. protection = true makes PVE refuse to destroy it: set it back to false and
# apply before terraform destroy.
resource "qemuscheduler_vm" "uefi" {
  name          = "uefi-1"
  cores         = 2
  memory        = 4096
  sockets       = 1
  cpu_type      = "x86-64-v2-AES" # "" (no cpu key) is PVE's default; "host" passes the host CPU through
  balloon       = 2048            # ballooning down to 2 GiB; 0 disables the balloon device
  on_boot       = true            # started when its node boots
  bios          = "ovmf"
  machine       = "q35"
  scsi_hardware = "virtio-scsi-single" # the default from scratch: a controller per disk
  serial        = ["socket"]
  boot_order    = ["scsi0", "net0"]
  protection    = false

  efi_disk {
    pre_enrolled_keys = true
  }

  vga {
    type = "serial0"
  }

  startup {
    order = 2
    up    = 30
  }

  disk {
    slot      = "scsi0"
    size      = 32
    iothread  = true # effective with the virtio-scsi-single controller
    cache     = "none"
    replicate = false # left out of storage replication jobs; backup = false leaves it out of backups
  }

  network {
    slot = "net0"
  }
}

# A highly available database VM: registered as a PVE HA resource, so the HA manager restarts
# it (up to 3 times) or moves it when its node fails. Changing node then migrates it through
# the HA manager. The guest agent reports its addresses once it runs.
resource "qemuscheduler_vm" "db" {
  name          = "db-1"
  node          = "pve2"
  cores         = 4
  memory        = 8192
  agent         = true
  agent_timeout = "3m" # a VM whose agent does not answer in time is kept, addresses empty

  clone {
    source_vmid = 9000 # disks on shared storage: HA can move the VM
  }

  cloud_init {
    user      = "debian"
    ip_config = ["ip=dhcp"]
  }

  ha {
    state           = "started" # must agree with started (default true)
    max_restart     = 3
    max_relocate    = 2
    comment         = "primary database"
    auto_rebalance  = false    # PVE 9.2: the HA manager's automatic rebalancing leaves the database where it runs
    placement_rules = true     # the default: PVE 9 HA rules keep its hard placement rules through failover
    failover        = "strict" # the HA manager leaves it down rather than break a hard placement rule; "preferred" (the default) keeps it running
  }
}

# A web tier spread over zones (racks, say): under the default failover ("preferred") a zone
# failure moves its VMs into the other zones (each VM's rule ranks its own zone first, then the
# zones with fewer web VMs, then the rest), and failback brings them home when the zone is back.
resource "qemuscheduler_vm" "web" {
  count  = 6
  name   = "web-${count.index}"
  memory = 2048
  tags   = ["web"]

  clone {
    source_vmid = 9000
  }

  topology_spread {
    tags               = ["web"]
    topology_key       = "zone"
    max_skew           = 1
    when_unsatisfiable = "DoNotSchedule"
  }

  ha {
    failover = "preferred"
  }
}

output "db_ip" {
  value = qemuscheduler_vm.db.primary_ipv4 # e.g. for an Ansible inventory
}

output "db_addresses" {
  value = qemuscheduler_vm.db.ipv4_addresses # { eth0 = ["10.0.20.15"] }
}

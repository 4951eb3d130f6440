# By VMID, or node/VMID (for an HA-managed VM: the node its configuration pins). The VM's disks and NICs become disk and network blocks.
terraform import 'qemuscheduler_vm.worker[0]' 3000
terraform import 'qemuscheduler_vm.worker[0]' pve2/3000

# By VMID, or node/VMID.
terraform import qemuscheduler_vm.web 123
terraform import qemuscheduler_vm.web pve2/123

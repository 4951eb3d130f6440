// Package cloudinit holds the cloud_init block of qemuscheduler_vm (user, password,
// ssh_keys, ip_config, nameserver, searchdomain, upgrade, and the user_data, network_data and
// vendor_data snippets): schema, model, validation and the mapping to and from the guest's PVE
// config. Its functions take the block's own model, not the VM's.
//
// It may import kit, disk (the cloud-init drive's slot) and the pure packages; vmresource
// imports it.
package cloudinit

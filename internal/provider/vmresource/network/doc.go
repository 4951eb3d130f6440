// Package network holds the network blocks of qemuscheduler_vm (net0, net1, ...: model,
// bridge, VLAN, MAC, firewall): schema, model, validation and the mapping to and from the
// guest's PVE config. Its functions take the blocks' own model, not the VM's.
//
// It may import kit and the pure packages; vmresource imports it.
package network

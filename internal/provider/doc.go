// Package provider is the qemuscheduler Terraform provider itself: its schema, Configure
// (which builds the config.Data every resource and data source is handed) and the lists of
// its resources and data sources. Nothing else lives here, except the acceptance tests, which
// drive the whole provider through Terraform or OpenTofu against pvesim.
//
// The packages under it, bottom first; each imports only packages before it in this list
// (layout_test.go checks it):
//
//	internal/changeset            a plan's new VMs placed together, and their apply (no Terraform)
//	kit                           helpers for every package: Known, whole numbers, validators,
//	                              diagnostics from scheduler errors, private state, PVE config values
//	scheduling                    the scheduling blocks the resource and the data sources share,
//	                              down to scheduler.Request
//	config                        what Configure hands to all: client, cluster view, profiles and
//	                              their defaults, node policies, record and HA caches, change set
//	vmresource/firmware, network, disk, cloudinit
//	                              one qemuscheduler_vm block each: schema, model, validation, PVE config
//	vmresource                    the qemuscheduler_vm resource
//	datasources                   qemuscheduler_placement, qemuscheduler_nodes, qemuscheduler_rebalance
//	provider                      this package
//
// A new VM block goes in a package of its own under vmresource (schema, model and its PVE
// config mapping, taking its own model, not the VM's), wired in vmresource's schema and
// model; a new data source is a file of datasources, listed in DataSources here.
package provider

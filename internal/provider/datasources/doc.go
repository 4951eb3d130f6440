// Package datasources holds the provider's data sources, a file each:
// qemuscheduler_placement (placement.go: the scheduler at plan time, for any Proxmox
// resource), qemuscheduler_nodes (nodes.go) and qemuscheduler_rebalance (rebalance.go). A new
// data source is a file here, listed in the provider's DataSources.
//
// It may import config, scheduling, kit, internal/changeset and the pure packages; not
// vmresource.
package datasources

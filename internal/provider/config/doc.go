// Package config is what the provider's Configure hands to every resource and data source
// (Data, from DataFrom): the Proxmox VE client and the shared cluster view (data.go), the
// named profiles and their defaults (profiles.go, defaults.go), the provider's node blocks
// and Notes labels (nodes.go), the caches of placement records (records.go), HA rules
// (ha_cache.go) and snippet lists (snippets.go), and the change set.
//
// It may import kit, scheduling, internal/changeset and the pure packages; not the resource
// or the data sources.
package config

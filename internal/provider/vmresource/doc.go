// Package vmresource is the qemuscheduler_vm resource: its schema (schema.go) and model
// (model.go), ModifyPlan, Create, Read, Update, Delete and import (resource.go), creation
// around internal/provision (create.go), updates (update.go), clones (clone.go), the guest
// agent (agent.go), the ha block and HA-managed power and migration (ha.go), the HA rules and
// placement record a VM keeps (ha_rules.go, records.go), references to PVE objects
// (references.go), replacements (replace.go) and the state upgrade (state_upgrade.go).
//
// Its device blocks are packages of their own below it (firmware, network, disk, cloudinit);
// a new VM block goes there too, with its schema, model and PVE config mapping, and is wired
// into schema.go and model.go. It may import those, config, scheduling, kit and
// internal/changeset; nothing imports it but the provider.
package vmresource

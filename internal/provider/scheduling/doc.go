// Package scheduling holds the scheduling attributes that qemuscheduler_vm and the data
// sources share: one model (SchedulingModel), one validation and one conversion to a
// scheduler.Request; their schema for both schema packages (schema.go, through SchemaKit);
// the node_selector, node_affinity and toleration blocks (nodepolicy.go); the VM group and
// topology_spread blocks (groups.go); the plugin_config block and plugin_config_yaml layers
// (plugin_config.go); and the profile attribute (profile.go). A new scheduling attribute is a
// field of the model, a schema entry and a conversion line.
//
// It may import kit and the pure packages (scheduler, plugins, nodelabels, records).
package scheduling

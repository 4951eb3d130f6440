// Package kit holds the small helpers every package of the provider uses: Known, the
// whole-number integer type (whole_numbers.go), the string and number validators, the
// diagnostics that scheduler errors become (diagnostics.go), the private-state interface of
// plans, and the rendering of attribute values into a guest's PVE config (pve_config.go).
//
// It is the bottom of internal/provider: it imports the framework, internal/scheduler,
// internal/changeset (the texts a refusal ends with) and no package of internal/provider.
package kit

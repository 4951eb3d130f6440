// Package scheduler decides where a QEMU VM runs in a Proxmox VE cluster and which VMID it
// gets: filter -> score -> select -> vmid -> storage. It is pure: no I/O, no Terraform, no
// HTTP. The proxmox package builds a Snapshot; the provider builds Requests and a Profile.
//
// The pipeline follows kube-scheduler's framework, kept small. For each request:
//
//  1. a fresh CycleState is made;
//  2. every enabled filter that implements PreFilterPlugin runs once over all nodes: it
//     computes what its Filter needs (group counts per topology domain, a compiled regex)
//     into the state, or rejects the request with an error;
//  3. every FilterPlugin runs on every node; a Rejection carries the reason with numbers and
//     the phrase the unschedulable summary counts nodes under;
//  4. over the nodes that pass (and can serve the storage), every score plugin implementing
//     PreScorePlugin runs once, then Score per node, then NormalizeScores when the plugin is
//     a ScoreNormalizer (raw figures mapped to 0..100 over the feasible nodes);
//  5. scores are clamped to 0..100, weighted and summed; the best node wins, ties broken by
//     a hash of the request name and node name;
//  6. the first VMIDPlugin whose annotation is set picks the id, else the next free one.
//
// A NodeInfo lists its guests, any status, templates aside; placements made earlier in the
// same Schedule call and in-flight reservations appear there as assumed guests carrying the
// request's tags, so group plugins see them. Sticky placement and CheckNode build the same
// view with the guest being checked left out and run the same filter function.
//
// ScheduleSet places a set of requests all or nothing, whatever their order: the greedy pass
// of Schedule first, then, when a request does not fit, a joint search over the nodes the
// hard filters allow (joint.go); a set that cannot be placed is a *SetError counting how many
// fit together.
//
// To add a plugin: write one file in internal/plugins with a type implementing FilterPlugin,
// ScorePlugin or VMIDPlugin (plus any optional interface above, asserted at compile time),
// and add one PluginSpec line to the registry, listing its args and the annotation keys it
// owns. ExampleProfile_Schedule in example_test.go is a complete plugin in 20 lines.
package scheduler

package kit

import (
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// checkNodeExists fails the plan on a pinned node the cluster does not have: a typo, not a
// full cluster, so not a placement error that says to make room.
func CheckNodeExists(node string, snap scheduler.Snapshot, diags *diag.Diagnostics) {
	if slices.ContainsFunc(snap.Nodes, func(n scheduler.Node) bool { return n.Name == node }) {
		return
	}
	names := make([]string, len(snap.Nodes))
	for i, n := range snap.Nodes {
		names[i] = n.Name
	}
	diags.AddAttributeError(path.Root("node"), "Node does not exist",
		fmt.Sprintf("node = %q: the cluster has no such node (nodes: %s). Fix the name, or remove node to let the scheduler choose. %s",
			node, ListOrNone(names), changeset.DestroyAnyway))
}

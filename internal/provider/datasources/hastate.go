package datasources

import (
	"context"
	"errors"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/rebalance"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// readHAState adds to snap what the planner's moves must respect, as PVE's HA manager would
// refuse or undo them: the HA rules, and the manager's moves and failback flags when the rules
// make them matter. False after an error, which it reports.
func readHAState(ctx context.Context, data *config.Data, snap *scheduler.Snapshot, diags *diag.Diagnostics) bool {
	var err error
	switch snap.HARules, err = data.Client.HARules(ctx); {
	case errors.Is(err, proxmox.ErrForbidden):
		diags.AddWarning("HA rules not read",
			"The credentials may not read /cluster/ha/rules (PVE needs Sys.Audit on /): the moves do not take HA node-affinity "+
				"or resource-affinity rules into account. Grant Sys.Audit to make them.")
	case err != nil:
		diags.AddError("Cannot read the HA rules", err.Error())
		return false
	}
	// The HA manager refuses a move next to a negative peer it is moving there, and keeps a
	// positive group where it moves it: with such rules, read its moves (one request).
	if config.HasResourceAffinity(snap.HARules) {
		if snap.HAMoves, err = data.Client.HAMoves(ctx); err != nil {
			diags.AddError("Cannot read the HA manager status", err.Error())
			return false
		}
	}
	// A VM stays on a lower priority node of its node-affinity rule only with its failback
	// off: with ranked rules, read the HA resources' flags (one request).
	if config.HasPriorityClasses(snap.HARules) {
		res, err := data.Client.HAResources(ctx)
		if err != nil {
			diags.AddError("Cannot read the HA resources", err.Error())
			return false
		}
		snap.HAFailbackOff = proxmox.HAFailbackOff(res)
	}
	return true
}

// guestDisks reads a guest's disks for the planner, which asks only for the guests it moves.
func guestDisks(ctx context.Context, data *config.Data) func(g *scheduler.Guest) ([]rebalance.Disk, error) {
	return func(g *scheduler.Guest) ([]rebalance.Disk, error) {
		disks, err := data.Client.GuestDisks(ctx, g.Node, g.VMID, g.Type == scheduler.GuestLXC)
		out := make([]rebalance.Disk, len(disks))
		for i, d := range disks {
			out[i] = rebalance.Disk{Storage: d.Storage, Bytes: d.Bytes}
		}
		return out, err
	}
}

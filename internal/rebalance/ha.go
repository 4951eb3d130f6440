package rebalance

import (
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/harules"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// haRefusal says why moving g to node would break an enabled HA rule of the cluster view
// (Snapshot.HARules), as PVE's HA manager would refuse or undo it, or "" when it would not;
// peers are where the moves planned so far put them, and a peer the HA manager is moving
// (Snapshot.HAMoves) and no planned move took counts on its target too. The guest's own
// provider node rule does not count: applying the move through its pinned node rewrites it
// (harules.MoveConstraints), and the guest's placement policy, which that rule keeps, is
// checked by the scheduler.
func (p *planner) haRefusal(gVMID int, node string) string {
	return scheduler.HARefusal(&p.snap, harules.MoveConstraints(gVMID, p.snap.HARules), gVMID, node, func(vmid int) (string, string, bool) {
		i, ok := p.byVMID[vmid]
		if !ok {
			return "", "", false
		}
		target := ""
		if !p.moved[vmid] {
			target = p.snap.HAMoves[vmid]
		}
		return p.snap.Guests[i].Node, target, true
	})
}

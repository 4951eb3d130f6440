package rebalance

import "github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"

// GuestRequest is policy as the planner checks guest g against it (without a placement
// record): the guest's name, tags and configured size, no pins. A placement data source lists
// the rules its existing VMs break with it, so that its list and the planner's moves agree.
func GuestRequest(g *scheduler.Guest, policy scheduler.Request) scheduler.Request {
	return sized(g, policy)
}

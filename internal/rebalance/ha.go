package rebalance

import (
	"fmt"
	"slices"
	"strings"
)

// HARule is one PVE 9 HA rule (GET /cluster/ha/rules), the fields a move must respect.
type HARule struct {
	Name string
	// Type is "node-affinity" or "resource-affinity".
	Type string
	// VMIDs are the rule's resources (vm:N and ct:N alike).
	VMIDs []int
	// Nodes are a node-affinity rule's nodes (priorities aside).
	Nodes []string
	// Strict node-affinity keeps the resources on Nodes only; a non-strict rule prefers
	// them, and the HA manager moves a resource back to them (failback), so a move elsewhere
	// would be undone: both are kept.
	Strict bool
	// Affinity is "positive" or "negative" for resource-affinity rules.
	Affinity string
	Disabled bool
}

// haRefusal says why moving g to node would break an enabled HA rule, or "" when it would
// not. A member of a positive resource-affinity rule never moves alone: the HA manager keeps
// the group on one node.
func (p *planner) haRefusal(gVMID int, node string) string {
	for _, r := range p.in.HARules {
		if r.Disabled || !slices.Contains(r.VMIDs, gVMID) {
			continue
		}
		switch r.Type {
		case "node-affinity":
			if !slices.Contains(r.Nodes, node) {
				return fmt.Sprintf("HA rule %s (node-affinity) allows only %s", r.Name, strings.Join(r.Nodes, ", "))
			}
		case "resource-affinity":
			for _, peer := range r.VMIDs {
				i, ok := p.byVMID[peer]
				if peer == gVMID || !ok {
					continue
				}
				on := p.snap.Guests[i].Node
				if r.Affinity == "negative" && on == node {
					return fmt.Sprintf("HA rule %s (negative resource-affinity): vm %d runs there", r.Name, peer)
				}
				if r.Affinity == "positive" && on != node {
					return fmt.Sprintf("HA rule %s (positive resource-affinity): vm %d runs on %s", r.Name, peer, on)
				}
			}
		}
	}
	return ""
}

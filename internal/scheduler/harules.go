package scheduler

import (
	"fmt"
	"slices"
	"strings"
)

// HA rule types and resource affinities as PVE 9 names them (/cluster/ha/rules).
const (
	HANodeAffinity     = "node-affinity"
	HAResourceAffinity = "resource-affinity"
	HAPositive         = "positive"
	HANegative         = "negative"
)

// HARule is one PVE 9 HA rule: part of the cluster view, read by the scheduler's callers
// (a move must not break it), the rebalance and the resource that keeps its own rules.
type HARule struct {
	Name string
	// Type is HANodeAffinity or HAResourceAffinity.
	Type string
	// VMIDs are the rule's resources (vm:N and ct:N alike), in the order PVE lists them.
	VMIDs []int
	// CTs are the VMIDs that are containers (ct:N); the others are VMs (vm:N).
	CTs []int
	// Nodes are a node-affinity rule's nodes.
	Nodes []string
	// Priorities are the priorities of Nodes that are not 0 (PVE's node:priority; a node
	// without one has 0, and the HA manager prefers the highest class).
	Priorities map[string]int
	// Strict node affinity keeps the resources on Nodes only; a non-strict rule prefers
	// them, and the HA manager moves a resource back to them (failback), so a move elsewhere
	// would be undone: both are kept.
	Strict bool
	// Affinity is HAPositive or HANegative for resource-affinity rules.
	Affinity string
	Disabled bool
	Comment  string
}

// MultiplePriorities tells a node-affinity rule whose nodes are of more than one priority
// class (pve-ha-manager Rules.pm has_multiple_priorities).
func (r HARule) MultiplePriorities() bool {
	for _, n := range r.Nodes {
		if r.Priorities[n] != r.Priorities[r.Nodes[0]] {
			return true
		}
	}
	return false
}

// HARefusal says why moving the guest vmid to node would break an enabled HA rule of the
// snapshot, as PVE's HA manager would refuse or undo the move, or "" when it would not. A
// member of a positive resource-affinity rule never moves alone: the HA manager keeps the
// group on one node. where tells where a guest runs (the caller's working copy of the view)
// and the node the HA manager is moving it to, if any (Snapshot.HAMoves): as PVE's
// get_resource_affinity does, a negative peer counts on both, a positive one on its target.
func HARefusal(rules []HARule, vmid int, node string, where func(vmid int) (on, target string, ok bool)) string {
	for _, r := range rules {
		if r.Disabled || !slices.Contains(r.VMIDs, vmid) {
			continue
		}
		switch r.Type {
		case HANodeAffinity:
			if !slices.Contains(r.Nodes, node) {
				return fmt.Sprintf("HA rule %s (node-affinity) allows only %s", r.Name, strings.Join(r.Nodes, ", "))
			}
		case HAResourceAffinity:
			for _, peer := range r.VMIDs {
				on, target, ok := where(peer)
				if peer == vmid || !ok {
					continue
				}
				if r.Affinity == HANegative && on == node {
					return fmt.Sprintf("HA rule %s (negative resource-affinity): vm %d runs there", r.Name, peer)
				}
				if r.Affinity == HANegative && target == node {
					return fmt.Sprintf("HA rule %s (negative resource-affinity): the HA manager is moving vm %d there", r.Name, peer)
				}
				if r.Affinity == HAPositive && target != "" && target != node {
					return fmt.Sprintf("HA rule %s (positive resource-affinity): the HA manager is moving vm %d to %s", r.Name, peer, target)
				}
				if r.Affinity == HAPositive && target == "" && on != node {
					return fmt.Sprintf("HA rule %s (positive resource-affinity): vm %d runs on %s", r.Name, peer, on)
				}
			}
		}
	}
	return ""
}

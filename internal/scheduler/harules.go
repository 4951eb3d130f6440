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
	// them (every other node has priority -1), and with failback the HA manager moves a
	// resource back to the highest priority class it can use (HARefusal).
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
// snapshot, as PVE's HA manager would refuse or undo the move, or "" when it would not. rules
// are the rules to check (snap.HARules, or some of them); snap gives the nodes the HA manager
// may use and the resources whose failback is off. A member of a positive resource-affinity
// rule never moves alone: the HA manager keeps the group on one node. where tells where a
// guest runs (the caller's working copy of the view) and the node the HA manager is moving it
// to, if any (Snapshot.HAMoves): as PVE's get_resource_affinity does, a negative peer counts on
// both, a positive one on its target.
func HARefusal(snap *Snapshot, rules []HARule, vmid int, node string, where func(vmid int) (on, target string, ok bool)) string {
	for _, r := range rules {
		if r.Disabled || !slices.Contains(r.VMIDs, vmid) {
			continue
		}
		switch r.Type {
		case HANodeAffinity:
			if why := nodeAffinityRefusal(snap, rules, r, vmid, node, where); why != "" {
				return why
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

// nodeAffinityRefusal checks a move against the node-affinity rule r of vmid as
// pve-ha-manager's select_service_node (Manager.pm) and get_node_affinity (Rules/
// NodeAffinity.pm) choose: a strict rule allows only its nodes; a non-strict one also every
// other node, at priority -1. The service belongs on the highest priority class of the allowed
// nodes the HA manager may use (haAvailable), and with failback (on unless snap.HAFailbackOff)
// the HA manager moves it back there from a lower class, unless negative peers take every node
// of that class (it then stays).
func nodeAffinityRefusal(snap *Snapshot, rules []HARule, r HARule, vmid int, node string, where func(int) (string, string, bool)) string {
	priority := func(n string) (int, bool) {
		if slices.Contains(r.Nodes, n) {
			return r.Priorities[n], true
		}
		return -1, !r.Strict
	}
	p, allowed := priority(node)
	if !allowed {
		return fmt.Sprintf("HA rule %s (node-affinity) allows only %s", r.Name, strings.Join(r.Nodes, ", "))
	}
	if snap.HAFailbackOff[vmid] {
		return ""
	}
	best, classes := p, map[int][]string{}
	for _, n := range snap.Nodes {
		if q, ok := priority(n.Name); ok && n.Name != node && haAvailable(n) {
			best = max(best, q)
			if !negativePeerOn(rules, vmid, n.Name, where) {
				classes[q] = append(classes[q], n.Name)
			}
		}
	}
	back := classes[best]
	if best == p || len(back) == 0 {
		return ""
	}
	has := fmt.Sprintf("%s has priority %d", node, p)
	if !slices.Contains(r.Nodes, node) {
		has = fmt.Sprintf("%s is not one of its nodes (priority %d)", node, p)
	}
	return fmt.Sprintf("HA rule %s (node-affinity): %s, the HA manager moves the VM back to %s (priority %d) unless "+
		"its HA resource's failback is off", r.Name, has, strings.Join(back, " or "), best)
}

// haAvailable tells whether the HA manager may run services on n: online, and not in
// maintenance or being fenced (its HA state, when HA has run, is "online").
func haAvailable(n Node) bool {
	return n.Online && (n.HAState == "" || n.HAState == "online")
}

// negativePeerOn tells whether a peer of vmid in an enabled negative resource-affinity rule
// runs on node or is being moved there.
func negativePeerOn(rules []HARule, vmid int, node string, where func(int) (string, string, bool)) bool {
	for _, r := range rules {
		if r.Disabled || r.Type != HAResourceAffinity || r.Affinity != HANegative || !slices.Contains(r.VMIDs, vmid) {
			continue
		}
		for _, peer := range r.VMIDs {
			if on, target, ok := where(peer); peer != vmid && ok && (on == node || target == node) {
				return true
			}
		}
	}
	return false
}

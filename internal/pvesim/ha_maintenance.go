package pvesim

// Node maintenance as the HA manager plays it (pve-ha-manager Manager.pm next_state_started
// and select_service_node, NodeStatus.pm): the started services of a node in maintenance are
// migrated to the nodes the HA rules allow, and return once maintenance ends.

import (
	"fmt"
	"slices"
	"strings"
)

// maintenanceStep is the CRM's round for a service as far as node maintenance goes. A started
// service on a node in maintenance remembers that node (maintenance_node) and is migrated to
// the node recovery would pick (recoveryNodes: the HA rules, then the least loaded node); with
// none allowed it stays, and the CRM tries again every round. Back out of maintenance, the
// service returns to its maintenance node as soon as the rules allow it there, unless its
// failback is off (select_service_node then keeps it where it runs). It returns the node the
// service is being migrated to, or "". The caller holds s.mu.
func (s *Server) maintenanceStep(res *haResource) string {
	g := s.guests[res.vmid]
	if g == nil || s.haDisarm != "" || !res.pickedUp || res.recovering || res.state() != "started" || res.migrateTo != "" || g.lock != "" {
		return ""
	}
	// A node in maintenance may be off (shut down under the migrate policy): the CRM still
	// moves a service requested started away from it (next_state_started).
	n := s.node(g.node)
	if n == nil || !n.online && n.haState != "maintenance" {
		return ""
	}
	target := ""
	switch {
	case n.haState == "maintenance":
		res.maintenanceNode = n.name
		if nodes := s.recoveryNodes(res); len(nodes) > 0 {
			target = nodes[0]
		}
	case res.maintenanceNode == "":
	case res.maintenanceNode == n.name:
		res.maintenanceNode = "" // it never left
	case s.failback(res) && slices.Contains(s.recoveryNodes(res), res.maintenanceNode):
		target = res.maintenanceNode
	}
	if target == "" || !s.haMigrate(res, target, res.typ == "ct") {
		return ""
	}
	if target == res.maintenanceNode {
		res.maintenanceNode = ""
	}
	return target
}

// maintenanceRound runs maintenanceStep for every service, in sid order, and tells where each
// service that moves goes. The caller holds s.mu.
func (s *Server) maintenanceRound() map[int]string {
	moves := map[int]string{}
	for _, res := range s.sortedHAResources() {
		if target := s.maintenanceStep(res); target != "" {
			moves[res.vmid] = target
		}
	}
	return moves
}

// setNodeHAState sets a node's HA state, and the HA manager answers at once: services leave a
// node in maintenance and come back when it ends (maintenanceRound, which it returns). Entering
// maintenance is the CRM's enable-node-maintenance command, which update_crm_commands carries
// out only for a node it sees online (already in maintenance, nothing changes) and otherwise
// drops with an error in its log: that error is returned.
func (s *Server) setNodeHAState(name, state string) (map[int]string, error) {
	var moves map[int]string
	err := s.withNode(name, func(n *node) error {
		if !contains(haNodeStates, state) {
			return fmt.Errorf("pvesim: hastate %q is not one of %s", state, strings.Join(haNodeStates, ", "))
		}
		if state == "maintenance" && s.haDisarm != "" {
			return fmt.Errorf("pvesim: the HA stack is disarmed, and PVE's CRM ignores the request: enable-node-maintenance %s", n.name)
		}
		if current := n.reportedHAState(); state == "maintenance" && current != "online" && current != "maintenance" {
			return fmt.Errorf("pvesim: node %s is %s (hastate %s), and PVE's HA manager ignores the request: "+
				"crm command error - node not online: enable-node-maintenance %s", n.name, map[bool]string{true: "online", false: "offline"}[n.online], current, n.name)
		}
		n.setHAState(state)
		s.haActive = true
		moves = s.maintenanceRound()
		return nil
	})
	return moves, err
}

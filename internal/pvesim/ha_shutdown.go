package pvesim

// A node's shutdown and reboot as the HA stack plays them under datacenter.cfg's ha
// shutdown_policy (LRM.pm shutdown_request, Manager.pm's freeze state): conditional (the
// default) freezes the services of a rebooting node and fails over those of one shutting
// down; freeze always freezes them; failover stops them, and the CRM fences the node and
// recovers them elsewhere; migrate puts the node in maintenance, so that they are migrated
// away first and come back once it is up again.

import (
	"fmt"
	"strings"
)

// haShutdownPolicies are shutdown_policy's values.
var haShutdownPolicies = []string{"conditional", "freeze", "failover", "migrate"}

// SetHAShutdownPolicy sets datacenter.cfg's ha shutdown_policy, which ShutdownNode follows;
// "" is PVE's default, conditional.
func (s *Server) SetHAShutdownPolicy(policy string) error {
	if policy != "" && !contains(haShutdownPolicies, policy) {
		return fmt.Errorf("pvesim: shutdown_policy %q is not one of %s", policy, strings.Join(haShutdownPolicies, ", "))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.haShutdownPolicy = policy
	return nil
}

// ShutdownNode plays a node shutting down (reboot: and booting again at once) and its LRM's
// answer under the shutdown policy. Frozen services stay on the node, stopped, until it is up
// again (SetNodeOnline), then start there. Failed-over services are recovered by the CRM in its
// next round, as after a failure. Under migrate the node enters maintenance and its services
// are migrated away; one that cannot leave keeps the node up, as the LRM waits for it. On a node
// already in maintenance (ha-manager crm-command node-maintenance) the policy is ignored, and
// the node stays in maintenance once up again.
func (s *Server) ShutdownNode(name string, reboot bool) error {
	return s.withNode(name, func(n *node) error {
		if !n.online {
			return fmt.Errorf("pvesim: node %q is offline already", name)
		}
		s.haActive = true
		mode := map[string]string{"freeze": "freeze", "failover": "failover", "migrate": "maintenance"}[s.haShutdownPolicy]
		if mode == "" { // conditional
			mode = map[bool]string{true: "freeze", false: "failover"}[reboot]
		}
		switch {
		case n.haState == "maintenance":
			mode = ""
		case mode == "maintenance":
			n.setHAState("maintenance")
			s.maintenanceRound()
		}
		for _, res := range s.sortedHAResources() {
			g := s.guests[res.vmid]
			if g == nil || g.node != name || !res.pickedUp || res.state() == "ignored" {
				continue
			}
			if mode == "maintenance" && g.status == "running" {
				s.haShutdown[name] = "leaving" // the LRM waits for it to leave (nodeBack)
				return nil
			}
			// The LRM stops every service of a node shutting down.
			g.status = "stopped"
			res.frozen = res.frozen || mode == "freeze" && !res.errored && !res.recovering
		}
		n.online = false
		s.haShutdown[name] = mode
		if reboot {
			n.online = true
			s.nodeBack(n)
		}
		return nil
	})
}

// nodeBack is the HA stack on a node after a shutdown, each round: one whose LRM waits for
// its services to be migrated away powers off once none runs there; one that is up again has
// an active LRM, so it leaves the maintenance the migrate policy put it in (its services come
// back with failback, maintenanceRound) and the CRM unfreezes its services. The caller holds
// s.mu.
func (s *Server) nodeBack(n *node) {
	mode, down := s.haShutdown[n.name]
	switch {
	case mode == "leaving":
		for _, res := range s.haResources {
			if g := s.guests[res.vmid]; g != nil && g.node == n.name && g.status == "running" {
				return
			}
		}
		n.online, s.haShutdown[n.name] = false, "maintenance"
		return
	case !down || !n.online:
		return
	}
	delete(s.haShutdown, n.name)
	for _, res := range s.haResources {
		if g := s.guests[res.vmid]; g != nil && g.node == n.name {
			res.frozen = false
		}
	}
	if mode == "maintenance" {
		n.setHAState("")
		s.maintenanceRound()
	}
}

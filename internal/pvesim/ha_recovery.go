package pvesim

// The HA manager's node choice under the HA rules (pve-ha-manager 5.2, Manager.pm
// select_service_node and the rule plugins): recovery after a node failure and the refusal of
// a migration that would break a negative resource-affinity rule.

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// activeHARules are the rules the HA manager applies: enabled, and not dropped as infeasible;
// on PVE 8 (no HA rules) the HA groups the resources name (groupRules). The caller holds s.mu.
func (s *Server) activeHARules() []HARuleSpec {
	if s.haRules == nil {
		return s.groupRules()
	}
	errs := haRuleErrors(s.haRules, len(s.nodes))
	var out []HARuleSpec
	for _, r := range s.haRules {
		if !r.Disable && len(errs[r.Rule]) == 0 {
			out = append(out, r)
		}
	}
	return out
}

// groupRules are PVE 8's HA groups as its HA manager applies them: each group a resource names
// is a node-affinity rule over the group's nodes, strict when the group is restricted. That is
// PVE 8's node choice (Manager.pm select_service_node, get_node_priority_groups: the highest
// priority class of online group nodes, other nodes at -1 unless restricted), and what PVE 9
// turns groups into (Groups.pm migrate_groups_to_rules). A resource naming a group that does
// not exist gets the default group, every node. The caller holds s.mu.
func (s *Server) groupRules() []HARuleSpec {
	members := map[string][]string{}
	for _, res := range s.sortedHAResources() {
		if id := res.opts["group"]; s.haGroups[id] != nil {
			members[id] = append(members[id], res.sid)
		}
	}
	var out []HARuleSpec
	for _, id := range slices.Sorted(maps.Keys(members)) {
		g := s.haGroups[id]
		out = append(out, HARuleSpec{Rule: "ha-group-" + id, Type: "node-affinity", Resources: members[id],
			Nodes: splitList(g.nodes), Strict: g.opts["restricted"] == "1"})
	}
	return out
}

// failback tells whether the HA manager moves res back to a node of a higher priority class
// (select_service_node): PVE 9's resource option failback (on by default), PVE 8's group
// option nofailback (off by default; Groups.pm migrate_groups_to_resources carries it over
// as failback). The caller holds s.mu.
func (s *Server) failback(res *haResource) bool {
	if g := s.haGroups[res.opts["group"]]; s.haRules == nil && g != nil {
		return g.opts["nofailback"] != "1"
	}
	return res.opts["failback"] != "0"
}

// serviceNodes are the nodes a service counts on for the rules: the node it runs on while
// that node is up (a service in recovery on a failed node counts nowhere), and the target of
// a migration under way; a stopped one, or one whose start the CRM has not taken yet, counts
// nowhere (countsNowhere). The caller holds s.mu.
func (s *Server) serviceNodes(sid string) []string {
	res := s.haResources[sid]
	if res == nil || res.state() == "ignored" {
		return nil
	}
	g := s.guests[res.vmid]
	if g == nil || s.countsNowhere(res, s.crmState(res)) {
		return nil
	}
	var out []string
	if n := s.node(g.node); n != nil && n.online && !res.recovering {
		out = append(out, g.node)
	}
	if res.migrateTo != "" {
		out = append(out, res.migrateTo)
	}
	return out
}

// negativeBlockers are the services in negative affinity with res that run on, or are being
// migrated to, node. The caller holds s.mu.
func (s *Server) negativeBlockers(res *haResource, node string) []string {
	var out []string
	for _, r := range s.activeHARules() {
		if r.Type != "resource-affinity" || r.Affinity != "negative" || !slices.Contains(r.Resources, res.sid) {
			continue
		}
		for _, peer := range r.Resources {
			if peer != res.sid && slices.Contains(s.serviceNodes(peer), node) && !slices.Contains(out, peer) {
				out = append(out, peer)
			}
		}
	}
	sort.Strings(out)
	return out
}

// recoveryNodes are the nodes the HA manager may recover res on, best first, as
// select_service_node orders them: online nodes outside maintenance (the HA manager does not
// look at storage: a guest recovered away from its local disks fails to start there, see
// startProblem); a strict node-affinity rule keeps only its nodes (a non-strict one prefers its
// highest priority class of them); nodes where a negative peer runs or is being migrated to
// are dropped; nodes of positive peers are preferred; then the node running the fewest HA
// services, in cluster order. None: the service stays in recovery. Maintenance moves choose
// with it too (maintenanceStep). The caller holds s.mu.
func (s *Server) recoveryNodes(res *haResource) []string {
	var cands []string
	for _, n := range s.nodes {
		if n.online && n.haState != "maintenance" {
			cands = append(cands, n.name)
		}
	}
	rules := s.activeHARules()
	for _, r := range rules {
		if r.Type != "node-affinity" || !slices.Contains(r.Resources, res.sid) {
			continue
		}
		best, allowed := -1, []string{}
		for _, spec := range r.Nodes {
			name, prio := nodePriority(spec)
			if !slices.Contains(cands, name) {
				continue
			}
			switch {
			case prio > best:
				best, allowed = prio, []string{name}
			case prio == best:
				allowed = append(allowed, name)
			}
		}
		if r.Strict || len(allowed) > 0 {
			cands = slices.DeleteFunc(cands, func(n string) bool { return !slices.Contains(allowed, n) })
		}
	}
	cands = slices.DeleteFunc(cands, func(n string) bool { return len(s.negativeBlockers(res, n)) > 0 })
	together := map[string]int{}
	for _, r := range rules {
		if r.Type == "resource-affinity" && r.Affinity == "positive" && slices.Contains(r.Resources, res.sid) {
			for _, peer := range r.Resources {
				// A peer being migrated counts only on its target, so that services which
				// already moved do not draw the others back to the source (#6801).
				if nodes := s.serviceNodes(peer); peer != res.sid && len(nodes) > 0 && slices.Contains(cands, nodes[len(nodes)-1]) {
					together[nodes[len(nodes)-1]]++
				}
			}
		}
	}
	if len(together) > 0 {
		most := 0
		for _, c := range together {
			most = max(most, c)
		}
		cands = slices.DeleteFunc(cands, func(n string) bool { return together[n] < most })
	}
	if order, scored := s.crsOrder(res, cands); scored {
		return order
	}
	// A service being migrated counts on both nodes, as the HA manager's node usage does.
	load := map[string]int{}
	for _, other := range s.haResources {
		if other != res {
			for _, n := range s.serviceNodes(other.sid) {
				load[n]++
			}
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return load[cands[i]] < load[cands[j]] })
	return cands
}

// ruleTarget is where the CRM moves a started service in its round (Manager.pm
// next_state_started, select_service_node without preference): with failback (on unless
// set to 0) to the node recovery would pick when its node is not among the allowed nodes of
// the highest priority class (recoveryNodes), without failback only when its node breaks a
// rule (ruleAllows); "" to stay. Disks on local storage move along (haMigrate). The caller
// holds s.mu.
func (s *Server) ruleTarget(res *haResource) string {
	g := s.guests[res.vmid]
	if res.state() != "started" {
		return ""
	}
	nodes := s.recoveryNodes(res)
	switch {
	case len(nodes) == 0 || slices.Contains(nodes, g.node):
		return ""
	case !s.failback(res) && s.ruleAllows(res, g.node):
		return ""
	}
	return nodes[0]
}

// ruleAllows tells whether the rules let res run on node at all: a strict node-affinity rule
// lists it (a non-strict one allows every node), and no negative peer runs there or is being
// moved there unless a positive peer runs there too (get_node_affinity's allowed nodes,
// ResourceAffinity.pm is_allowed_on_node). The caller holds s.mu.
func (s *Server) ruleAllows(res *haResource, node string) bool {
	together := false
	for _, r := range s.activeHARules() {
		if !slices.Contains(r.Resources, res.sid) {
			continue
		}
		switch {
		case r.Type == "node-affinity" && r.Strict && !slices.ContainsFunc(r.Nodes, func(spec string) bool { n, _ := nodePriority(spec); return n == node }):
			return false
		case r.Type == "resource-affinity" && r.Affinity == "positive":
			for _, peer := range r.Resources {
				together = together || peer != res.sid && slices.Contains(s.serviceNodes(peer), node)
			}
		}
	}
	return together || len(s.negativeBlockers(res, node)) == 0
}

// nodePriority splits a node-affinity entry name[:priority] (priority 0 by default).
func nodePriority(spec string) (string, int) {
	name, p, _ := strings.Cut(spec, ":")
	prio, _ := strconv.Atoi(p) // the API checked the format; none is 0
	return name, prio
}

// recover moves a service in recovery to the best allowed node and starts it there when its
// requested state is started; without an allowed node it stays in recovery (PVE logs "no
// recovery node found" and tries again every round). The caller holds s.mu.
func (s *Server) recover(res *haResource) bool {
	nodes := s.recoveryNodes(res)
	if len(nodes) == 0 {
		return false
	}
	g := s.guests[res.vmid]
	g.node, g.lock, g.status = nodes[0], "", "stopped"
	res.recovering, res.migrateTo, res.seen, res.crmStopped = false, "", false, false
	if res.state() == "started" {
		s.lrmStart(res, g)
	}
	return true
}

// FailNode plays the failure of a node and the HA manager's answer: the node goes offline
// (fenced), and every HA-managed service the CRM knows on it is recovered, in sid order, on
// the node the HA rules allow (see recoveryNodes). It returns where each recovered guest went;
// a guest with no allowed node is missing there and stays in recovery on the failed node,
// retried every round of the HA manager. SetNodeOnline brings the node back.
func (s *Server) FailNode(name string) (map[int]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.node(name)
	switch {
	case n == nil:
		return nil, fmt.Errorf("pvesim: no node %q", name)
	case !n.online:
		return nil, fmt.Errorf("pvesim: node %q is offline already", name)
	}
	n.online = false
	s.haActive = true
	recovered := map[int]string{}
	for _, res := range s.sortedHAResources() {
		g := s.guests[res.vmid]
		// A service in the error state is not fenced nor recovered (next_state_error).
		if g == nil || g.node != name || !res.pickedUp || res.state() == "ignored" || res.errored {
			continue
		}
		res.recovering, res.migrateTo = true, ""
		g.status = "stopped"
		if s.recover(res) {
			recovered[res.vmid] = g.node
		}
	}
	return recovered, nil
}

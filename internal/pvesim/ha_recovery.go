package pvesim

// The HA manager's node choice under the HA rules (pve-ha-manager 5.2, Manager.pm
// select_service_node and the rule plugins): recovery after a node failure and the refusal of
// a migration that would break a negative resource-affinity rule.

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// activeHARules are the rules the HA manager applies, as Rules.pm's transform leaves them:
// enabled and not dropped as infeasible, positive rules that share a resource merged into one
// group, every member of a positive group kept apart from what any member is kept apart from
// (create_implicit_negative_resource_affinity_rules), and the node-affinity rule of a member
// applying to the whole group (create_implicit_positive_resource_affinity_node_affinity_rules).
// On PVE 8 (no HA rules) they are the HA groups the resources name (groupRules). The caller
// holds s.mu.
func (s *Server) activeHARules() []HARuleSpec {
	if s.haRules == nil {
		return s.groupRules()
	}
	errs := haRuleErrors(s.haRules, len(s.nodes))
	var nodeRules, positive, negative []HARuleSpec
	for _, r := range s.haRules {
		switch {
		case r.Disable || len(errs[r.Rule]) > 0:
		case r.Type == "node-affinity":
			r.Resources = slices.Clone(r.Resources) // extended below
			nodeRules = append(nodeRules, r)
		case r.Affinity == "positive":
			positive = append(positive, r)
		default:
			negative = append(negative, r)
		}
	}
	positive = mergePositive(positive)
	negative = append(negative, implicitNegatives(positive, negative)...)
	for _, group := range positive {
		for i, na := range nodeRules {
			if len(intersect(group.Resources, na.Resources)) > 0 {
				nodeRules[i].Resources = uniqueList(append(na.Resources, group.Resources...))
				break // the feasibility checks leave a group at most one node-affinity rule
			}
		}
	}
	return slices.Concat(nodeRules, positive, negative)
}

// mergePositive merges positive rules that share a resource into one rule per group, as
// merge_connected_positive_resource_affinity_rules does.
func mergePositive(rules []HARuleSpec) []HARuleSpec {
	var groups []HARuleSpec
	for _, r := range rules {
		merged := HARuleSpec{Rule: r.Rule, Type: r.Type, Affinity: r.Affinity, Resources: slices.Clone(r.Resources)}
		kept := groups[:0]
		for _, g := range groups {
			if len(intersect(g.Resources, merged.Resources)) > 0 {
				merged.Resources = uniqueList(append(g.Resources, merged.Resources...))
			} else {
				kept = append(kept, g)
			}
		}
		groups = append(kept, merged)
	}
	return groups
}

// implicitNegatives are the negative pairs a positive group implies: a member kept apart from
// a resource makes every member kept apart from it.
func implicitNegatives(positive, negative []HARuleSpec) []HARuleSpec {
	var out []HARuleSpec
	for _, group := range positive {
		apart := map[string][]string{} // resource -> the members already kept apart from it
		for _, neg := range negative {
			for _, member := range intersect(group.Resources, neg.Resources) {
				for _, other := range neg.Resources {
					if other != member {
						apart[other] = append(apart[other], member)
					}
				}
			}
		}
		for _, other := range slices.Sorted(maps.Keys(apart)) {
			for _, member := range group.Resources {
				if !slices.Contains(apart[other], member) {
					out = append(out, HARuleSpec{Rule: "_implicit-negative-" + group.Rule, Type: "resource-affinity",
						Affinity: "negative", Resources: []string{member, other}})
				}
			}
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

// usedNodes are the nodes the HA manager counts service res on, for the load and the rules, as
// Usage.pm's get_used_service_nodes has them over the nodes it counts online (online, not in
// maintenance): none while the CRM has it stopped or has not taken its start yet
// (request_start); else its node, and the target of a move, where a move placing it before its
// start (request_start_balance) counts only. A service picked up requested stopped in the
// previous round still counts: PVE adds it as request_stop and has it stopped one round later,
// in the round pvesim, a round behind, takes the starts of the services added with it. The
// caller holds s.mu.
func (s *Server) usedNodes(res *haResource) (current, target string) {
	g := s.guests[res.vmid]
	switch state := s.crmState(res); {
	case state == "":
		return "", ""
	case state == "stopped" && res.pickedIn != s.crmRounds-1:
		return "", ""
	case state == "started" && g.status != "running" && !res.seen:
		return "", "" // request_start
	}
	online := func(name string) string {
		if n := s.node(name); n != nil && n.schedulable() {
			return name
		}
		return ""
	}
	if !res.startBalance {
		current = online(g.node)
	}
	if res.migrateTo != "" {
		target = online(res.migrateTo)
	}
	return current, target
}

// serviceNodes are usedNodes as a list, current first. The caller holds s.mu.
func (s *Server) serviceNodes(sid string) []string {
	res := s.haResources[sid]
	if res == nil {
		return nil
	}
	var out []string
	current, target := s.usedNodes(res)
	for _, n := range []string{current, target} {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// affinePeers are the services in positive (together) or negative affinity with res under the
// active rules, sorted. The caller holds s.mu.
func (s *Server) affinePeers(res *haResource, affinity string) []string {
	var out []string
	for _, r := range s.activeHARules() {
		if r.Type == "resource-affinity" && r.Affinity == affinity && slices.Contains(r.Resources, res.sid) {
			for _, peer := range r.Resources {
				if peer != res.sid && !slices.Contains(out, peer) {
					out = append(out, peer)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// negativeBlockers are the services in negative affinity with res that run on, or are being
// migrated to, node. The caller holds s.mu.
func (s *Server) negativeBlockers(res *haResource, node string) []string {
	var out []string
	for _, peer := range s.affinePeers(res, "negative") {
		if slices.Contains(s.serviceNodes(peer), node) {
			out = append(out, peer)
		}
	}
	return out
}

// motionBlockers are the services in negative affinity with res that keep a migrate or relocate
// command for it to node from being carried out: those the CRM has on node, whatever their
// state, unless they are being moved elsewhere (Config.pm get_resource_motion_info, which the
// API answers with, and Manager.pm queue_resource_motion, which refuses the command). A move
// only queued has no target yet: the guest's migrate lock tells one under way. The caller
// holds s.mu.
func (s *Server) motionBlockers(res *haResource, node string) []string {
	var out []string
	for _, peer := range s.affinePeers(res, "negative") {
		other := s.haResources[peer]
		if other == nil || s.crmState(other) == "" {
			continue
		}
		g := s.guests[other.vmid]
		if g.node == node && (g.lock != "migrate" || other.migrateTo == node) {
			out = append(out, peer)
		}
	}
	return out
}

// comigrated are the services in positive affinity with res that the CRM knows, which a
// migrate or relocate command for res takes along (get_resource_motion_info). The caller holds
// s.mu.
func (s *Server) comigrated(res *haResource) []string {
	var out []string
	for _, peer := range s.affinePeers(res, "positive") {
		if other := s.haResources[peer]; other != nil && s.crmState(other) != "" {
			out = append(out, peer)
		}
	}
	return out
}

// nodeAffinity is get_node_affinity: of the nodes the HA manager counts online (online and
// not in maintenance), those res's node-affinity rule allows (a non-strict rule allows every
// node, the others at a priority below its own) and those of the highest priority class among
// them. The caller holds s.mu.
func (s *Server) nodeAffinity(res *haResource) (allowed, preferred []string) {
	var online []string
	for _, n := range s.nodes {
		if n.reportedHAState() == "online" {
			online = append(online, n.name)
		}
	}
	for _, r := range s.activeHARules() {
		if r.Type != "node-affinity" || !slices.Contains(r.Resources, res.sid) {
			continue
		}
		prio := map[string]int{}
		for _, spec := range r.Nodes {
			name, p := nodePriority(spec)
			prio[name] = p
		}
		best := -2
		for _, n := range online {
			p, listed := prio[n]
			switch {
			case !listed && r.Strict:
				continue
			case !listed:
				p = -1
			}
			allowed = append(allowed, n)
			switch {
			case p > best:
				best, preferred = p, []string{n}
			case p == best:
				preferred = append(preferred, n)
			}
		}
		return allowed, preferred
	}
	return online, online
}

// together counts, per node, the services in positive affinity with res there (a service being
// migrated counts only on its target, so that those which already moved do not draw the others
// back, #6801); apart are the nodes where one in negative affinity is or is going
// (get_resource_affinity). The caller holds s.mu.
func (s *Server) together(res *haResource) map[string]int {
	out := map[string]int{}
	for _, peer := range s.affinePeers(res, "positive") {
		if nodes := s.serviceNodes(peer); len(nodes) > 0 {
			out[nodes[len(nodes)-1]]++
		}
	}
	return out
}

// candidates are select_service_node's nodes before the scores: the highest priority class of
// res's node affinity, without the nodes in skip and those of negative peers, narrowed to the
// node most of its positive peers are on (the first by name among equals). The caller holds
// s.mu.
func (s *Server) candidates(res *haResource, skip []string) []string {
	_, nodes := s.nodeAffinity(res)
	nodes = slices.DeleteFunc(slices.Clone(nodes), func(n string) bool {
		return slices.Contains(skip, n) || len(s.negativeBlockers(res, n)) > 0
	})
	together, majority := s.together(res), ""
	for _, n := range slices.Sorted(maps.Keys(together)) {
		if slices.Contains(nodes, n) && (majority == "" || together[n] > together[majority]) {
			majority = n
		}
	}
	if majority != "" {
		return []string{majority}
	}
	return nodes
}

// byScore orders nodes as the scheduler scores them for res: with crs ha=static or dynamic
// by its usage scores (crsOrder), else as the basic scheduler does, by the HA services
// counted on each (serviceNodes: a service being migrated counts on both nodes, a stopped one
// nowhere), then by name. The caller holds s.mu.
func (s *Server) byScore(res *haResource, nodes []string) []string {
	if order, scored := s.crsOrder(res, nodes); scored {
		return order
	}
	load := map[string]int{}
	for sid := range s.haResources {
		for _, n := range s.serviceNodes(sid) {
			load[n]++
		}
	}
	out := slices.Clone(nodes)
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(load[a], load[b]), cmp.Compare(a, b)) })
	return out
}

// recoveryNodes are the nodes the HA manager may recover res on, best first, as
// select_service_node with best-score orders them (candidates, then byScore), the node a
// service left for maintenance first when it is among them. It does not look at storage: a
// guest recovered away from its local disks fails to start there (startProblem). None: the
// service stays in recovery. Maintenance moves choose with it too (maintenanceStep). The
// caller holds s.mu.
func (s *Server) recoveryNodes(res *haResource) []string {
	nodes := s.byScore(res, s.candidates(res, nil))
	if i := slices.Index(nodes, res.maintenanceNode); i > 0 {
		nodes = slices.Insert(slices.Delete(nodes, i, i+1), 0, res.maintenanceNode)
	}
	return nodes
}

// ruleTarget is where the CRM moves a started service in its round (Manager.pm
// next_state_started, select_service_node with no node preference), "" to stay: without
// failback (on unless set to 0) it stays where its node-affinity rule allows it and its
// resource affinity does not forbid it; otherwise it stays on a node of its best candidates
// and goes to the best of them when its node is not one. Disks on local storage move along
// (haMigrate). The caller holds s.mu.
func (s *Server) ruleTarget(res *haResource) string {
	g := s.guests[res.vmid]
	if res.state() != "started" {
		return ""
	}
	allowed, preferred := s.nodeAffinity(res)
	if len(preferred) == 0 {
		return ""
	}
	if !s.failback(res) && slices.Contains(allowed, g.node) && s.ruleAllows(res, g.node) {
		return ""
	}
	nodes := s.recoveryNodes(res)
	switch {
	case len(nodes) == 0 || nodes[0] == g.node:
		return ""
	case nodes[0] == res.maintenanceNode || !slices.Contains(nodes, g.node):
		return nodes[0]
	}
	return ""
}

// ruleAllows is ResourceAffinity.pm's is_allowed_on_node: a positive peer is on node, or no
// negative peer is there or going there. The caller holds s.mu.
func (s *Server) ruleAllows(res *haResource, node string) bool {
	return s.together(res)[node] > 0 || len(s.negativeBlockers(res, node)) == 0
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

// fenced tells whether the CRM fences res because its node failed, to recover it: a service it
// knows on a node that is down, unless it is in recovery already, in the error state
// (next_state_error), frozen, or requested disabled (next_state_stopped leaves it on the
// node). The caller holds s.mu.
func (s *Server) fenced(res *haResource) bool {
	g := s.guests[res.vmid]
	if g == nil {
		return false
	}
	n := s.node(g.node)
	switch {
	case n == nil || n.online || !res.pickedUp || res.state() == "ignored" || res.recovering || res.errored || res.frozen:
		return false
	case res.requestState() == "disabled":
		return false
	}
	// A stopped service on a node down in maintenance stays (next_state_stopped).
	return n.haState != "maintenance" || s.crmState(res) != "stopped"
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
		// Disarmed, the node is not fenced (its watchdog is released): arming recovers them.
		if g == nil || g.node != name || !s.fenced(res) || s.haDisarm != "" {
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

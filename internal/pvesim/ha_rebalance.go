package pvesim

// Rebalancing by the HA manager (pve-ha-manager Manager.pm): ha-rebalance-on-start places a
// service on the best node before it starts (next_state_request_start), and PVE 9.2's
// ha-auto-rebalance migrates one service, or one bundle of positive-affinity services, per
// round to lower the imbalance of the node loads (load_balance, scored by
// proxmox-resource-scheduling's bruteforce or TOPSIS method).

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// HARebalance is a migration the HA manager's automatic rebalancing started, as PVE logs it
// ("auto rebalance - migrate vm:101 to node2 (expected change for imbalance from 0.71 to
// 0.47)"): the leading service of the bundle, its node and target, and the imbalance before
// and the one expected after (0..1).
type HARebalance struct {
	SID, Source, Target string
	Imbalance, Expected float64
}

func (r HARebalance) String() string {
	return fmt.Sprintf("%s %s -> %s (imbalance %.0f%% -> %.0f%%)", r.SID, r.Source, r.Target, 100*r.Imbalance, 100*r.Expected)
}

// SetCRS sets datacenter.cfg's crs property, a property string as PVE takes it (e.g.
// "ha=dynamic,ha-auto-rebalance=1,ha-auto-rebalance-method=topsis"; "" for none, the basic
// scheduler), checked against the release's schema. The HA manager uses it from its next
// round on; the rounds counted towards the hold duration start again.
func (s *Server) SetCRS(value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.pveVersion()
	c, msg := parseCRS(value, v)
	if msg != "" {
		return fmt.Errorf("pvesim: crs %q: %s (PVE %s: %s)", value, msg, v.release, crsHint(v))
	}
	s.crs.config, s.crs.sustained = c, 0
	return nil
}

// RunHARounds runs n rounds of the HA manager (each read of the API runs one) and returns the
// rebalancing migrations they started, in order.
func (s *Server) RunHARounds(n int) []HARebalance {
	var out []HARebalance
	for range n {
		s.mu.Lock()
		s.crmRound()
		if r := s.crs.last; r != nil {
			out = append(out, *r)
		}
		s.mu.Unlock()
	}
	return out
}

// HAImbalance is the imbalance of the node loads as the HA manager's scheduler sees it, 0..1
// (0 under the basic scheduler, which has none).
func (s *Server) HAImbalance() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	mode := s.crs.config.mode()
	if mode == "basic" {
		return 0
	}
	return imbalance(s.crsUsage(mode).nodes(false))
}

// rebalanceStart is ha-rebalance-on-start (next_state_request_start): when the CRM takes the
// start of a stopped service (before it marks it seen: it counts on no node yet),
// select_service_node picks the best node under the rules; on another node the service is
// migrated there, stopped, and started there afterwards (request_start_balance). The caller
// holds s.mu.
func (s *Server) rebalanceStart(res *haResource) {
	g := s.guests[res.vmid]
	if !s.crs.config.on("ha-rebalance-on-start") || res.state() != "started" || g.status == "running" || res.migrateTo != "" {
		return
	}
	if nodes := s.recoveryNodes(res); len(nodes) > 0 && nodes[0] != g.node && s.haMigrate(res, nodes[0], false) {
		res.startBalance = true
	}
}

// autoRebalance is load_balance, run at the start of a round under the static or dynamic
// scheduler with ha-auto-rebalance: nothing while a service moves; once the imbalance has
// exceeded the threshold (default 30 %) for the hold duration (default 3 rounds), the best
// migration of a stationary bundle (bruteforce: the lowest imbalance after it; topsis: the
// best TOPSIS score) is carried out if it lowers the imbalance by the margin (default 10 %).
// The caller holds s.mu.
func (s *Server) autoRebalance() {
	s.crs.last = nil
	c := s.crs.config
	mode := c.mode()
	if !c.on("ha-auto-rebalance") || mode == "basic" || s.rebalanceBusy() {
		return
	}
	u := s.crsUsage(mode)
	now := imbalance(u.nodes(false))
	if now <= c.number("ha-auto-rebalance-threshold", 30)/100 {
		s.crs.sustained = 0
		return
	}
	if s.crs.sustained++; float64(s.crs.sustained) < c.number("ha-auto-rebalance-hold-duration", 3) {
		return
	}
	s.crs.sustained = 0
	best := u.bestMigration(s.rebalanceBundles(mode), c["ha-auto-rebalance-method"])
	if best == nil || (now-best.Expected)/now < c.number("ha-auto-rebalance-margin", 10)/100 {
		return
	}
	best.Imbalance = now
	s.rebalanceMove(s.haResources[best.SID], best.Target)
	s.crs.last = best
}

// rebalanceBusy tells whether a service moves (any_resource_motion_queued_or_running): a
// migrate or relocate queued or under way, or one that ended since the previous round, which
// the CRM learns of from the LRM in this round only. A recovery from a failed node is no
// move. It notes where the services are for the next round. The caller holds s.mu.
func (s *Server) rebalanceBusy() bool {
	busy, now := false, map[string]string{}
	for sid, res := range s.haResources {
		g := s.guests[res.vmid]
		if g == nil {
			continue
		}
		now[sid] = g.node
		prev, known := s.crs.lastNodes[sid]
		from := s.node(prev)
		busy = busy || res.migrateTo != "" || known && prev != g.node && from != nil && from.online
	}
	s.crs.lastNodes = now
	return busy
}

// rebalanceBundle is a migration candidate (get_resource_migration_candidates): the started
// services of a positive-affinity group that all run on one node, led by the first sid, with
// the nodes the rules let the leader move to and the bundle's figures summed.
type rebalanceBundle struct {
	leader, source string
	targets        []string
	stats          crsStats
}

// rebalanceBundles are the candidates of automatic rebalancing, by leader: a bundle is left
// out while one of its services moves, when its services run on several nodes, and when one of
// them has the HA resource option auto-rebalance off (pve-docs: such a resource, and the
// resources in positive affinity with it, take part in no rebalancing migration). Its targets
// are the leader's highest priority class of online nodes (nodeAffinity) without the nodes of
// its negative peers (those of the whole group, activeHARules) and its own node. The caller
// holds s.mu.
func (s *Server) rebalanceBundles(mode string) []rebalanceBundle {
	var out []rebalanceBundle
	done := map[string]bool{}
next:
	for _, res := range s.sortedHAResources() {
		if s.crmState(res) != "started" {
			continue
		}
		members, source := []*haResource{res}, s.guests[res.vmid].node
		for _, sid := range s.comigrated(res) {
			peer := s.haResources[sid]
			switch state := s.crmState(peer); {
			case state == "migrate" || state == "relocate":
				continue next
			case state != "started":
				continue
			case s.guests[peer.vmid].node != source:
				continue next
			}
			members = append(members, peer)
		}
		slices.SortFunc(members, func(a, b *haResource) int { return cmp.Compare(a.sid, b.sid) })
		leader := members[0]
		if done[leader.sid] {
			continue
		}
		done[leader.sid] = true
		b := rebalanceBundle{leader: leader.sid, source: source}
		for _, m := range members {
			if m.opts["auto-rebalance"] == "0" {
				continue next
			}
			b.stats = b.stats.plus(s.crsStatsOf(s.guests[m.vmid], mode))
		}
		_, preferred := s.nodeAffinity(leader)
		for _, t := range preferred {
			if t != source && len(s.negativeBlockers(leader, t)) == 0 {
				b.targets = append(b.targets, t)
			}
		}
		if len(b.targets) > 0 {
			out = append(out, b)
		}
	}
	return out
}

// truncImbalance truncates an expected imbalance to 15 decimal digits, as the crate's
// ScoredMigration does, so that values equal up to rounding compare equal.
func truncImbalance(x float64) float64 { return math.Trunc(x*1e15) / 1e15 }

// bestMigration scores moving each bundle to each of its targets as if it had moved, its
// figures leaving its node and arriving on the target, and returns the best (nil for none):
// with bruteforce the lowest imbalance after it (ties by leader, source, target), with topsis
// the best TOPSIS score of the resulting node loads (ties by candidate order).
func (u *crsUsage) bestMigration(bundles []rebalanceBundle, method string) *HARebalance {
	nodes := u.nodes(false)
	var cands []HARebalance
	var matrix [][4]float64
	for _, b := range bundles {
		for _, t := range b.targets {
			after := slices.Clone(nodes)
			for i := range after {
				switch after[i].name {
				case b.source:
					after[i].removeRunning(b.stats)
				case t:
					after[i].addRunning(b.stats)
				}
			}
			cands = append(cands, HARebalance{SID: b.leader, Source: b.source, Target: t, Expected: truncImbalance(imbalance(after))})
			matrix = append(matrix, topsisAlternative(after))
		}
	}
	if len(cands) == 0 {
		return nil
	}
	best := 0
	if method == "topsis" {
		scores := topsisScores(matrix)
		for i := range scores {
			if scores[i] > scores[best] {
				best = i
			}
		}
	} else {
		for i, c := range cands {
			if cmp.Or(cmp.Compare(c.Expected, cands[best].Expected), strings.Compare(c.SID, cands[best].SID),
				strings.Compare(c.Source, cands[best].Source), strings.Compare(c.Target, cands[best].Target)) < 0 {
				best = i
			}
		}
	}
	return &cands[best]
}

// rebalanceMove is queue_resource_motion for a rebalancing migration: the leader and its
// positive peers not on target yet (stopped ones too) are moved there, migrated if the leader
// is a VM, relocated if it is a container. The caller holds s.mu.
func (s *Server) rebalanceMove(leader *haResource, target string) {
	for _, sid := range append([]string{leader.sid}, s.comigrated(leader)...) {
		res := s.haResources[sid]
		if g := s.guests[res.vmid]; g.node != target {
			s.haMigrate(res, target, leader.typ == "ct")
		}
	}
}

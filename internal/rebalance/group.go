package rebalance

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/plugins"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// roomTries bounds the (node, guest) pairs one plan tries when it makes room, so that a
// cluster of many guests no node takes still plans in bounded time.
const roomTries = 256

// group is the guests that must stay on one node with g, g first, then by VMID: the members of
// its enabled positive HA resource-affinity rules and the guests its required node-level
// vm_affinity selects, on g's node, and theirs in turn.
func (p *planner) group(g *scheduler.Guest) []*scheduler.Guest {
	in := map[int]bool{g.VMID: true}
	out := []*scheduler.Guest{g}
	for i := 0; i < len(out); i++ {
		m := out[i]
		add := func(h *scheduler.Guest) {
			if h.Node == g.Node && !in[h.VMID] {
				in[h.VMID] = true
				out = append(out, h)
			}
		}
		for _, r := range p.snap.HARules {
			if r.Disabled || r.Type != scheduler.HAResourceAffinity || r.Affinity != scheduler.HAPositive || !slices.Contains(r.VMIDs, m.VMID) {
				continue
			}
			for _, vmid := range r.VMIDs {
				if j, ok := p.byVMID[vmid]; ok {
					add(&p.snap.Guests[j])
				}
			}
		}
		for _, t := range p.request(m).VMAffinity {
			if t.Weight != 0 || t.TopologyKey != plugins.TopologyNode {
				continue
			}
			for j := range p.snap.Guests {
				if h := &p.snap.Guests[j]; t.Group().Selects(h.Tags) {
					add(h)
				}
			}
		}
	}
	sort.Slice(out[1:], func(i, j int) bool { return out[1+i].VMID < out[1+j].VMID })
	return out
}

// moveGroup moves g's group as one step to the best node, by g's ranking, that takes every
// member with all of them there: each member's hard filters and HA rules are checked on the
// state after the group moved, and accept (nil = any) on the node. It returns how many moved,
// or why no node takes them.
func (p *planner) moveGroup(g *scheduler.Guest, members []*scheduler.Guest, why string, accept func(string) string) (int, string, error) {
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = strconv.Itoa(m.VMID)
		r := p.notMovable(m)
		if p.moved[m.VMID] {
			r = "it moves already in this plan"
		}
		if r != "" {
			return 0, fmt.Sprintf("its group (vm %s) moves as one and vm %d does not move: %s", strings.Join(names, ", "), m.VMID, r), nil
		}
	}
	group := "the group (vm " + strings.Join(names, ", ") + ")"
	if n := len(p.plan.Moves) + len(members); n > p.in.MaxMoves {
		return 0, fmt.Sprintf("%s needs %d moves, max_moves (%d) leaves %d", group, len(members), p.in.MaxMoves, p.in.MaxMoves-len(p.plan.Moves)), nil
	}
	if n := p.movesBy[g.Node] + len(members); n > p.in.MaxMovesPerNode {
		return 0, fmt.Sprintf("%s needs %d moves off %s, max_moves_per_node is %d", group, len(members), g.Node, p.in.MaxMovesPerNode), nil
	}
	if r := p.overBudgetTogether(members); r != "" {
		return 0, group + " moves as one: " + r, nil
	}
	ranked, err := p.check(g).Rank(p.request(g), g.VMID)
	if err != nil {
		return 0, err.Error(), nil
	}
	var refusals []string
	src := g.Node
	for _, c := range ranked {
		if c.Node == src || p.draining[c.Node] {
			continue
		}
		if accept != nil {
			if r := accept(c.Node); r != "" {
				refusals = append(refusals, c.Node+": "+r)
				continue
			}
		}
		r, err := p.membersStorage(members, c.Node)
		if err != nil {
			return 0, "", err
		}
		if r != "" {
			refusals = append(refusals, c.Node+": "+r)
			continue
		}
		for i, m := range members {
			p.move(m, p.request(m), c.Node, why+"; with "+group)
			if i > 0 {
				p.plan.Moves[len(p.plan.Moves)-1].Step = p.plan.Moves[len(p.plan.Moves)-2].Step
			}
		}
		r, err = p.groupRefusal(members, c.Node)
		if err != nil {
			return 0, "", err
		}
		if r == "" {
			return len(members), "", nil
		}
		p.undo(len(members))
		refusals = append(refusals, c.Node+": "+r)
	}
	return 0, group + " fits no node together: " + strings.Join(refusals, "; "), nil
}

// membersStorage says why node lacks a storage of a member's disks or the room for one
// member's, "" when it has them; groupRefusal checks the room for all of them.
func (p *planner) membersStorage(members []*scheduler.Guest, node string) (string, error) {
	for _, m := range members {
		if r, err := p.storageRefusal(m, node); r != "" || err != nil {
			return fmt.Sprintf("vm %d: %s", m.VMID, r), err
		}
	}
	return "", nil
}

// groupRefusal checks the members where the group moved: why one of them may not stay on node,
// "" when all may.
func (p *planner) groupRefusal(members []*scheduler.Guest, node string) (string, error) {
	for _, m := range members {
		if r := p.check(m).Check(p.request(m), node, m.VMID); len(r) > 0 {
			return fmt.Sprintf("vm %d: %s", m.VMID, strings.Join(r, ", ")), nil
		}
		if r := p.haRefusal(m.VMID, node); r != "" {
			return fmt.Sprintf("vm %d: %s", m.VMID, r), nil
		}
	}
	// The disks moved with the members: a storage of node now used beyond its size is full.
	for _, m := range members {
		local, err := p.localBytes(m)
		if err != nil {
			return "", err
		}
		for name := range local {
			if s := p.storage(node, name); s != nil && s.Used > s.Total {
				return fmt.Sprintf("storage %s lacks %s GiB for the members' disks", name, inGiB(s.Used-s.Total)), nil
			}
		}
	}
	return "", nil
}

// overBudgetTogether says which budget group of the members would count more moves than
// max_moves_per_group allows once they all moved, "" when none would.
func (p *planner) overBudgetTogether(members []*scheduler.Guest) string {
	if p.in.MaxMovesPerGroup <= 0 {
		return ""
	}
	count := map[string]int{}
	var keys []string
	for _, m := range members {
		for _, key := range budgetGroups(m, p.request(m)) {
			if count[key] == 0 {
				keys = append(keys, key)
			}
			count[key]++
		}
	}
	for _, key := range keys {
		if n := p.groupMoves[key] + count[key]; n > p.in.MaxMovesPerGroup {
			return fmt.Sprintf("max_moves_per_group (%d) for the group tagged %s: the plan would move %d of its members", p.in.MaxMovesPerGroup, key, n)
		}
	}
	return ""
}

// makeRoom moves another guest off a node that refuses g, then g there: the nodes g's ranking
// finds infeasible in order, their movable guests least memory first. The other guest goes to
// the node its own rules rank best; one that already breaks its rules may instead be parked on
// a node that breaks no other kind of them, and moves on to its own node once g left it. It
// returns how many moved, 0 when no such plan exists within the caps and roomTries.
func (p *planner) makeRoom(g *scheduler.Guest, req scheduler.Request, why string, accept func(string) string) (int, error) {
	if p.in.MaxMoves-len(p.plan.Moves) < 2 {
		return 0, nil
	}
	ranked, err := p.check(g).Rank(req, g.VMID)
	if err != nil {
		return 0, nil // target, which ranked first, gave the reason
	}
	src := g.Node
	for _, c := range ranked {
		if p.roomTries >= roomTries {
			return 0, nil
		}
		if c.Feasible || c.Node == src || p.draining[c.Node] || p.haRefusal(g.VMID, c.Node) != "" {
			continue
		}
		only := func(to string) string {
			if to != c.Node {
				return "not the node room is made on"
			}
			if accept != nil {
				return accept(to)
			}
			return ""
		}
		for _, h := range p.smallestOn(c.Node, g) {
			if p.roomTries >= roomTries {
				return 0, nil
			}
			p.roomTries++
			n, err := p.tryRoom(g, req, h, c.Node, why, only)
			if n > 0 || err != nil {
				return n, err
			}
		}
	}
	return 0, nil
}

// tryRoom moves h off node (to its best node, else parked), then g onto node, then a parked h
// on to where it belongs; it undoes the moves unless all of them are made.
func (p *planner) tryRoom(g *scheduler.Guest, req scheduler.Request, h *scheduler.Guest, node, why string, only func(string) string) (int, error) {
	hreq := p.request(h)
	if p.capped(h, hreq) != "" {
		return 0, nil
	}
	room := fmt.Sprintf("makes room on %s for vm %d", node, g.VMID)
	to, _, err := p.target(h, hreq, nil, false)
	if err != nil {
		return 0, err
	}
	parked := false
	if to == "" {
		if to, err = p.parking(h, hreq, g.Node); to == "" || err != nil {
			return 0, err
		}
		parked = true
		room = fmt.Sprintf("parked on %s to make room on %s for vm %d", to, node, g.VMID)
	}
	p.move(h, hreq, to, room)
	made := 1
	if dst, _, err := p.target(g, req, only, false); err != nil || dst == "" {
		p.undo(made)
		return 0, err
	}
	p.move(g, req, node, why)
	made++
	if parked {
		dst, _, err := p.target(h, hreq, nil, false)
		if err != nil || dst == "" || p.capped(h, hreq) != "" {
			p.undo(made)
			return 0, err
		}
		p.move(h, hreq, dst, fmt.Sprintf("back from parking on %s", to))
		made++
	}
	return made, nil
}

// smallestOn lists the movable guests on node but g, least memory first (their disks are read
// only for the one that moves: a request each), then by VMID.
func (p *planner) smallestOn(node string, g *scheduler.Guest) []*scheduler.Guest {
	var out []*scheduler.Guest
	for _, h := range p.candidates() {
		if h.Node == node && !p.moved[h.VMID] && h.VMID != g.VMID {
			out = append(out, h)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].MaxMem < out[j].MaxMem })
	return out
}

// parking finds a node for a guest that already breaks its rules where it breaks no other
// kind of them (the same plugins refuse it), passes the HA rules and has room for its disks:
// not its own node nor avoid, in snapshot order; "" when none.
func (p *planner) parking(h *scheduler.Guest, req scheduler.Request, avoid string) (string, error) {
	now := p.check(h).Check(req, h.Node, h.VMID)
	if len(now) == 0 {
		return "", nil
	}
	kinds := map[string]bool{}
	for _, r := range now {
		kinds[kind(r)] = true
	}
	for _, n := range p.snap.Nodes {
		if !n.Online || n.Name == h.Node || n.Name == avoid || p.draining[n.Name] || p.haRefusal(h.VMID, n.Name) != "" {
			continue
		}
		ok := true
		for _, r := range p.check(h).Check(req, n.Name, h.VMID) {
			ok = ok && kinds[kind(r)]
		}
		if !ok {
			continue
		}
		if r, err := p.storageRefusal(h, n.Name); err != nil || r == "" {
			return n.Name, err
		}
	}
	return "", nil
}

// kind is the plugin a refusal names ("NodeRegex: ..." -> NodeRegex).
func kind(reason string) string {
	k, _, _ := strings.Cut(reason, ":")
	return k
}

// undo takes back the last n moves of the plan.
func (p *planner) undo(n int) {
	for ; n > 0; n-- {
		m := p.plan.Moves[len(p.plan.Moves)-1]
		p.plan.Moves = p.plan.Moves[:len(p.plan.Moves)-1]
		g := &p.snap.Guests[p.byVMID[m.VMID]]
		p.movesBy[m.From]--
		for _, key := range budgetGroups(g, p.request(g)) {
			p.groupMoves[key]--
		}
		p.moved[m.VMID] = slices.ContainsFunc(p.plan.Moves, func(e Move) bool { return e.VMID == m.VMID })
		p.shiftLiveMemory(g, m.To, m.From)
		p.shiftDisks(g, m.To, m.From)
		shift(g, p.alloc[m.To], p.alloc[m.From])
		g.Node = m.From
		p.checkers = nil
	}
}

package scheduler

import (
	"fmt"
	"sort"
)

// view is the nodes of one snapshot as decisions see them, built once. An existing guest is
// checked in place by leaving it out of the view for the check and putting it back after:
// sticky placement, CheckNode, Rank and the batch checks all do it this way.
type view struct {
	snap   *Snapshot
	infos  []*NodeInfo
	byName map[string]*NodeInfo
}

func newView(snap *Snapshot) *view {
	infos, byName := buildNodeInfos(snap)
	return &view{snap: snap, infos: infos, byName: byName}
}

// without leaves guest g out of the view: the guest on its node (and on the node it is
// migrating to) and any reservation of its id (a guest created by this process but not
// released yet), with their capacity and disk debits. The returned function puts everything
// back as it was.
func (v *view) without(g *Guest) (restore func()) {
	nodes := []string{g.Node}
	if g.MigratingTo != "" && g.MigratingTo != g.Node {
		nodes = append(nodes, g.MigratingTo)
	}
	for _, r := range v.snap.Reservations {
		if r.VMID == g.VMID && r.Node != g.Node {
			nodes = append(nodes, r.Node)
		}
	}
	type saved struct {
		ni  *NodeInfo
		old NodeInfo
	}
	var undo []saved
	var credits []*Guest
	for _, name := range nodes {
		ni, ok := v.byName[name]
		if !ok {
			continue
		}
		old := *ni
		fresh := NodeInfo{Node: ni.Node, CPU: ni.Node.CPU, Mem: ni.Node.Mem, storageDebits: ni.storageDebits,
			Guests: make([]*Guest, 0, len(ni.Guests))}
		for _, other := range ni.Guests {
			if other.VMID == g.VMID {
				credits = append(credits, other)
				continue
			}
			fresh.list(other)
			fresh.tally(other)
		}
		*ni = fresh
		undo = append(undo, saved{ni, old})
	}
	for _, c := range credits {
		v.byName[c.Node].chargeDisks(c, false)
	}
	return func() {
		for _, s := range undo {
			*s.ni = s.old
		}
		for _, c := range credits {
			v.byName[c.Node].chargeDisks(c, true)
		}
	}
}

// Checker checks existing guests of one snapshot in place, each with itself left out,
// building the nodes once for all of them (the rebalance planner checks thousands).
type Checker struct {
	p      *Profile
	v      *view
	guests map[int]*Guest
}

// NewChecker prepares checks on snap, which must not change while the checker is used.
func (p *Profile) NewChecker(snap *Snapshot) *Checker {
	c := &Checker{p: p, v: newView(snap), guests: make(map[int]*Guest, len(snap.Guests))}
	for i := range snap.Guests {
		c.guests[snap.Guests[i].VMID] = &snap.Guests[i]
	}
	return c
}

// leaveOut leaves the guest vmid out of the view when the snapshot has it.
func (c *Checker) leaveOut(vmid int) func() {
	if g, ok := c.guests[vmid]; ok {
		return c.v.without(g)
	}
	return func() {}
}

// Check runs the hard filters for the existing guest vmid on node, its own usage left out,
// and returns every reason the node fails (nil when it passes).
func (c *Checker) Check(r Request, node string, vmid int) []string {
	ni, ok := c.v.byName[node]
	if !ok {
		return []string{fmt.Sprintf("node %q is not part of the cluster", node)}
	}
	defer c.leaveOut(vmid)()
	state := NewCycleState()
	r = *existing(&r)
	if err := c.p.preFilter(state, &r, c.v.infos); err != nil {
		return []string{err.Error()}
	}
	reasons, _ := c.p.filter(state, &r, ni)
	return reasons
}

// Rank evaluates the request for the existing guest vmid with the guest left out of its
// node, as a move would see the cluster: every node's verdict, best first (feasible nodes by
// score and tie-break, then the infeasible ones in snapshot order). A pre-filter rejecting
// the request is the error.
func (c *Checker) Rank(r Request, vmid int) ([]Candidate, error) {
	if err := c.p.ValidateRequest(&r); err != nil {
		return nil, err
	}
	defer c.leaveOut(vmid)()
	ev, err := c.p.evaluate(&r, c.v.infos)
	if err != nil {
		return nil, err
	}
	ranked := append([]Candidate(nil), ev.cands...)
	sort.SliceStable(ranked, func(i, j int) bool {
		a, b := ranked[i], ranked[j]
		if a.Feasible != b.Feasible {
			return a.Feasible
		}
		return a.Feasible && better(r.Name, a, b)
	})
	return ranked, nil
}

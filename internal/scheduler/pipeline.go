package scheduler

import (
	"fmt"
	"hash/fnv"
)

// Options change how Schedule treats requests.
type Options struct {
	// Sticky keeps a request whose Name matches exactly one existing guest where that guest
	// is, as long as its node still passes the hard filters (the guest's own usage excluded).
	Sticky bool
}

// Schedule places every request, in order, on one snapshot. Each placement debits its node and
// takes its VMID before the next request is placed. It is all-or-nothing: any request that
// cannot be placed fails the whole call. The same snapshot and requests always give the same
// decision.
func (p *Profile) Schedule(snap Snapshot, reqs []Request, opts Options) (Decision, error) {
	for _, r := range reqs {
		if err := p.ValidateRequest(r); err != nil {
			return Decision{}, err
		}
	}
	infos, _ := buildNodeInfos(&snap, 0)
	used := usedIDs(&snap)
	d := Decision{Placements: make([]Placement, 0, len(reqs))}
	for _, r := range reqs {
		var (
			pl  Placement
			err error
		)
		if g := p.stickyGuest(&snap, r, opts); g != nil {
			pl, err = p.keep(&snap, r, g)
		} else {
			pl, err = p.place(&snap, infos, used, r)
		}
		if err != nil {
			return Decision{}, err
		}
		d.Placements = append(d.Placements, pl)
	}
	return d, nil
}

// stickyGuest returns the one existing guest carrying the request's name, if it may stay.
func (p *Profile) stickyGuest(snap *Snapshot, r Request, opts Options) *Guest {
	if !opts.Sticky || r.Name == "" {
		return nil
	}
	var found *Guest
	for i := range snap.Guests {
		g := &snap.Guests[i]
		if g.Name != r.Name || g.Template {
			continue
		}
		if found != nil {
			return nil // ambiguous: schedule as new
		}
		found = g
	}
	if found == nil || (r.VMID != 0 && r.VMID != found.VMID) {
		return nil
	}
	if len(p.CheckNode(*snap, r, found.Node, found.VMID)) > 0 {
		return nil
	}
	return found
}

func (p *Profile) keep(snap *Snapshot, r Request, g *Guest) (Placement, error) {
	node := findNode(snap, g.Node)
	storage, reason := chooseStorage(node, r.Storage)
	if reason != "" {
		return Placement{}, &InputError{Attribute: "storage", Message: fmt.Sprintf("existing guest %d on %s: %s", g.VMID, g.Node, reason)}
	}
	return Placement{
		Name: r.Name, Node: g.Node, VMID: g.VMID, Storage: storage, Existing: true,
		Summary: fmt.Sprintf("%s: existing guest %d kept on %s (still passes every filter), storage %s", r.Name, g.VMID, g.Node, storage),
	}, nil
}

func findNode(snap *Snapshot, name string) *Node {
	for i := range snap.Nodes {
		if snap.Nodes[i].Name == name {
			return &snap.Nodes[i]
		}
	}
	return nil
}

func (p *Profile) place(snap *Snapshot, infos []*NodeInfo, used IDSet, r Request) (Placement, error) {
	if len(infos) == 0 {
		return Placement{}, &UnschedulableError{Request: r.Name, Message: "0/0 nodes are available: the cluster reports no nodes"}
	}
	cands := make([]Candidate, len(infos))
	best := -1
	feasible := 0
	for i, ni := range infos {
		c := p.evaluate(r, ni)
		cands[i] = c
		if !c.Feasible {
			continue
		}
		feasible++
		if best < 0 || better(r.Name, c, cands[best]) {
			best = i
		}
	}
	if best < 0 {
		return Placement{}, &UnschedulableError{Request: r.Name, Message: unschedulableMessage(len(infos), p.groups(r, infos)), Candidates: cands}
	}
	chosen := infos[best]
	vmid, vmidRule, err := p.selectVMID(snap, r, used)
	if err != nil {
		return Placement{}, err
	}
	storage, _ := chooseStorage(chosen.Node, r.Storage)
	used.add(vmid)
	chosen.debit(float64(r.VCPUs()), uint64(r.MemoryMiB)*mib)
	return Placement{
		Name: r.Name, Node: chosen.Node.Name, VMID: vmid, Storage: storage, Candidates: cands,
		Summary: fmt.Sprintf("%s: %s (score %s; %d/%d nodes feasible), vmid %d (%s), storage %s",
			r.Name, chosen.Node.Name, FormatNumber(round2(cands[best].Score)), feasible, len(infos), vmid, vmidRule, storage),
	}, nil
}

// evaluate runs every filter (all of them, to report every reason), then, for a node that
// passes them, the storage check and the scores.
func (p *Profile) evaluate(r Request, ni *NodeInfo) Candidate {
	c := Candidate{Node: ni.Node.Name, Feasible: true}
	for _, f := range p.filters {
		if rej := f.Filter(r, ni); rej != nil {
			c.Feasible = false
			c.Reasons = append(c.Reasons, rej.Reason)
		}
	}
	if !c.Feasible {
		return c
	}
	if _, reason := chooseStorage(ni.Node, r.Storage); reason != "" {
		c.Feasible = false
		c.Reasons = append(c.Reasons, "Storage: "+reason)
		return c
	}
	c.Scores = make(map[string]float64, len(p.scores))
	for _, s := range p.scores {
		v := clamp(s.plugin.Score(r, ni))
		c.Scores[s.plugin.Name()] = round2(v)
		c.Score += s.weight * v
	}
	c.Score = round2(c.Score)
	return c
}

// groups counts nodes for the unschedulable message, each node under its first failing
// check (filters in registry order, then storage), so the counts add up to the node count.
func (p *Profile) groups(r Request, infos []*NodeInfo) map[string]int {
	counts := map[string]int{}
next:
	for _, ni := range infos {
		for _, f := range p.filters {
			if rej := f.Filter(r, ni); rej != nil {
				counts[rej.Group]++
				continue next
			}
		}
		if _, reason := chooseStorage(ni.Node, r.Storage); reason != "" {
			counts[storageGroup(r.Storage)]++
		}
	}
	return counts
}

// better reports whether a beats b: higher total score, then the tie-break hash of the seed
// and node name (so equal nodes spread across VM names), then the node name.
func better(seed string, a, b Candidate) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	ha, hb := tieHash(seed, a.Node), tieHash(seed, b.Node)
	if ha != hb {
		return ha > hb
	}
	return a.Node < b.Node
}

func tieHash(seed, node string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(seed))
	h.Write([]byte{0})
	h.Write([]byte(node))
	return h.Sum64()
}

func (p *Profile) selectVMID(snap *Snapshot, r Request, used IDSet) (int, string, error) {
	if r.VMID != 0 {
		if used.Has(r.VMID) {
			return 0, "", &InputError{Attribute: "vmid", Message: fmt.Sprintf("VMID %d is already in use; choose a free id or remove the pin", r.VMID)}
		}
		return r.VMID, "pinned", nil
	}
	for _, v := range p.vmids {
		value, ok := r.Annotations[v.Key()]
		if !ok {
			continue
		}
		id, err := v.SelectVMID(value, used)
		if err != nil {
			return 0, "", err
		}
		return id, v.Describe(value), nil
	}
	id, err := nextFreeID(snap.NextIDBounds, used)
	if err != nil {
		return 0, "", err
	}
	return id, "next free id", nil
}

// CheckNode runs the hard filters for an existing guest (vmid) on node, its own usage left
// out. It returns every reason the node now fails, or nil when it is fine.
func (p *Profile) CheckNode(snap Snapshot, r Request, node string, vmid int) []string {
	_, byName := buildNodeInfos(&snap, vmid)
	ni, ok := byName[node]
	if !ok {
		return []string{fmt.Sprintf("node %q is not part of the cluster", node)}
	}
	var reasons []string
	for _, f := range p.filters {
		if rej := f.Filter(r, ni); rej != nil {
			reasons = append(reasons, rej.Reason)
		}
	}
	return reasons
}

func clamp(v float64) float64 {
	switch {
	case v < 0:
		return 0
	case v > 100:
		return 100
	}
	return v
}

func round2(v float64) float64 {
	if v < 0 {
		return -round2(-v)
	}
	return float64(int64(v*100+0.5)) / 100
}

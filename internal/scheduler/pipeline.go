package scheduler

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
)

// Options change how Schedule treats requests.
type Options struct {
	// Sticky keeps a request whose Name matches exactly one existing guest where that guest
	// is, as long as its node is still feasible for the request: the hard filters pass (the
	// guest's own usage excluded, earlier placements of the call included) and the storage
	// can be served there. Otherwise the request is placed as a new VM.
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
	run := &run{p: p, snap: &snap, infos: infos, used: usedIDs(&snap), given: map[int]string{}, kept: map[int]bool{}}
	if opts.Sticky {
		run.named = guestsByName(&snap, reqs)
	}
	d := Decision{Placements: make([]Placement, 0, len(reqs))}
	for _, r := range reqs {
		pl, ok := run.keep(r)
		if !ok {
			var err error
			if pl, err = run.place(r); err != nil {
				return Decision{}, err
			}
		}
		d.Placements = append(d.Placements, pl)
	}
	return d, nil
}

// run is the state of one Schedule call: capacity and ids as earlier placements left them.
type run struct {
	p     *Profile
	snap  *Snapshot
	infos []*NodeInfo
	used  IDSet
	// given maps the ids handed out in this call to the request that took them.
	given map[int]string
	// debits are the new placements so far, replayed on views that leave a guest out.
	debits []debit
	// kept marks existing guests already returned, so that no guest is kept twice.
	kept map[int]bool
	// named finds the guest carrying a name (nil when several do); set with Options.Sticky.
	named map[string]*Guest
}

// guestsByName finds the guests carrying the requests' names, templates aside; a name several
// guests share maps to nil, as none of them can be told apart.
func guestsByName(snap *Snapshot, reqs []Request) map[string]*Guest {
	named := make(map[string]*Guest, len(reqs))
	found := make(map[string]bool, len(reqs))
	for _, r := range reqs {
		if r.Name != "" {
			named[r.Name] = nil
		}
	}
	for i := range snap.Guests {
		g := &snap.Guests[i]
		if _, wanted := named[g.Name]; !wanted || g.Template {
			continue
		}
		if found[g.Name] {
			named[g.Name] = nil
			continue
		}
		found[g.Name] = true
		named[g.Name] = g
	}
	return named
}

type debit struct {
	node  string
	vcpus float64
	mem   uint64
}

// keep returns the existing guest named like the request where it is, when Options.Sticky is
// set, exactly one guest (templates aside) has that name, a pinned vmid agrees, and its node
// is still feasible with the guest's own usage left out. Candidates are every node's verdict
// on that same view.
func (run *run) keep(r Request) (Placement, bool) {
	g := run.named[r.Name]
	if g == nil || run.kept[g.VMID] || (r.VMID != 0 && r.VMID != g.VMID) {
		return Placement{}, false
	}
	infos, byName := buildNodeInfos(run.snap, g.VMID)
	for _, d := range run.debits {
		byName[d.node].debit(d.vcpus, d.mem)
	}
	cands := make([]Candidate, len(infos))
	at := -1
	for i, ni := range infos {
		cands[i], _ = run.p.evaluate(r, ni)
		if ni.Node.Name == g.Node {
			at = i
		}
	}
	if at < 0 || !cands[at].Feasible {
		return Placement{}, false
	}
	run.kept[g.VMID] = true
	storage, _ := chooseStorage(infos[at].Node, r.Storage)
	return Placement{
		Name: r.Name, Node: g.Node, VMID: g.VMID, Storage: storage, Existing: true, Candidates: cands,
		Summary: fmt.Sprintf("%s: existing guest %d kept on %s (still passes every filter), storage %s", r.Name, g.VMID, g.Node, storage),
	}, true
}

func (run *run) place(r Request) (Placement, error) {
	if len(run.infos) == 0 {
		return Placement{}, &UnschedulableError{Request: r.Name, Message: "0/0 nodes are available: the cluster reports no nodes"}
	}
	cands := make([]Candidate, len(run.infos))
	groups := map[string]int{}
	best := -1
	feasible := 0
	for i, ni := range run.infos {
		c, group := run.p.evaluate(r, ni)
		cands[i] = c
		if !c.Feasible {
			groups[group]++
			continue
		}
		feasible++
		if best < 0 || better(r.Name, c, cands[best]) {
			best = i
		}
	}
	if best < 0 {
		return Placement{}, &UnschedulableError{Request: r.Name, Message: unschedulableMessage(len(run.infos), groups), Candidates: cands}
	}
	chosen := run.infos[best]
	vmid, vmidRule, err := run.selectVMID(r)
	if err != nil {
		return Placement{}, err
	}
	storage, _ := chooseStorage(chosen.Node, r.Storage)
	run.used.add(vmid)
	run.given[vmid] = r.Name
	d := debit{node: chosen.Node.Name, vcpus: float64(r.VCPUs()), mem: uint64(r.MemoryMiB) * mib}
	chosen.debit(d.vcpus, d.mem)
	run.debits = append(run.debits, d)
	return Placement{
		Name: r.Name, Node: chosen.Node.Name, VMID: vmid, Storage: storage, Candidates: cands,
		Summary: fmt.Sprintf("%s: %s (score %s; %d/%d nodes feasible), vmid %d (%s), storage %s",
			r.Name, chosen.Node.Name, FormatNumber(cands[best].Score), feasible, len(run.infos), vmid, vmidRule, storage),
	}, nil
}

// evaluate runs every filter (all of them, to report every reason), then, for a node that
// passes them, the storage check and the scores. For an infeasible node it also returns the
// phrase its first failure is counted under in an unschedulable message, so that the counts
// add up to the number of nodes.
func (p *Profile) evaluate(r Request, ni *NodeInfo) (Candidate, string) {
	c := Candidate{Node: ni.Node.Name, Feasible: true}
	var group string
	for _, f := range p.filters {
		if rej := f.Filter(r, ni); rej != nil {
			if c.Feasible {
				group = rej.Group
			}
			c.Feasible = false
			c.Reasons = append(c.Reasons, rej.Reason)
		}
	}
	if !c.Feasible {
		return c, group
	}
	if _, reason := chooseStorage(ni.Node, r.Storage); reason != "" {
		c.Feasible = false
		c.Reasons = append(c.Reasons, "Storage: "+reason)
		return c, storageGroup(r.Storage)
	}
	c.Scores = make(map[string]float64, len(p.scores))
	for _, s := range p.scores {
		v := clamp(s.plugin.Score(r, ni))
		c.Scores[s.plugin.Name()] = round2(v)
		c.Score += s.weight * v
	}
	c.Score = round2(c.Score)
	return c, ""
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

// selectVMID applies the precedence: pinned vmid, then the first enabled vmid plugin whose
// annotation is set (Range before Regex), then the next free id in the datacenter bounds.
func (run *run) selectVMID(r Request) (int, string, error) {
	if r.VMID != 0 {
		if other, ok := run.given[r.VMID]; ok {
			return 0, "", &InputError{Attribute: "vmid", Message: fmt.Sprintf("VMID %d is pinned for %q but was already given to %q in the same decision; a pinned vmid can place one VM only", r.VMID, r.Name, other)}
		}
		if run.used.Has(r.VMID) {
			return 0, "", &InputError{Attribute: "vmid", Message: fmt.Sprintf("VMID %d is already in use; choose a free id or remove the pin", r.VMID)}
		}
		return r.VMID, "pinned", nil
	}
	id, rule, err := run.ruleVMID(r)
	var ue *UnschedulableError
	if errors.As(err, &ue) && ue.Request == "" {
		ue.Request = r.Name
	}
	return id, rule, err
}

func (run *run) ruleVMID(r Request) (int, string, error) {
	for _, v := range run.p.vmids {
		value, ok := r.Annotations[v.Key()]
		if !ok {
			continue
		}
		id, err := v.SelectVMID(value, run.used)
		if err != nil {
			return 0, "", err
		}
		return id, v.Describe(value), nil
	}
	id, err := nextFreeID(run.snap.NextIDBounds, run.used)
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

// round2 keeps two decimals: scores that agree to the hundredth are a tie, broken by the hash
// rather than by floating-point noise.
func round2(v float64) float64 { return math.Round(v*100) / 100 }

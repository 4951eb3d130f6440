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
	// can be served there. Otherwise the request is placed anew, keeping the guest's VMID.
	Sticky bool
}

// Schedule places every request, in order, on one snapshot. Each placement debits its node and
// takes its VMID before the next request is placed. It is all-or-nothing: any request that
// cannot be placed fails the whole call. The same snapshot and requests always give the same
// decision.
func (p *Profile) Schedule(snap Snapshot, reqs []Request, opts Options) (Decision, error) {
	for i := range reqs {
		if err := p.ValidateRequest(&reqs[i]); err != nil {
			return Decision{}, err
		}
	}
	run := p.newRun(&snap, reqs, opts)
	d := Decision{Placements: make([]Placement, 0, len(reqs))}
	for i := range reqs {
		r := &reqs[i]
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
	view  *view
	infos []*NodeInfo
	used  IDSet
	// pinned is what an id chosen by rule must avoid when the call's requests pin ids: used
	// and those ids, so that an earlier request does not take the id a later one pins (nil
	// when none pins one: used).
	pinned *IDSet
	// given maps the ids handed out in this call to the request that took them.
	given map[int]string
	// kept marks existing guests already returned, so that no guest is kept twice.
	kept map[int]bool
	// named finds the guest carrying a name (nil when several do); set with Options.Sticky.
	named map[string]*Guest
}

// newRun starts a decision on snap, which the run's view points into.
func (p *Profile) newRun(snap *Snapshot, reqs []Request, opts Options) *run {
	v := newView(snap)
	run := &run{p: p, snap: snap, view: v, infos: v.infos, used: usedIDs(snap), given: map[int]string{}, kept: map[int]bool{}}
	for _, r := range reqs {
		if r.VMID == 0 {
			continue
		}
		if run.pinned == nil {
			c := run.used.clone()
			run.pinned = &c
		}
		run.pinned.add(r.VMID)
	}
	if opts.Sticky {
		run.named = guestsByName(snap, reqs)
	}
	return run
}

// guestsByName finds the guests carrying the requests' names, templates aside; a name several
// guests share maps to nil, as none of them can be told apart.
func guestsByName(snap *Snapshot, reqs []Request) map[string]*Guest {
	named := make(map[string]*Guest, len(reqs))
	found := make(map[string]bool, len(reqs))
	// The lengths of the names sought (63 for any longer): a guest whose name has none of
	// them is passed over without hashing its name, once per guest of every decision.
	var lengths uint64
	for _, r := range reqs {
		if r.Name != "" {
			named[r.Name] = nil
			lengths |= 1 << min(len(r.Name), 63)
		}
	}
	for i := range snap.Guests {
		g := &snap.Guests[i]
		if lengths&(1<<min(len(g.Name), 63)) == 0 {
			continue
		}
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

// keep returns the existing guest named like the request where it is, when Options.Sticky is
// set, exactly one guest (templates aside) has that name, a pinned vmid agrees, and its node
// is still feasible with the guest's own usage left out. Candidates are every node's verdict
// on that same view.
func (run *run) keep(r *Request) (Placement, bool) {
	g := run.named[r.Name]
	if g == nil || run.kept[g.VMID] || (r.VMID != 0 && r.VMID != g.VMID) {
		return Placement{}, false
	}
	defer run.view.without(g)()
	infos := run.infos
	ev, err := run.p.evaluate(existing(r), infos)
	if err != nil {
		return Placement{}, false
	}
	at := -1
	for i, ni := range infos {
		if ni.Node.Name == g.Node {
			at = i
		}
	}
	if at < 0 || !ev.cands[at].Feasible {
		return Placement{}, false
	}
	run.kept[g.VMID] = true
	// Its disks are where they are: a storage they fill already is no reason to answer another.
	storage, _, _ := ChooseStorage(infos[at], existing(r))
	return Placement{
		Name: r.Name, Node: g.Node, VMID: g.VMID, Storage: storage, Existing: true, Candidates: ev.cands,
		Summary: fmt.Sprintf("%s: existing guest %d kept on %s (still passes every filter), storage %s", r.Name, g.VMID, g.Node, storage),
	}, true
}

// moving returns the existing guest named like the request that keep did not keep where it
// is (its node no longer passes): the request places that guest on another node, so it keeps
// its VMID. A resource fed with the node and VMID then migrates the VM (the VMID survives a
// migration) instead of destroying it and creating another under a new id.
func (run *run) moving(r *Request) *Guest {
	g := run.named[r.Name]
	if g == nil || run.kept[g.VMID] || (r.VMID != 0 && r.VMID != g.VMID) {
		return nil
	}
	if _, taken := run.given[g.VMID]; taken {
		return nil
	}
	return g
}

func (run *run) place(r *Request) (Placement, error) {
	if len(run.infos) == 0 {
		return Placement{}, &UnschedulableError{Request: r.Name, Message: "0/0 nodes are available: the cluster reports no nodes"}
	}
	ev, err := run.p.evaluate(r, run.infos)
	if err != nil {
		return Placement{}, err
	}
	if ev.best < 0 {
		return Placement{}, &UnschedulableError{Request: r.Name, Message: unschedulableMessage(len(run.infos), ev.groups), Candidates: ev.cands}
	}
	chosen := run.infos[ev.best]
	vmid, vmidRule, err := run.selectVMID(r)
	if err != nil {
		return Placement{}, err
	}
	storage, _, _ := ChooseStorage(chosen, r)
	run.take(vmid, r.Name)
	chosen.add(newGuest(r, chosen.Node.Name, vmid, storage))
	return Placement{
		Name: r.Name, Node: chosen.Node.Name, VMID: vmid, Storage: storage, Candidates: ev.cands,
		Summary: fmt.Sprintf("%s: %s (score %s; %d/%d nodes feasible), vmid %d (%s), storage %s",
			r.Name, chosen.Node.Name, FormatNumber(ev.cands[ev.best].Score), ev.feasible, len(run.infos), vmid, vmidRule, storage),
	}, nil
}

// evaluation is one request's verdict over a view of the nodes.
type evaluation struct {
	// cands holds every node's verdict, in view order.
	cands []Candidate
	// groups counts infeasible nodes under the phrase of their first failure, so that the
	// counts of an unschedulable message add up to the number of nodes.
	groups   map[string]int
	feasible int
	// best is the index of the winning node, -1 when none is feasible.
	best int
}

// evaluate runs the whole pipeline for one request on a view: the pre-filters, every filter
// on every node (all of them, to report every reason), the storage check, then the scores of
// the feasible nodes and the choice. An error is a pre-filter rejecting the request outright.
func (p *Profile) evaluate(r *Request, infos []*NodeInfo) (evaluation, error) {
	state := NewCycleStateOver(infos)
	if err := p.preFilter(state, r, infos); err != nil {
		return evaluation{}, err
	}
	ev := evaluation{cands: make([]Candidate, len(infos)), groups: map[string]int{}, best: -1}
	feasible := make([]*NodeInfo, 0, len(infos))
	at := make([]int, 0, len(infos))
	for i, ni := range infos {
		c := Candidate{Node: ni.Node.Name, Feasible: true}
		var group string
		c.Reasons, group = p.filter(state, r, ni)
		if len(c.Reasons) == 0 {
			if _, _, reason := ChooseStorage(ni, r); reason != "" {
				c.Reasons, group = []string{"Storage: " + reason}, storageGroup(r.Storage)
			}
		}
		if len(c.Reasons) > 0 {
			c.Feasible = false
			ev.groups[group]++
		} else {
			feasible = append(feasible, ni)
			at = append(at, i)
		}
		ev.cands[i] = c
	}
	ev.feasible = len(feasible)
	p.score(state, r, feasible, at, ev.cands)
	for _, i := range at {
		if ev.best < 0 || better(r.Name, ev.cands[i], ev.cands[ev.best]) {
			ev.best = i
		}
	}
	return ev, nil
}

// preFilter runs every pre-filter once for the request, over all nodes of the view.
func (p *Profile) preFilter(state *CycleState, r *Request, infos []*NodeInfo) error {
	for _, f := range p.of(r).filters {
		if pf, ok := f.(PreFilterPlugin); ok {
			if err := pf.PreFilter(state, r, infos); err != nil {
				var ue *UnschedulableError
				if errors.As(err, &ue) && ue.Request == "" {
					ue.Request = r.Name
				}
				return err
			}
		}
	}
	return nil
}

// filter runs every filter on one node and returns every reason it fails, with the group
// phrase of the first failure. It is the only place filters run.
func (p *Profile) filter(state *CycleState, r *Request, ni *NodeInfo) ([]string, string) {
	var reasons []string
	var group string
	for _, f := range p.of(r).filters {
		if rej := f.Filter(state, r, ni); rej != nil {
			if reasons == nil {
				group = rej.Group
			}
			reasons = append(reasons, rej.Reason)
		}
	}
	return reasons, group
}

// score runs every score plugin over the feasible nodes (at indexes cands): pre-score,
// score, normalise, clamp to 0..100, weight and sum.
func (p *Profile) score(state *CycleState, r *Request, feasible []*NodeInfo, at []int, cands []Candidate) {
	if len(feasible) == 0 {
		return
	}
	p = p.of(r)
	for _, i := range at {
		cands[i].Scores = make(map[string]float64, len(p.scores))
	}
	scores := make([]NodeScore, len(feasible))
	for _, s := range p.scores {
		if ps, ok := s.plugin.(PreScorePlugin); ok {
			ps.PreScore(state, r, feasible)
		}
		for j, ni := range feasible {
			scores[j] = NodeScore{Node: ni.Node.Name, Score: s.plugin.Score(state, r, ni)}
		}
		if n, ok := s.plugin.(ScoreNormalizer); ok {
			n.NormalizeScores(state, r, scores)
		}
		for j, i := range at {
			v := clamp(scores[j].Score)
			cands[i].Scores[s.plugin.Name()] = round2(v)
			cands[i].Score += s.weight * v
		}
	}
	for _, i := range at {
		cands[i].Score = round2(cands[i].Score)
	}
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

// take hands vmid out to the request named.
func (run *run) take(vmid int, name string) {
	run.used.add(vmid)
	if run.pinned != nil {
		run.pinned.add(vmid)
	}
	run.given[vmid] = name
}

// free is the set an id chosen by rule must avoid.
func (run *run) free() IDSet {
	if run.pinned != nil {
		return *run.pinned
	}
	return run.used
}

// selectVMID applies the precedence: the existing guest's own id when the request moves it,
// then a pinned vmid, then the first enabled vmid plugin whose annotation is set (Range before
// Regex), then the next free id in the datacenter bounds.
func (run *run) selectVMID(r *Request) (int, string, error) {
	if g := run.moving(r); g != nil {
		return g.VMID, "the existing guest's, which leaves " + g.Node, nil
	}
	if r.VMID != 0 {
		if other, ok := run.given[r.VMID]; ok {
			return 0, "", &InputError{Attribute: "vmid", Message: fmt.Sprintf("VMID %d is pinned for %q but was already given to %q in the same decision; a pinned vmid can place one VM only", r.VMID, r.Name, other)}
		}
		if run.used.Has(r.VMID) {
			return 0, "", &InputError{Attribute: "vmid", Message: fmt.Sprintf("VMID %d is already in use; choose a free id or remove the pin", r.VMID), Cluster: true}
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

func (run *run) ruleVMID(r *Request) (int, string, error) {
	for _, v := range run.p.of(r).vmids {
		value, ok := r.Annotations[v.Key()]
		if !ok {
			continue
		}
		id, err := v.SelectVMID(value, run.free())
		if err != nil {
			return 0, "", err
		}
		return id, v.Describe(value), nil
	}
	id, err := nextFreeID(run.snap.NextIDBounds, run.free())
	if err != nil {
		return 0, "", err
	}
	return id, "next free id", nil
}

// CheckNode runs the hard filters for an existing guest (vmid) on node, its own usage left
// out. It returns every reason the node now fails, or nil when it is fine.
func (p *Profile) CheckNode(snap Snapshot, r Request, node string, vmid int) []string {
	return p.NewChecker(&snap).Check(r, node, vmid)
}

// existing is the request as an existing guest checked in place makes it: its disks are
// already on their storage, so it needs no new space.
func existing(r *Request) *Request {
	if r.DiskBytes == 0 {
		return r
	}
	c := *r
	c.DiskBytes = 0
	return &c
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

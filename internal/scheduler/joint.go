package scheduler

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Sizes up to which the joint search is complete: for a set of at most exactVMs new VMs on at
// most exactNodes nodes, ScheduleSet finds a placement whenever one passes the hard filters.
const (
	exactVMs   = 12
	exactNodes = 8
)

// Work budgets of the joint search, in units of about a microsecond: one node checked by
// every filter is one unit, a pre-filter pass one unit per node and per 64 guests. The
// budget of the complete sizes is a safety net only (no case of the tests comes near it);
// beyond them the exact search's restarts spend part of it, bin completion (bins) a part and
// the large-neighbourhood search (lns) the rest. Budgets count work, not time, so the same
// inputs always give the same decision.
const (
	exactBudget  = 5_000_000
	searchBudget = 1_000_000
	// restartUnit is the budget of the shortest restart beyond the complete sizes.
	restartUnit = 40_000
	// growBudget bounds the search for the largest subset that fits, which only words
	// the error.
	growBudget = 30_000
)

// ScheduleSet places every request of a set jointly: all or nothing, and whether it succeeds
// does not depend on the order of reqs. It first places the requests greedily in order, as
// Schedule does, so that scores decide as they always did. When a request does not fit, the
// whole set is placed again jointly: the existing guests Options.Sticky keeps stay where they
// are, and the new VMs are searched for together (largest first, then a branch and bound over
// the nodes the hard filters allow, then bin completion and a large-neighbourhood search beyond
// its bounds). A joint placement holds with the whole set in place, in no particular order:
// every new VM passes every hard filter beside all the others (as CheckNode checks an
// existing guest), which is what a set created in any order needs. For sets of up to 12 new VMs on up to 8 nodes the
// search is complete. VMIDs are chosen after the nodes, in request order, with the same rules
// as Schedule. The same inputs always give the same decision; placements are in request
// order.
//
// When the set cannot be placed, the error is a *SetError naming the request that does not
// fit beside the largest subset the search placed, with every node's verdict.
func (p *Profile) ScheduleSet(snap Snapshot, reqs []Request, opts Options) (Decision, error) {
	d, err := p.Schedule(snap, reqs, opts)
	var ue *UnschedulableError
	if err == nil || len(reqs) == 1 || !errors.As(err, &ue) || len(ue.Candidates) == 0 {
		// Placed, or refused for a reason no arrangement of nodes changes: a single VM, a bad
		// input, a pre-filter, no free VMID.
		return d, err
	}
	return p.scheduleJointly(snap, reqs, opts)
}

// alone turns the SetError err into the request's own refusal when the request it names
// fits on no node even without the set's other new VMs (a label no node has, a VM larger
// than any node): the set is not what stops it, and "only N of the set" would send the user
// looking for room. The request is tried alone without the terms the set's VMs may satisfy
// (a required vm_affinity, a DoNotSchedule spread and its min_domains: probeOf), so a VM
// those stop keeps the set's error.
func (p *Profile) alone(snap Snapshot, reqs []Request, opts Options, err error) error {
	var se *SetError
	if !errors.As(err, &se) {
		return err
	}
	i := slices.IndexFunc(reqs, func(r Request) bool { return r.Name == se.Request })
	if i < 0 {
		return err
	}
	probe := probeOf(&reqs[i])
	_, aloneErr := p.Schedule(snap, []Request{*probe}, opts)
	var ue *UnschedulableError
	if !errors.As(aloneErr, &ue) {
		return err
	}
	if probe != &reqs[i] {
		// The refusal of the whole request, as the user wrote it.
		_, whole := p.Schedule(snap, reqs[i:i+1], opts)
		errors.As(whole, &ue)
	}
	copied := *ue
	copied.Message += "\n" + aloneLine
	return &SetError{UnschedulableError: &copied, Placed: se.Placed, Total: se.Total, Unplaced: se.Unplaced, Alone: true}
}

// aloneLine is the line an Alone SetError adds.
const aloneLine = "it fits on no node even without the plan's other new VMs: change its placement attributes (or the nodes), not the size of the set"

// SetError says that a set of new VMs cannot be placed together, or that the search gave up
// before it could place or refuse the whole set (GaveUp). The embedded UnschedulableError is
// the request that does not fit, evaluated beside the largest subset the search placed
// (Message and Candidates as Schedule gives them); its Message ends with the line on the
// set, so callers that only know UnschedulableError show it too.
type SetError struct {
	*UnschedulableError
	// Placed is how many of the set's new VMs the search could place together (the largest
	// number it found), Total how many new VMs the set has: existing guests kept in place are
	// not counted.
	Placed int
	Total  int
	// Unplaced names the new VMs left out of that largest subset, in request order.
	Unplaced []string
	// Alone says that the request fits on no node even without the set's other new VMs:
	// its message is its own refusal, without the line on the set.
	Alone bool
	// GaveUp says that the search ran out of its budget without proving that the whole set
	// cannot be placed: the set may still fit. Maximal says that it proved Placed the most
	// that fit together (only then does the line say "only Placed of Total").
	GaveUp, Maximal bool
	// Cause names a smallest cause of a proven refusal, when the search found one ("" none):
	// a VM and the anti-affinity group no other VM of the set changes, or the fewest VMs of
	// the set that cannot be placed together and the rule or capacity that keeps them apart.
	Cause string
}

func (e *SetError) Unwrap() error { return e.UnschedulableError }

// listedNames bounds the names a SetError's line lists; Unplaced has them all.
const listedNames = 10

// setLine is the line a SetError adds to the message of the request that does not fit: what
// the search proved, and no more.
func setLine(e *SetError, antiAffinity bool) string {
	names := listed(e.Unplaced)
	if e.GaveUp {
		return fmt.Sprintf("the joint search gave up after its budget, having placed %d of the plan's %d new VMs together (left out: %s); "+
			"the set may still fit: split the change into two applies (first apply with -target naming the VMs to place first, "+
			"or with a smaller count, then apply the rest), which places the rest beside the VMs created", e.Placed, e.Total, names)
	}
	line := fmt.Sprintf("only %d of the plan's %d new VMs can be placed together; cannot place: %s", e.Placed, e.Total, names)
	if !e.Maximal {
		line = fmt.Sprintf("the plan's %d new VMs cannot all be placed together; the most the search placed together is %d (left out: %s)", e.Total, e.Placed, names)
	}
	if antiAffinity {
		line += " (required vm_anti_affinity keeps one VM of a group per domain; topology_spread with max_skew = 1 lets replicas share domains, spread evenly)"
	}
	return line
}

// scheduleJointly is ScheduleSet's joint pass: keeps first, then VMIDs in request order, then
// the search for the nodes of the new VMs, then each placement explained beside the others.
func (p *Profile) scheduleJointly(snap Snapshot, reqs []Request, opts Options) (Decision, error) {
	run := p.newRun(&snap, reqs, opts)
	placements := make([]Placement, len(reqs))
	var fresh []int
	for i := range reqs {
		if pl, ok := run.keep(&reqs[i]); ok {
			placements[i] = pl
			continue
		}
		fresh = append(fresh, i)
	}
	vmids := make(map[int]int, len(fresh))
	rules := make(map[int]string, len(fresh))
	for _, i := range fresh {
		id, rule, err := run.selectVMID(&reqs[i])
		if err != nil {
			return Decision{}, err
		}
		run.take(id, reqs[i].Name)
		vmids[i], rules[i] = id, rule
	}
	s := newSearch(p, run.infos, &snap, reqs, fresh, vmids)
	if !s.solve() {
		if err := s.failure(run); err != nil {
			return Decision{}, p.alone(snap, reqs, opts, err)
		}
	}
	// Each placement is explained as it holds: beside the whole set, itself left out.
	for _, st := range s.stack {
		i := st.req
		r := &reqs[i]
		chosen := run.infos[st.node]
		restore := s.leaveOut(st)
		ev, err := p.evaluate(r, run.infos)
		restore()
		if err != nil {
			return Decision{}, err
		}
		placements[i] = Placement{
			Name: r.Name, Node: chosen.Node.Name, VMID: vmids[i], Storage: st.guest.Storage, Candidates: ev.cands,
			Summary: fmt.Sprintf("%s: %s (score %s; %d/%d nodes feasible beside the set's other %d new VMs, placed jointly), vmid %d (%s), storage %s",
				r.Name, chosen.Node.Name, FormatNumber(ev.cands[st.node].Score), ev.feasible, len(run.infos), len(fresh)-1, vmids[i], rules[i], st.guest.Storage),
		}
	}
	return Decision{Placements: placements}, nil
}

// newGuest is a placed request as the assumed guest later decisions see.
func newGuest(r *Request, node string, vmid int, storage string) *Guest {
	return &Guest{VMID: vmid, Node: node, Name: r.Name, Type: GuestQEMU, Status: "running",
		CPUs: float64(r.VCPUs()), MaxMem: uint64(r.MemoryMiB) * MiB, Tags: r.Tags, Assumed: true, DiskBytes: r.DiskBytes, Storage: storage,
		Recorded: antiAffinityRecord(r.VMAntiAffinity)}
}

// vmClass is a group of requests that differ in nothing but their names: any of them may
// take any other's node, so the search places "the next one of the class", never a
// particular one, and counts states by how many of each class sit on each node.
type vmClass struct {
	// reqs are the members' request indexes, in request order.
	reqs []int
	rep  *Request
	// probe is what the search checks nodes with while it builds a branch: the request
	// without the terms whose verdict a later placement can turn to a pass (a required
	// vm_affinity, a DoNotSchedule spread). Those are checked on the whole placement.
	probe *Request
	// groups are the tag sets of the terms the probe leaves out; carrier is true when the
	// class carries the tags of some class's left-out term, so that placing it can change
	// that term's verdict.
	groups  []TagSelector
	carrier bool
	// keys are the topology keys of those terms, in the order of groups.
	keys []string
	// left is how many members are not placed on the current branch.
	left int
}

// step is one placement on the search's branch.
type step struct {
	class, req, node int
	guest            *Guest
}

// search is the joint search over one view. Placements debit the view's nodes as assumed
// guests, exactly as Schedule's do, and are taken back in reverse order.
type search struct {
	p       *Profile
	infos   []*NodeInfo
	reqs    []Request
	vmids   map[int]int
	classes []*vmClass
	total   int
	// nodeGroup is each node's symmetry group: nodes of one group are alike in everything
	// the filters look at but their names, so a state is the same with their loads swapped.
	nodeGroup []int
	// alike lists the nodes of each group, the groups by their first node.
	alike [][]int
	// count[n][c] is how many members of class c the branch placed on node n.
	count [][]int
	stack []step
	// dead holds the states (canonical keys) from which no completion exists.
	dead map[string]struct{}
	// loose is true when some class's probe leaves terms out: a full branch must then pass
	// the whole check before it counts.
	loose bool
	// prefilterCost is the work of one class's pre-filters, on top of one unit per node
	// checked; work and budget count it.
	prefilterCost, work, budget int
	// deepest is the longest branch the search built (where the large-neighbourhood search starts); best is the
	// largest subset found that passes the whole check (what the error counts).
	deepest   []step
	best      int
	bestSteps []step
	// proven is true when the exact search showed that the whole set cannot be placed;
	// growCut when the search for the largest subset ran out of its budget.
	proven, growCut bool
	// open is the first class that may still be placed: the largest-subset search leaves
	// the rest of the classes before it out.
	open int
	// inter[a][b] says that placing a VM of class b can change class a's verdict beyond the
	// node it lands on (interactions).
	inter [][]bool
	// complete is true for the sizes the search is complete for: one search, no restart.
	complete bool
	// restart counts the search's restarts, which blur the fits of nodes (order).
	restart int
	// caps are the capacity filters every class runs (bounded).
	caps []CapacityPlugin
	// narrow is true while a restart tries only the nodes the whole request passes for the
	// classes whose probes leave terms out; narrowDead holds the states such restarts found
	// dead.
	narrow     bool
	narrowDead map[string]struct{}
}

func newSearch(p *Profile, infos []*NodeInfo, snap *Snapshot, reqs []Request, fresh []int, vmids map[int]int) *search {
	s := &search{p: p, infos: infos, reqs: reqs, vmids: vmids, total: len(fresh), dead: map[string]struct{}{}, narrowDead: map[string]struct{}{},
		prefilterCost: 1 + len(infos)/8 + len(snap.Guests)/64}
	byKey := map[string]*vmClass{}
	for _, i := range fresh {
		r := &reqs[i]
		k := fmt.Sprintf("%p %s", p.of(r), classKey(r))
		c := byKey[k]
		if c == nil {
			c = &vmClass{rep: r, probe: probeOf(r)}
			c.groups, c.keys = looseGroups(r)
			s.loose = s.loose || c.probe != r
			byKey[k] = c
			s.classes = append(s.classes, c)
		}
		c.reqs = append(c.reqs, i)
		c.left++
	}
	for _, c := range s.classes {
		for _, other := range s.classes {
			for _, g := range other.groups {
				c.carrier = c.carrier || g.Selects(c.rep.Tags)
			}
		}
	}
	// The carriers of left-out terms first, so that those terms settle early; then largest
	// first: memory, then vCPUs, then disks; names make the order total.
	sort.SliceStable(s.classes, func(a, b int) bool {
		x, y := s.classes[a].rep, s.classes[b].rep
		switch {
		case s.classes[a].carrier != s.classes[b].carrier:
			return s.classes[a].carrier
		case x.MemoryMiB != y.MemoryMiB:
			return x.MemoryMiB > y.MemoryMiB
		case x.VCPUs() != y.VCPUs():
			return x.VCPUs() > y.VCPUs()
		case x.DiskBytes != y.DiskBytes:
			return x.DiskBytes > y.DiskBytes
		}
		return x.Name < y.Name
	})
	s.count = make([][]int, len(infos))
	for n := range s.count {
		s.count[n] = make([]int, len(s.classes))
	}
	s.budget = searchBudget
	if len(fresh) <= exactVMs && len(infos) <= exactNodes {
		s.budget, s.complete = exactBudget, true
	}
	s.nodeGroup = s.symmetry()
	at := map[int]int{}
	for n, g := range s.nodeGroup {
		if _, ok := at[g]; !ok {
			at[g] = len(s.alike)
			s.alike = append(s.alike, nil)
		}
		s.alike[at[g]] = append(s.alike[at[g]], n)
	}
	s.inter = s.interactions()
	s.caps = s.capacities()
	return s
}

// probeOf is the request as the search checks it while building a branch: the filters must
// only lose nodes as VMs are placed, so that a class without a feasible node ends the branch
// and the classes may be placed in any order. A required vm_affinity gains the nodes its
// group moves to, and a DoNotSchedule spread the domains whose neighbours fill up: the probe
// leaves them out (they are checked on the whole placement). The request itself when it has
// neither.
func probeOf(r *Request) *Request {
	loose := slices.ContainsFunc(r.VMAffinity, func(t VMGroupTerm) bool { return t.Weight == 0 }) ||
		slices.ContainsFunc(r.TopologySpread, func(c SpreadConstraint) bool { return c.WhenUnsatisfiable == "DoNotSchedule" })
	if !loose {
		return r
	}
	c := *r
	c.VMAffinity = slices.DeleteFunc(slices.Clone(r.VMAffinity), func(t VMGroupTerm) bool { return t.Weight == 0 })
	c.TopologySpread = slices.DeleteFunc(slices.Clone(r.TopologySpread), func(c SpreadConstraint) bool { return c.WhenUnsatisfiable == "DoNotSchedule" })
	return &c
}

// looseGroups lists the groups of the terms probeOf leaves out, and their topology keys.
func looseGroups(r *Request) (groups []TagSelector, keys []string) {
	for _, t := range r.VMAffinity {
		if t.Weight == 0 {
			groups, keys = append(groups, t.Group()), append(keys, t.TopologyKey)
		}
	}
	for _, c := range r.TopologySpread {
		if c.WhenUnsatisfiable == "DoNotSchedule" {
			groups, keys = append(groups, c.Group()), append(keys, c.TopologyKey)
		}
	}
	return groups, keys
}

// settled reports whether no VM left to place is in the group of any left-out term of class
// c: the groups those terms count are final, so the whole request's verdict on a
// placed member can only get worse (its other filters only lose nodes).
func (s *search) settled(c *vmClass) bool {
	for _, g := range c.groups {
		for _, other := range s.classes[s.open:] {
			if other.left > 0 && g.Selects(other.rep.Tags) {
				return false
			}
		}
	}
	return true
}

// probe is what class c is checked with now: its probe, or the whole request once its
// left-out terms are settled.
func (s *search) probe(c *vmClass) *Request {
	if c.probe != c.rep && s.settled(c) {
		return c.rep
	}
	return c.probe
}

// settledHold checks the placed members of the classes whose left-out terms the last
// placement settled, as holds checks a full branch: one that fails already fails every
// completion. Members placed after their terms settled were checked with the whole request,
// and what later placements do to them the full branch's check sees. Only the members in the
// last placement's domain under one of their left-out terms' keys are checked: a group member
// placed elsewhere adds to another domain's count, which lifts a spread's minimum or gives an
// affinity a domain, never a refusal of theirs (the check only prunes: what it leaves out,
// the full branch's check still sees).
func (s *search) settledHold() bool {
	if len(s.stack) == 0 {
		return true
	}
	last := s.stack[len(s.stack)-1]
	tags := s.classes[last.class].rep.Tags
	for _, st := range s.stack[:len(s.stack)-1] {
		c := s.classes[st.class]
		if c.probe != c.rep && slices.ContainsFunc(c.groups, func(g TagSelector) bool { return g.Selects(tags) }) &&
			s.settled(c) && s.sharesDomain(c, st.node, last.node) && !s.stepHolds(st) {
			return false
		}
	}
	return true
}

// sharesDomain reports whether nodes a and b are in one domain under the key of one of class
// c's left-out terms.
func (s *search) sharesDomain(c *vmClass, a, b int) bool {
	for _, key := range c.keys {
		da, okA := domainOfKey(s.infos[a].Node, key)
		db, okB := domainOfKey(s.infos[b].Node, key)
		if okA && okB && da == db {
			return true
		}
	}
	return false
}

// classKey is the request without its name.
func classKey(r *Request) string {
	c := *r
	c.Name = ""
	return fmt.Sprintf("%#v", c)
}

// symmetry groups the nodes that the search may treat as one: the same figures, storages,
// labels (a label holding the node's own name, like the built-in name label, counts as the
// same), taints and guests (by everything but their ids and names), and the same verdict of
// every filter for every class of the set, which covers filters that read the name (pins,
// regexes). Each node's group is the index of the group's first node.
func (s *search) symmetry() []int {
	groups := make([]int, len(s.infos))
	verdicts := s.filterVerdicts()
	// The guests are compared only between nodes alike in everything else: most clusters have
	// none, and listing 10,000 guests costs more than the search.
	alike := map[string][]int{}
	var order []string
	for n, ni := range s.infos {
		k := nodeKey(ni) + "|" + verdicts[n]
		if alike[k] == nil {
			order = append(order, k)
		}
		alike[k] = append(alike[k], n)
	}
	for _, k := range order {
		first := map[string]int{}
		for _, n := range alike[k] {
			g := ""
			if len(alike[k]) > 1 {
				g = guestsKey(s.infos[n])
			}
			if at, ok := first[g]; ok {
				groups[n] = at
				continue
			}
			first[g] = n
			groups[n] = n
		}
	}
	return groups
}

// filterVerdicts lists per node which filters reject each class as the search starts.
func (s *search) filterVerdicts() []string {
	out := make([]strings.Builder, len(s.infos))
	for _, c := range s.classes {
		state := NewCycleState()
		state.nodes = s.infos
		err := s.p.preFilter(state, c.rep, s.infos)
		for n, ni := range s.infos {
			b := &out[n]
			if err != nil {
				b.WriteString("E")
				continue
			}
			for _, f := range s.p.of(c.rep).filters {
				if f.Filter(state, c.rep, ni) != nil {
					b.WriteByte('x')
				} else {
					b.WriteByte('.')
				}
			}
			if _, _, reason := ChooseStorage(ni, c.rep); reason != "" {
				b.WriteByte('s')
			}
			b.WriteByte('/')
		}
	}
	keys := make([]string, len(out))
	for n := range out {
		keys[n] = out[n].String()
	}
	return keys
}

// nodeKey is everything about a node the filters may read but its name and its guests' tags
// and sizes, which guestsKey adds.
func nodeKey(ni *NodeInfo) string {
	n := *ni.Node
	name := n.Name
	n.Name = ""
	labels := make(map[string]string, len(n.Labels))
	for k, v := range n.Labels {
		if v == name {
			v = "\x00self"
		}
		labels[k] = v
	}
	n.Labels = labels
	free := make([]uint64, len(n.Storages))
	for i, st := range n.Storages {
		free[i] = ni.StorageFree(st)
	}
	return fmt.Sprintf("%#v|%v|%v|%v|%v|%v|%d", n, ni.AllocCPU, ni.AllocMem, ni.CPU, ni.Mem, free, len(ni.Guests))
}

// guestsKey is the node's guests by everything but their ids, names and the order of tags.
func guestsKey(ni *NodeInfo) string {
	guests := make([]string, len(ni.Guests))
	for i, g := range ni.Guests {
		c := *g
		c.VMID, c.Name, c.Node = 0, "", ""
		c.Tags = slices.Clone(c.Tags)
		for j := range c.Tags {
			c.Tags[j] = strings.ToLower(c.Tags[j])
		}
		slices.Sort(c.Tags)
		// The record by its content: guests alike carry records alike, not the same one.
		var record Recorded
		if c.Recorded != nil {
			record = *c.Recorded
		}
		c.Recorded = nil
		guests[i] = fmt.Sprintf("%v|%#v", c, record)
	}
	slices.Sort(guests)
	return strings.Join(guests, "\n")
}

// key is the branch's state up to the symmetry of nodes: per group of alike nodes, the sorted
// rows of its nodes (row).
func (s *search) key() string {
	b := make([]byte, 0, 8*len(s.infos))
	var rows [][]byte
	for _, nodes := range s.alike {
		if len(nodes) == 1 {
			b = s.row(b, nodes[0])
			continue
		}
		rows = rows[:0]
		for _, n := range nodes {
			rows = append(rows, s.row(nil, n))
		}
		slices.SortFunc(rows, bytes.Compare)
		for _, row := range rows {
			b = append(b, row...)
		}
	}
	return string(b)
}

// row appends node n's counts to b: how many classes have members on it, then each such
// class and its count, two bytes a number (most nodes hold none of a set's many classes).
func (s *search) row(b []byte, n int) []byte {
	k := 0
	for _, c := range s.count[n] {
		if c > 0 {
			k++
		}
	}
	b = append(b, byte(k>>8), byte(k))
	for ci, c := range s.count[n] {
		if c > 0 {
			b = append(b, byte(ci>>8), byte(ci), byte(c>>8), byte(c))
		}
	}
	return b
}

// feasible lists the nodes where the class's probe passes every filter and finds storage,
// in view order, with the state its pre-filters wrote (nil when a pre-filter refuses it). Only
// the nodes of within are checked, all of them when within is nil.
func (s *search) feasible(c *vmClass, within []int) ([]int, *CycleState) {
	checked := len(s.infos)
	if within != nil {
		checked = len(within)
	}
	s.work += s.prefilterCost + checked
	r := s.probe(c)
	state := NewCycleState()
	state.nodes = s.infos
	if s.p.preFilter(state, r, s.infos) != nil {
		return nil, nil
	}
	var at []int
	check := func(n int) {
		if s.passes(state, r, s.infos[n]) {
			at = append(at, n)
		}
	}
	if within == nil {
		for n := range s.infos {
			check(n)
		}
	} else {
		for _, n := range within {
			check(n)
		}
	}
	// Not nil: an empty list checks no node next time.
	if at == nil {
		at = []int{}
	}
	return at, state
}

// passes runs the filters on one node until the first rejection, then the storage check.
func (s *search) passes(state *CycleState, r *Request, ni *NodeInfo) bool {
	// The capacities first, without the words of a rejection most checks of a tight set end in.
	for _, cp := range s.caps {
		if cp.Demand(r) > cp.Room(ni) {
			return false
		}
	}
	for _, f := range s.p.of(r).filters {
		if f.Filter(state, r, ni) != nil {
			return false
		}
	}
	_, _, reason := ChooseStorage(ni, r)
	return reason == ""
}

// member is the class's next request to place.
func (s *search) member(c *vmClass) *Request {
	return &s.reqs[c.reqs[len(c.reqs)-c.left]]
}

// byScore orders a class's feasible nodes as the pipeline would choose among them.
func (s *search) byScore(c *vmClass, at []int, state *CycleState) []int {
	if len(at) < 2 {
		return at
	}
	r := s.member(c)
	cands := make([]Candidate, len(s.infos))
	feasible := make([]*NodeInfo, len(at))
	for j, n := range at {
		cands[n] = Candidate{Node: s.infos[n].Node.Name, Feasible: true}
		feasible[j] = s.infos[n]
	}
	s.p.score(state, r, feasible, at, cands)
	ordered := slices.Clone(at)
	sort.SliceStable(ordered, func(a, b int) bool { return better(r.Name, cands[ordered[a]], cands[ordered[b]]) })
	if s.probe(c) == c.rep {
		return ordered
	}
	// The terms the probe leaves out are best met by placing as Schedule would: the nodes
	// the whole request passes now come first.
	s.work += s.prefilterCost + len(at)
	full := NewCycleState()
	full.nodes = s.infos
	if s.p.preFilter(full, r, s.infos) != nil {
		return ordered
	}
	passing := make(map[int]bool, len(at))
	for _, n := range at {
		passing[n] = s.passes(full, r, s.infos[n])
	}
	sort.SliceStable(ordered, func(a, b int) bool { return passing[ordered[a]] && !passing[ordered[b]] })
	return ordered
}

// push places the class's next VM on node n; pop takes the last placement back.
func (s *search) push(ci, n int) {
	c := s.classes[ci]
	i := c.reqs[len(c.reqs)-c.left]
	r := &s.reqs[i]
	ni := s.infos[n]
	storage, _, _ := ChooseStorage(ni, r)
	g := newGuest(r, ni.Node.Name, s.vmids[i], storage)
	s.stack = append(s.stack, step{class: ci, req: i, node: n, guest: g})
	ni.add(g)
	c.left--
	s.count[n][ci]++
	if len(s.stack) > len(s.deepest) {
		s.deepest = slices.Clone(s.stack)
	}
}

// record keeps the branch as the largest subset found when it is larger than the best and
// passes the whole check.
func (s *search) record() {
	if len(s.stack) > s.best && s.holds() {
		s.best = len(s.stack)
		s.bestSteps = slices.Clone(s.stack)
	}
}

// holds checks the branch as a placement of its own: every VM on it passes every filter of
// its whole request, on its storage, beside all the others, itself left out.
func (s *search) holds() bool {
	for _, st := range s.stack {
		if !s.stepHolds(st) {
			return false
		}
	}
	return true
}

// stepHolds checks one placement of the branch beside all the others.
func (s *search) stepHolds(st step) bool {
	s.work += s.prefilterCost + 1
	r := s.reqs[st.req]
	r.Storage = st.guest.Storage
	restore := s.leaveOut(st)
	defer restore()
	state := NewCycleState()
	state.nodes = s.infos
	return s.p.preFilter(state, &r, s.infos) == nil && s.passes(state, &r, s.infos[st.node])
}

// leaveOut takes a placement's guest out of its node for a check, as view.without does an
// existing guest; the returned function puts it back.
func (s *search) leaveOut(st step) (restore func()) {
	ni := s.infos[st.node]
	saved := *ni
	s.recount(ni, st.guest)
	return func() {
		*ni = saved
		ni.chargeDisks(st.guest, true)
	}
}

// recount lists the node's guests but g, counts its figures again from them (the same
// additions in the same order as before g came, so the figures are exactly those) and
// credits g's disks back.
func (s *search) recount(ni *NodeInfo, g *Guest) {
	fresh := NodeInfo{Node: ni.Node, CPU: ni.Node.CPU, Mem: ni.Node.Mem, storageDebits: ni.storageDebits, Guests: make([]*Guest, 0, len(ni.Guests))}
	for _, other := range ni.Guests {
		if other != g {
			fresh.list(other)
			fresh.tally(other)
		}
	}
	*ni = fresh
	ni.chargeDisks(g, false)
}

// pop takes the last placement back. Only the last: a class's placed members are the first
// of its requests (push), which the LNS's hide relies on.
func (s *search) pop() {
	st := s.stack[len(s.stack)-1]
	s.stack = s.stack[:len(s.stack)-1]
	s.recount(s.infos[st.node], st.guest)
	s.classes[st.class].left++
	s.count[st.node][st.class]--
}

// unwind takes every placement of the branch back.
func (s *search) unwind() {
	for len(s.stack) > 0 {
		s.pop()
	}
}

// solve searches for a placement of every class's members, unless a cause shows at once that
// none exists: the exact search backtracks
// from the largest, most constrained class, tightest fit first; beyond the complete sizes it
// restarts, each time with the fits of nodes blurred its own way and a budget that
// grows as Luby's sequence (a bad early choice costs one restart, not the whole budget;
// dead states stay known). Beyond their share of the budget, bin completion (bins), then the
// large-neighbourhood search. On success the stack holds the placement.
func (s *search) solve() bool {
	// A group kept apart with more members than domains is a proof no search needs.
	for _, c := range s.classes {
		if s.cause(c.rep) != "" {
			s.proven = true
			return false
		}
	}
	budget := s.budget
	lnsBudget := int(lnsShare * float64(min(budget, searchBudget)))
	total := budget - lnsBudget
	// Beyond the complete sizes, bin completion takes its share out of the LNS's.
	binsBudget := 0
	if !s.complete {
		binsBudget = int(binsShare * float64(budget))
		lnsBudget -= binsBudget
	}
	proof := s.dead
	for s.restart = 0; ; s.restart++ {
		if !s.complete {
			s.budget = min(total, s.work+luby(s.restart+1)*restartUnit)
		}
		// Every other restart places the VMs of DoNotSchedule spreads only where their
		// whole request passes as they come (as Schedule would), which keeps the spreads
		// even but may miss a placement: its dead states are its own, and its end proves
		// nothing.
		s.narrow = s.loose && s.restart%2 == 1
		s.dead = proof
		if s.narrow {
			s.dead = s.narrowDead
		}
		switch s.dfs(nil) {
		case found:
			return true
		case deadEnd:
			if !s.narrow {
				s.proven = true
				return false
			}
		}
		s.unwind()
		if s.complete || s.work >= total {
			break
		}
	}
	s.dead, s.narrow = proof, false
	if binsBudget > 0 && s.bins(binsBudget) {
		return true
	}
	return s.lns(lnsBudget)
}

// luby is the i-th term (from 1) of Luby's restart sequence: 1 1 2 1 1 2 4 1 1 2 ...
func luby(i int) int {
	for k := 1; ; k++ {
		if i == 1<<k-1 {
			return 1 << (k - 1)
		}
		if i < 1<<k-1 {
			return luby(i - (1<<(k-1) - 1))
		}
	}
}

// before reports whether the dfs branches on class a rather than b: the carriers of left-out
// terms first, except in a narrow restart, whose spreads stay even as they come.
func (s *search) before(a, b int, feasible [][]int) bool {
	if ca, cb := s.classes[a].carrier, s.classes[b].carrier; ca != cb && !s.narrow {
		return ca
	}
	return len(feasible[a]) < len(feasible[b])
}

type outcome int

const (
	deadEnd outcome = iota
	found
	exhausted
)

// dfs extends the branch on one class, the one with the fewest feasible nodes (largest first
// among equals; the carriers of left-out terms before all, so that those terms settle
// early), over its nodes tightest fit first (order). The probes only lose nodes as VMs are
// placed, so a class without a feasible node ends the branch, the order of classes does not
// matter, and each level checks again only what the last placement can change (advance). A
// full branch must pass the whole check. A state proven dead is remembered under its key.
func (s *search) dfs(parent *level) outcome {
	if s.work > s.budget {
		return exhausted
	}
	key := s.key()
	if _, ok := s.dead[key]; ok {
		return deadEnd
	}
	if len(s.stack) == s.total {
		if s.holds() {
			return found
		}
		s.dead[key] = struct{}{}
		return deadEnd
	}
	if s.loose && !s.settledHold() {
		s.dead[key] = struct{}{}
		return deadEnd
	}
	lv, ok := s.advance(parent)
	if !ok {
		s.dead[key] = struct{}{}
		return deadEnd
	}
	branch := -1
	for ci, c := range s.classes {
		if c.left > 0 && (branch < 0 || s.before(ci, branch, lv.feasible)) {
			branch = ci
		}
	}
	for _, n := range s.order(branch, lv) {
		s.push(branch, n)
		outcome := s.dfs(lv)
		if outcome != found {
			s.pop()
		}
		if outcome != deadEnd {
			return outcome
		}
	}
	s.dead[key] = struct{}{}
	return deadEnd
}

// failure explains why the set does not fit: the largest subset the search can place, then
// the first request left out (in request order) evaluated beside it, as Schedule explains a
// request that fits nowhere. It returns nil, with the placement on the stack, when that
// subset turns out to be the whole set (the search ran out of budget before).
func (s *search) failure(run *run) error {
	s.unwind()
	s.fill()
	s.record()
	s.unwind()
	// A subset one VM short of a set proven not to fit is the largest already.
	if !s.proven || s.best < s.total-1 {
		s.work, s.budget = 0, growBudget
		s.grow(0, nil, map[string]struct{}{})
	}
	for _, st := range s.bestSteps {
		s.push(st.class, st.node)
	}
	// What the search could not prove maximal may still take a VM more, if the whole still
	// holds.
	s.fill()
	if !s.holds() {
		s.unwind()
		for _, st := range s.bestSteps {
			s.push(st.class, st.node)
		}
	}
	if len(s.stack) == s.total {
		return nil
	}
	defer s.unwind()
	placed := make(map[int]bool, len(s.stack))
	for _, st := range s.stack {
		placed[st.req] = true
	}
	var unplaced []string
	unfit := -1
	for i := range s.reqs {
		if _, isNew := s.vmids[i]; isNew && !placed[i] {
			unplaced = append(unplaced, s.reqs[i].Name)
			if unfit < 0 {
				unfit = i
			}
		}
	}
	r := &s.reqs[unfit]
	ue := &UnschedulableError{Request: r.Name}
	ev, err := s.p.evaluate(r, run.infos)
	if err != nil {
		if !errors.As(err, &ue) {
			return err
		}
	} else {
		ue.Message, ue.Candidates = unschedulableMessage(len(run.infos), ev.groups), ev.cands
	}
	se := &SetError{UnschedulableError: ue, Placed: len(s.stack), Total: s.total, Unplaced: unplaced, GaveUp: !s.proven,
		Maximal: s.proven && (len(s.stack) == s.total-1 || !s.growCut)}
	ue.Message += "\n" + setLine(se, blockedByAntiAffinity(r, ue.Candidates))
	if s.proven {
		s.unwind()
		if se.Cause = s.cause(r); se.Cause == "" {
			se.Cause = s.minimalCause(run.snap)
		}
		if se.Cause != "" {
			ue.Message += "\n" + se.Cause
		}
	}
	return se
}

// fill adds every VM that fits, each on its best node (fillBy).
func (s *search) fill() {
	s.fillBy(func(ci int, at []int, state *CycleState) int { return s.byScore(s.classes[ci], at, state)[0] })
}

// fillBy adds every VM that fits, largest class first, each on the node choose picks among
// the feasible ones; where probes leave terms out, only while the branch still holds.
func (s *search) fillBy(choose func(ci int, at []int, state *CycleState) int) {
	for ci, c := range s.classes {
		for c.left > 0 {
			at, state := s.feasible(c, nil)
			if len(at) == 0 {
				break
			}
			s.push(ci, choose(ci, at, state))
			if s.loose && !s.holds() {
				s.pop()
				break
			}
		}
	}
}

// grow is a branch and bound for the largest subset of the set that holds: classes in order,
// each placing its members one by one on every feasible node or leaving the rest out, cut
// where even placing everything left cannot beat the best found (a class that fits nowhere
// now never will), and ended when the best is one short of a set the exact search proved
// too large. seen holds the states (class, key) already grown; within is as for dfs.
func (s *search) grow(ci int, within [][]int, seen map[string]struct{}) {
	most := s.total
	if s.proven {
		most--
	}
	if s.work > s.budget {
		s.growCut = true
	}
	if ci == len(s.classes) || s.best >= most || s.growCut {
		return
	}
	key := strconv.Itoa(ci) + "#" + s.key()
	if _, ok := seen[key]; ok {
		return
	}
	seen[key] = struct{}{}
	defer func(open int) { s.open = open }(s.open)
	s.open = ci
	if s.loose && !s.settledHold() {
		return
	}
	feasible := make([][]int, len(s.classes))
	var state *CycleState
	left := 0
	for cj := ci; cj < len(s.classes); cj++ {
		c := s.classes[cj]
		if c.left == 0 {
			continue
		}
		var prev []int
		if within != nil {
			prev = within[cj]
		}
		var st *CycleState
		feasible[cj], st = s.feasible(c, prev)
		if cj == ci {
			state = st
		}
		if len(feasible[cj]) > 0 {
			left += c.left
		}
	}
	if len(s.stack)+left <= s.best {
		return
	}
	if c := s.classes[ci]; c.left > 0 {
		for _, n := range s.byScore(c, feasible[ci], state) {
			s.push(ci, n)
			s.record()
			s.grow(ci, feasible, seen)
			s.pop()
		}
	}
	s.grow(ci+1, feasible, seen)
}

// blockedByAntiAffinity reports whether a required vm_anti_affinity of the request is among
// the reasons its nodes refuse it.
func blockedByAntiAffinity(r *Request, cands []Candidate) bool {
	required := false
	for _, t := range r.VMAntiAffinity {
		required = required || t.Weight == 0
	}
	if !required {
		return false
	}
	for _, c := range cands {
		for _, reason := range c.Reasons {
			if strings.HasPrefix(reason, "VMAntiAffinity:") {
				return true
			}
		}
	}
	return false
}

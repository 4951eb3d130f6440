// Package rebalance is the descheduler: it finds the opted-in guests that now violate their
// policies or sit on overloaded nodes and plans where each should move, with the same
// scheduler profile and policies they were placed with. It is pure and moves nothing.
package rebalance

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Input is one planning run.
type Input struct {
	// Snapshot is the cluster view; moves never break its HARules.
	Snapshot scheduler.Snapshot
	Profile  *scheduler.Profile
	// Policy is the request every opted-in guest without a placement record must satisfy: node
	// selector, affinities, tolerations, spreads, annotations. The guest's own name, tags and
	// size are added. A guest with a record (Guest.Recorded) is checked against its own policy,
	// under the profile it names (Profiles).
	Policy scheduler.Request
	// Profiles returns the scheduler of a profile named in a record ("" or "default": the
	// provider's own); nil checks every guest under Profile.
	Profiles func(name string) (*scheduler.Profile, error)
	// OptIn are the tags a guest must carry, all of them, to be moved.
	OptIn []string
	// Only, when set, also limits the moves to these guests (by VMID): the existing VMs a
	// placement data source names, which it answers for.
	Only map[int]bool
	// RemovePolicyViolations moves guests whose node fails their hard filters.
	RemovePolicyViolations bool
	// LowNodeUtilization moves guests from nodes above target to nodes below threshold.
	LowNodeUtilization *Utilization
	// HighNodeUtilization empties the nodes below its thresholds onto the others.
	HighNodeUtilization *HighUtilization
	MaxMoves            int
	MaxMovesPerNode     int
	// MaxMovesPerGroup bounds the moves of the members of one required anti-affinity or
	// spread group (the disruption budget); 0 = no bound.
	MaxMovesPerGroup int
	// MinGain is the least improvement, in percentage points, a utilization move must bring.
	MinGain float64
	// Disks lists a guest's disks by storage, asked once per guest the plan would move
	// (nil = unknown: every target accepted, no disk counted in a move's cost).
	Disks func(g *scheduler.Guest) ([]Disk, error)
	// DrainNodes are emptied of every candidate and receive nothing.
	DrainNodes []string
}

// Disk is a guest's disk space on one storage.
type Disk struct {
	Storage string
	Bytes   uint64
}

// Move is one planned migration.
type Move struct {
	VMID     int
	Name     string
	From, To string
	Reason   string
	// Step orders the moves: every move of a step may run once the earlier steps are done;
	// the members of a group that moves together share one.
	Step int
}

// Kept is a guest that should move but has nowhere to go.
type Kept struct {
	VMID   int
	Name   string
	Node   string
	Reason string
}

// NodeUsage is one node's configured allocation in percent of its capacity.
type NodeUsage struct {
	Node          string
	CPUPercent    float64
	MemoryPercent float64
	RunningGuests int
}

// Plan is the result: moves in the order to run them.
type Plan struct {
	Moves         []Move
	Kept          []Kept
	Before, After []NodeUsage
	Summary       string
	// Warnings are problems with the guests' records that did not stop the plan.
	Warnings []string
}

// planner carries the working copy of the cluster the moves change.
type planner struct {
	in      Input
	snap    scheduler.Snapshot
	byVMID  map[int]int // index into snap.Guests
	movesBy map[string]int
	moved   map[int]bool
	plan    Plan
	// checkers check guests on the current working snapshot, one per profile; nil after a
	// move changed it.
	checkers map[*scheduler.Profile]*scheduler.Checker
	// profiles are the profiles records name, resolved once.
	profiles map[string]*scheduler.Profile
	// groupMoves counts the moves of each group's members (the disruption budget).
	groupMoves map[string]int
	// alloc is every node's allocation on the working snapshot, kept up to date by move.
	alloc map[string]*nodeAlloc
	// roomTries counts the tries of makeRoom.
	roomTries int
	// movable caches candidates.
	movable []*scheduler.Guest
	// draining are the DrainNodes.
	draining map[string]bool
	// diskCache holds the guests' disks read so far.
	diskCache map[int][]Disk
	// violations, utilization, emptied and drained count the moves of each strategy for the
	// summary.
	violations, utilization, emptied, drained int
}

// PlanMoves plans the moves. The same input always gives the same plan.
func PlanMoves(in Input) (Plan, error) {
	p := &planner{in: in, movesBy: map[string]int{}, moved: map[int]bool{}, profiles: map[string]*scheduler.Profile{}, groupMoves: map[string]int{},
		draining: map[string]bool{}, diskCache: map[int][]Disk{}}
	p.snap = in.Snapshot
	p.snap.Guests = append([]scheduler.Guest(nil), in.Snapshot.Guests...)
	p.snap.Nodes = append([]scheduler.Node(nil), in.Snapshot.Nodes...)
	for i := range p.snap.Nodes {
		// The moves debit and credit the storages: the input's stay untouched.
		p.snap.Nodes[i].Storages = append([]scheduler.Storage(nil), p.snap.Nodes[i].Storages...)
	}
	p.byVMID = make(map[int]int, len(p.snap.Guests))
	for i, g := range p.snap.Guests {
		p.byVMID[g.VMID] = i
	}
	p.alloc = allocations(&p.snap)
	p.plan.Before = p.usage()
	if err := p.drain(); err != nil {
		return Plan{}, err
	}
	if in.RemovePolicyViolations {
		if err := p.removeViolations(); err != nil {
			return Plan{}, err
		}
	}
	if in.LowNodeUtilization != nil {
		if err := p.balance(*in.LowNodeUtilization); err != nil {
			return Plan{}, err
		}
	}
	if in.HighNodeUtilization != nil {
		if err := p.empty(*in.HighNodeUtilization); err != nil {
			return Plan{}, err
		}
	}
	p.plan.After = p.usage()
	p.plan.Summary = p.summary()
	return p.plan, nil
}

// candidates are the guests that may move, by VMID: the movable guests (notMovable) of online
// nodes (a guest of a dead node is HA's to recover). No move changes the list.
func (p *planner) candidates() []*scheduler.Guest {
	if p.movable != nil {
		return p.movable
	}
	online := map[string]bool{}
	for _, n := range p.snap.Nodes {
		online[n.Name] = n.Online
	}
	p.movable = []*scheduler.Guest{}
	for i := range p.snap.Guests {
		g := &p.snap.Guests[i]
		if online[g.Node] && p.notMovable(g) == "" {
			p.movable = append(p.movable, g)
		}
	}
	sort.Slice(p.movable, func(i, j int) bool { return p.movable[i].VMID < p.movable[j].VMID })
	return p.movable
}

// notOptedIn is the reason a guest without every opt-in tag stays.
const notOptedIn = "not opted in"

// notMovable says why the guest is no candidate, "" when it is: QEMU VMs and containers
// carrying every opt-in tag move; templates and guests locked by a task do not.
func (p *planner) notMovable(g *scheduler.Guest) string {
	switch {
	case g.Type != scheduler.GuestQEMU && g.Type != scheduler.GuestLXC:
		return "not a VM or container"
	case g.Template:
		return "a template"
	case g.Lock != "":
		return "locked (" + g.Lock + ")"
	case !hasAll(g.Tags, p.in.OptIn), p.in.Only != nil && !p.in.Only[g.VMID]:
		return notOptedIn
	}
	return ""
}

// request is the policy request for one guest, sized as the guest is configured.
func (p *planner) request(g *scheduler.Guest) scheduler.Request {
	r := p.in.Policy
	if g.Recorded != nil {
		r = g.Recorded.Policy
	}
	return sized(g, r)
}

// sized is the policy r for the guest, with its name, tags and configured size.
func sized(g *scheduler.Guest, r scheduler.Request) scheduler.Request {
	r.Name, r.Tags, r.VMID, r.Node = g.Name, g.Tags, 0, ""
	r.Cores, r.Sockets = max(1, int(math.Ceil(g.CPUs))), 1
	r.MemoryMiB = max(1, int(g.MaxMem/scheduler.MiB))
	if r.Name == "" {
		r.Name = fmt.Sprintf("vm%d", g.VMID)
	}
	return r
}

func (p *planner) full() bool { return len(p.plan.Moves) >= p.in.MaxMoves }

// capped says which cap keeps the guest from moving now, "" when none does: max_moves,
// max_moves_per_node off its node, or its groups' disruption budget.
func (p *planner) capped(g *scheduler.Guest, req scheduler.Request) string {
	switch {
	case p.full():
		return "max_moves (" + strconv.Itoa(p.in.MaxMoves) + ") reached"
	case p.movesBy[g.Node] >= p.in.MaxMovesPerNode:
		return "max_moves_per_node reached for " + g.Node
	}
	return p.overBudget(g, req)
}

func (p *planner) removeViolations() error {
	for _, g := range p.candidates() {
		if p.moved[g.VMID] {
			continue
		}
		req := p.request(g)
		reasons := p.check(g).Check(req, g.Node, g.VMID)
		if len(reasons) == 0 {
			continue
		}
		// Past a cap the violation is still reported (kept), so that none goes unseen.
		n, err := p.relocate(g, req, "policy violation on "+g.Node+": "+strings.Join(reasons, "; "), nil, false, "no node passes")
		if err != nil {
			return err
		}
		p.violations += n
	}
	p.reportNotOptedIn()
	return nil
}

// reportNotOptedIn keeps, with the reason "not opted in", the guests outside the opt-in whose
// node breaks their own rules: their placement record's policy, else the node's rules that
// bind every guest (a NoSchedule or NoExecute taint, HA maintenance). The data source's policy
// is the opted-in group's, not theirs; and a guest without a record on a node without such a
// rule is not checked, which keeps a plan of 10,000 guests linear.
func (p *planner) reportNotOptedIn() {
	online, repels := map[string]bool{}, map[string]bool{}
	for _, n := range p.snap.Nodes {
		online[n.Name] = n.Online
		repels[n.Name] = n.HAState == "maintenance" || slices.ContainsFunc(n.Taints, func(t scheduler.Taint) bool { return t.Effect != "PreferNoSchedule" })
	}
	for i := range p.snap.Guests {
		g := &p.snap.Guests[i]
		if !online[g.Node] || p.notMovable(g) != notOptedIn || g.Recorded == nil && !repels[g.Node] {
			continue
		}
		req := sized(g, scheduler.Request{})
		if g.Recorded != nil {
			req = p.request(g)
		}
		if reasons := p.check(g).Check(req, g.Node, g.VMID); len(reasons) > 0 {
			p.keep(g, "policy violation on "+g.Node+": "+strings.Join(reasons, "; ")+"; "+notOptedIn)
		}
	}
}

// relocate moves g to the best target (target's accept and pack) for why, unless a cap or the
// lack of a target keeps it, with why and the cause; noTarget introduces the refusal. Where g
// alone has no target, its group moves as one (moveGroup), or another guest makes room
// (makeRoom). It returns how many guests moved.
func (p *planner) relocate(g *scheduler.Guest, req scheduler.Request, why string, accept func(string) string, pack bool, noTarget string) (int, error) {
	if limit := p.capped(g, req); limit != "" {
		p.keep(g, why+"; "+limit)
		return 0, nil
	}
	to, refusal, err := p.target(g, req, accept, pack)
	if err != nil || to != "" {
		if to != "" {
			p.move(g, req, to, why)
			return 1, nil
		}
		return 0, err
	}
	if members := p.group(g); len(members) > 1 {
		n, r, err := p.moveGroup(g, members, why, accept)
		if n > 0 || err != nil {
			return n, err
		}
		refusal += "; " + r
	} else if n, err := p.makeRoom(g, req, why, accept); n > 0 || err != nil {
		return n, err
	}
	p.keep(g, why+"; "+noTarget+": "+refusal)
	return 0, nil
}

// target ranks the nodes for the guest with its own usage left out and returns the best one
// that is not its own node nor being drained, passes every hard filter, keeps the HA rules,
// has its local disks' storages with room for them and passes accept (nil = any); with pack,
// the fullest such node instead (ties by rank). Otherwise it returns why none does.
func (p *planner) target(g *scheduler.Guest, req scheduler.Request, accept func(string) string, pack bool) (string, string, error) {
	ranked, err := p.check(g).Rank(req, g.VMID)
	if err != nil {
		return "", err.Error(), nil
	}
	var why []string
	best := ""
	for _, c := range ranked {
		if c.Node == g.Node {
			continue
		}
		if p.draining[c.Node] {
			why = append(why, c.Node+": in drain_nodes")
			continue
		}
		if !c.Feasible {
			why = append(why, c.Node+": "+strings.Join(c.Reasons, ", "))
			continue
		}
		if r := p.haRefusal(g.VMID, c.Node); r != "" {
			why = append(why, c.Node+": "+r)
			continue
		}
		// accept first: it is arithmetic, the disks may need a request.
		r := ""
		if accept != nil {
			r = accept(c.Node)
		}
		if r == "" {
			if r, err = p.storageRefusal(g, c.Node); err != nil {
				return "", "", err
			}
		}
		if r != "" {
			why = append(why, c.Node+": "+r)
			continue
		}
		if !pack {
			return c.Node, "", nil
		}
		if best == "" || level(p.alloc[c.Node].usage()) > level(p.alloc[best].usage()) {
			best = c.Node
		}
	}
	if best != "" {
		return best, "", nil
	}
	if len(why) == 0 {
		why = []string{"the cluster has no other node"}
	}
	return "", strings.Join(why, "; "), nil
}

func (p *planner) move(g *scheduler.Guest, req scheduler.Request, to, reason string) {
	step := 1
	if n := len(p.plan.Moves); n > 0 {
		step = p.plan.Moves[n-1].Step + 1
	}
	p.plan.Moves = append(p.plan.Moves, Move{VMID: g.VMID, Name: g.Name, From: g.Node, To: to, Reason: reason, Step: step})
	p.movesBy[g.Node]++
	for _, key := range budgetGroups(g, req) {
		p.groupMoves[key]++
	}
	p.moved[g.VMID] = true
	p.shiftLiveMemory(g, g.Node, to)
	p.shiftDisks(g, g.Node, to)
	shift(g, p.alloc[g.Node], p.alloc[to])
	g.Node = to
	p.checkers = nil
}

// shiftLiveMemory moves the guest's configured memory between the nodes' live figures, the
// best estimate of its live usage the snapshot has.
func (p *planner) shiftLiveMemory(g *scheduler.Guest, from, to string) {
	if g.Status != "running" {
		return
	}
	for i := range p.snap.Nodes {
		n := &p.snap.Nodes[i]
		switch n.Name {
		case from:
			n.Mem -= min(n.Mem, g.MaxMem)
		case to:
			n.Mem += g.MaxMem
		}
	}
}

func (p *planner) keep(g *scheduler.Guest, reason string) {
	p.addKept(Kept{VMID: g.VMID, Name: g.Name, Node: g.Node, Reason: reason})
}

// addKept reports a guest kept, once: a guest kept for several reasons (a rule it breaks and
// the load of its node) gets one entry with all of them, so that kept can be keyed by vmid.
func (p *planner) addKept(k Kept) {
	for i := range p.plan.Kept {
		if e := &p.plan.Kept[i]; e.VMID == k.VMID {
			if !strings.Contains(e.Reason, k.Reason) {
				e.Reason += "; " + k.Reason
			}
			return
		}
	}
	p.plan.Kept = append(p.plan.Kept, k)
}

// check returns the checker of the guest's profile on the working snapshot, built once per
// state of it.
func (p *planner) check(g *scheduler.Guest) *scheduler.Checker {
	prof := p.profileOf(g)
	if p.checkers == nil {
		p.checkers = map[*scheduler.Profile]*scheduler.Checker{}
	}
	c, ok := p.checkers[prof]
	if !ok {
		c = prof.NewChecker(&p.snap)
		p.checkers[prof] = c
	}
	return c
}

// nodeAlloc is what counts on a node for utilization: the configured size of the guests
// that count for capacity.
type nodeAlloc struct {
	node    *scheduler.Node
	cpu     float64
	mem     uint64
	running int
}

func allocations(snap *scheduler.Snapshot) map[string]*nodeAlloc {
	out := make(map[string]*nodeAlloc, len(snap.Nodes))
	for _, ni := range scheduler.NodeInfos(snap) {
		a := &nodeAlloc{node: ni.Node, cpu: ni.AllocCPU, mem: ni.AllocMem}
		for _, g := range ni.Guests {
			if g.Status == "running" {
				a.running++
			}
		}
		out[ni.Node.Name] = a
	}
	return out
}

// shift moves a guest's share from one allocation to another.
func shift(g *scheduler.Guest, from, to *nodeAlloc) {
	if g.Status == "running" {
		from.running--
		to.running++
	}
	if g.CountsForCapacity() {
		from.cpu -= g.CPUs
		from.mem -= min(from.mem, g.MaxMem)
		to.cpu += g.CPUs
		to.mem += g.MaxMem
	}
}

func (a *nodeAlloc) usage() NodeUsage {
	u := NodeUsage{Node: a.node.Name, RunningGuests: a.running}
	if a.node.MaxCPU > 0 {
		u.CPUPercent = round2(100 * a.cpu / float64(a.node.MaxCPU))
	}
	if a.node.MaxMem > 0 {
		u.MemoryPercent = round2(100 * float64(a.mem) / float64(a.node.MaxMem))
	}
	return u
}

// usage is every node's allocation, in snapshot order.
func (p *planner) usage() []NodeUsage {
	out := make([]NodeUsage, len(p.snap.Nodes))
	for i, n := range p.snap.Nodes {
		out[i] = p.alloc[n.Name].usage()
	}
	return out
}

// usageAfter is the allocation of the two nodes if the guests moved from src to dst.
func (p *planner) usageAfter(src, dst string, gs ...*scheduler.Guest) (NodeUsage, NodeUsage) {
	s, d := *p.alloc[src], *p.alloc[dst]
	for _, g := range gs {
		shift(g, &s, &d)
	}
	return s.usage(), d.usage()
}

func (p *planner) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d move(s)", len(p.plan.Moves))
	if len(p.plan.Moves) > 0 {
		fmt.Fprintf(&b, " (%d policy violation(s), %d utilization", p.violations, p.utilization)
		if p.emptied > 0 {
			fmt.Fprintf(&b, ", %d emptying", p.emptied)
		}
		if p.drained > 0 {
			fmt.Fprintf(&b, ", %d draining", p.drained)
		}
		b.WriteString(")")
	}
	for _, m := range p.plan.Moves {
		fmt.Fprintf(&b, "; %s (%d): %s -> %s", m.Name, m.VMID, m.From, m.To)
	}
	for _, k := range p.plan.Kept {
		fmt.Fprintf(&b, "; kept %s (%d) on %s: %s", k.Name, k.VMID, k.Node, k.Reason)
	}
	return b.String()
}

// level is a node's fullness: its fuller resource.
func level(u NodeUsage) float64 { return max(u.CPUPercent, u.MemoryPercent) }

func hasAll(tags, want []string) bool {
	for _, w := range want {
		found := false
		for _, t := range tags {
			if strings.EqualFold(t, w) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

func pct(v float64) string { return scheduler.FormatNumber(round2(v)) }

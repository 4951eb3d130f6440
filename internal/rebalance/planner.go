// Package rebalance is the descheduler: it finds the opted-in guests that now violate their
// policies or sit on overloaded nodes and plans where each should move, with the same
// scheduler profile and policies they were placed with. It is pure and moves nothing.
package rebalance

import (
	"fmt"
	"math"
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
	// DiskStorages names the storages a guest's disks are on; asked only for running guests
	// about to move (nil = unknown, every target accepted).
	DiskStorages func(g *scheduler.Guest) ([]string, error)
}

// Utilization holds the LowNodeUtilization percentages of configured allocation.
type Utilization struct {
	CPUThreshold, MemoryThreshold float64
	CPUTarget, MemoryTarget       float64
}

// Move is one planned migration.
type Move struct {
	VMID     int
	Name     string
	From, To string
	Reason   string
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
	// violations and utilization count the moves of each strategy for the summary.
	violations, utilization, emptied int
}

// PlanMoves plans the moves. The same input always gives the same plan.
func PlanMoves(in Input) (Plan, error) {
	p := &planner{in: in, movesBy: map[string]int{}, moved: map[int]bool{}, profiles: map[string]*scheduler.Profile{}, groupMoves: map[string]int{}}
	p.snap = in.Snapshot
	p.snap.Guests = append([]scheduler.Guest(nil), in.Snapshot.Guests...)
	p.snap.Nodes = append([]scheduler.Node(nil), in.Snapshot.Nodes...)
	p.byVMID = make(map[int]int, len(p.snap.Guests))
	for i, g := range p.snap.Guests {
		p.byVMID[g.VMID] = i
	}
	p.alloc = allocations(&p.snap)
	p.plan.Before = p.usage()
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

// candidates are the opted-in guests that may move, by VMID: QEMU VMs on online nodes (a
// guest of a dead node is HA's to recover), no templates, no guest locked by a task.
func (p *planner) candidates() []*scheduler.Guest {
	online := map[string]bool{}
	for _, n := range p.snap.Nodes {
		online[n.Name] = n.Online
	}
	var out []*scheduler.Guest
	for i := range p.snap.Guests {
		g := &p.snap.Guests[i]
		if g.Type == scheduler.GuestQEMU && online[g.Node] && !g.Template && g.Lock == "" && hasAll(g.Tags, p.in.OptIn) && (p.in.Only == nil || p.in.Only[g.VMID]) {
			out = append(out, g)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].VMID < out[j].VMID })
	return out
}

// request is the policy request for one guest, sized as the guest is configured.
func (p *planner) request(g *scheduler.Guest) scheduler.Request {
	r := p.in.Policy
	if g.Recorded != nil {
		r = g.Recorded.Policy
	}
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
		moved, err := p.relocate(g, req, "policy violation on "+g.Node+": "+strings.Join(reasons, "; "), nil, false, "no node passes")
		if err != nil {
			return err
		}
		if moved {
			p.violations++
		}
	}
	return nil
}

// relocate moves g to the best target (target's accept and pack) for why, unless a cap or the
// lack of a target keeps it, with why and the cause; noTarget introduces the refusal.
func (p *planner) relocate(g *scheduler.Guest, req scheduler.Request, why string, accept func(string) string, pack bool, noTarget string) (bool, error) {
	if limit := p.capped(g, req); limit != "" {
		p.keep(g, why+"; "+limit)
		return false, nil
	}
	to, refusal, err := p.target(g, req, accept, pack)
	if err != nil {
		return false, err
	}
	if to == "" {
		p.keep(g, why+"; "+noTarget+": "+refusal)
		return false, nil
	}
	p.move(g, req, to, why)
	return true, nil
}

// balance is LowNodeUtilization: nodes above target (any resource) give guests to nodes
// below threshold (every resource), biggest guests first, while the move gains at least
// MinGain points of imbalance and leaves the receiver at or under target.
func (p *planner) balance(u Utilization) error {
	usage := func(node string) NodeUsage { return p.alloc[node].usage() }
	var over []string
	under := map[string]bool{}
	for _, n := range p.snap.Nodes {
		x := usage(n.Name)
		switch {
		case !n.Online:
		case x.CPUPercent > u.CPUTarget || x.MemoryPercent > u.MemoryTarget:
			over = append(over, n.Name)
		case x.CPUPercent < u.CPUThreshold && x.MemoryPercent < u.MemoryThreshold:
			under[n.Name] = true
		}
	}
	if len(over) == 0 || len(under) == 0 {
		return nil
	}
	sort.Slice(over, func(i, j int) bool {
		a, b := level(usage(over[i])), level(usage(over[j]))
		if a != b {
			return a > b
		}
		return over[i] < over[j]
	})
	for _, src := range over {
		var refused []Kept // guests no node takes, reported if src stays above target
		guests := p.runningOn(src)
		for _, g := range guests {
			if s := usage(src); s.CPUPercent <= u.CPUTarget && s.MemoryPercent <= u.MemoryTarget {
				break
			}
			req := p.request(g)
			// Past a cap the guests of a node left above target are reported (kept).
			if limit := p.capped(g, req); limit != "" {
				refused = append(refused, Kept{VMID: g.VMID, Name: g.Name, Node: g.Node, Reason: limit})
				continue
			}
			accept := func(to string) string {
				if !under[to] {
					return "not under the utilization threshold"
				}
				before := level(usage(src)) - level(usage(to))
				s, d := p.usageAfter(g, src, to)
				if d.CPUPercent > u.CPUTarget || d.MemoryPercent > u.MemoryTarget {
					return fmt.Sprintf("would rise above target (cpu %s%%, memory %s%%)", pct(d.CPUPercent), pct(d.MemoryPercent))
				}
				if gain := before - math.Abs(level(s)-level(d)); gain < p.in.MinGain {
					return fmt.Sprintf("gain %s points < min_gain %s", pct(gain), pct(p.in.MinGain))
				}
				return ""
			}
			to, refusal, err := p.target(g, req, accept, false)
			if err != nil {
				return err
			}
			if to == "" {
				refused = append(refused, Kept{VMID: g.VMID, Name: g.Name, Node: g.Node, Reason: "no node takes it: " + refusal})
				continue
			}
			s := usage(src)
			p.move(g, req, to, fmt.Sprintf("LowNodeUtilization: %s is above target (cpu %s%%, memory %s%%)", src, pct(s.CPUPercent), pct(s.MemoryPercent)))
			p.utilization++
		}
		if s := usage(src); s.CPUPercent > u.CPUTarget || s.MemoryPercent > u.MemoryTarget {
			for _, k := range refused {
				k.Reason = fmt.Sprintf("LowNodeUtilization: %s stays above target (cpu %s%%, memory %s%%); %s", src, pct(s.CPUPercent), pct(s.MemoryPercent), k.Reason)
				p.addKept(k)
			}
		}
	}
	return nil
}

// runningOn lists the movable running guests of a node, largest first, then by VMID.
func (p *planner) runningOn(node string) []*scheduler.Guest {
	var out []*scheduler.Guest
	for _, g := range p.candidates() {
		if g.Node == node && g.Status == "running" && !p.moved[g.VMID] {
			out = append(out, g)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].CPUs+float64(out[i].MaxMem)/(1<<30), out[j].CPUs+float64(out[j].MaxMem)/(1<<30)
		return a > b
	})
	return out
}

// target ranks the nodes for the guest with its own usage left out and returns the best one
// that is not its own node, passes every hard filter, keeps the HA rules, holds the storages
// of a running guest's local disks and passes accept (nil = any); with pack, the fullest such
// node instead (ties by rank). Otherwise it returns why none does.
func (p *planner) target(g *scheduler.Guest, req scheduler.Request, accept func(string) string, pack bool) (string, string, error) {
	ranked, err := p.check(g).Rank(req, g.VMID)
	if err != nil {
		return "", err.Error(), nil
	}
	var why []string
	var disks []string
	disksRead := false
	best := ""
	for _, c := range ranked {
		if c.Node == g.Node {
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
		if g.Status == "running" && p.in.DiskStorages != nil {
			if !disksRead {
				if disks, err = p.in.DiskStorages(g); err != nil {
					return "", "", err
				}
				disksRead = true
			}
			if missing := p.missingStorages(disks, c.Node); len(missing) > 0 {
				why = append(why, fmt.Sprintf("%s: local disk storage %s not on %s", c.Node, strings.Join(missing, ", "), c.Node))
				continue
			}
		}
		if accept != nil {
			if r := accept(c.Node); r != "" {
				why = append(why, c.Node+": "+r)
				continue
			}
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

// missingStorages lists the guest's storages that are local to its node and absent or
// inactive on the target.
func (p *planner) missingStorages(storages []string, node string) []string {
	var target *scheduler.Node
	for i := range p.snap.Nodes {
		if p.snap.Nodes[i].Name == node {
			target = &p.snap.Nodes[i]
		}
	}
	var missing []string
	for _, name := range storages {
		ok := false
		for _, s := range target.Storages {
			if s.Name == name && s.Active {
				ok = true
			}
		}
		if !ok {
			missing = append(missing, name)
		}
	}
	return missing
}

func (p *planner) move(g *scheduler.Guest, req scheduler.Request, to, reason string) {
	p.plan.Moves = append(p.plan.Moves, Move{VMID: g.VMID, Name: g.Name, From: g.Node, To: to, Reason: reason})
	p.movesBy[g.Node]++
	for _, key := range budgetGroups(g, req) {
		p.groupMoves[key]++
	}
	p.moved[g.VMID] = true
	p.shiftLiveMemory(g, g.Node, to)
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

// usageAfter is the allocation of the two nodes if the guest moved from src to dst.
func (p *planner) usageAfter(g *scheduler.Guest, src, dst string) (NodeUsage, NodeUsage) {
	s, d := *p.alloc[src], *p.alloc[dst]
	shift(g, &s, &d)
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

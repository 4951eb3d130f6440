package pvesim

// The HA manager's cluster resource scheduler (CRS): datacenter.cfg's crs property and how the
// HA manager scores nodes with it (pve-ha-manager Manager.pm recompute_online_node_usage,
// Usage/Basic.pm, Static.pm and Dynamic.pm over the proxmox-resource-scheduling crate, as
// libpve-rs-perl binds it). recoveryNodes orders its candidates with it, so recovery,
// maintenance, failback and rebalancing (ha_rebalance.go) all choose as PVE does.

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
)

// crsFormat is datacenter.cfg's crs property string (pve-cluster DataCenterConfig.pm) on PVE
// 9.2: the dynamic scheduler and automatic rebalancing came with pve-ha-manager 5.2, the
// threshold and the margin in percent with pve-cluster 9.1.5.
var crsFormat = &propFormat{props: map[string]prop{
	"ha":                              enumProp("basic", "static", "dynamic"),
	"ha-rebalance-on-start":           boolProp(),
	"ha-auto-rebalance":               boolProp(),
	"ha-auto-rebalance-threshold":     numProp().between(0, 100).needs("ha-auto-rebalance"),
	"ha-auto-rebalance-method":        enumProp("bruteforce", "topsis").needs("ha-auto-rebalance"),
	"ha-auto-rebalance-hold-duration": numProp().atLeast(0).needs("ha-auto-rebalance"),
	"ha-auto-rebalance-margin":        numProp().between(0, 100).needs("ha-auto-rebalance"),
}}

// crsFormat8 is the crs property of PVE 8.2 (pve-ha-manager 4.0): the basic and static
// schedulers and rebalancing on start.
var crsFormat8 = &propFormat{props: map[string]prop{
	"ha":                    enumProp("basic", "static"),
	"ha-rebalance-on-start": boolProp(),
}}

// crsFormatOf is the crs property string format of release v.
func crsFormatOf(v versionInfo) *propFormat {
	if v.major < 9 {
		return crsFormat8
	}
	return crsFormat
}

// crsConfig is the parsed crs property (nil: none, the basic scheduler).
type crsConfig map[string]string

// parseCRS reads a crs property string as release v's datacenter.cfg takes it; the message
// PVE refuses it with, or "".
func parseCRS(value string, v versionInfo) (crsConfig, string) {
	if value == "" {
		return nil, ""
	}
	c, msg := parsePropertyString(crsFormatOf(v), value, "crs")
	return c, msg
}

// mode is the scheduler, basic unless set (Manager.pm update_crs_scheduler_mode).
func (c crsConfig) mode() string { return cmp.Or(c["ha"], "basic") }

func (c crsConfig) on(key string) bool { return c[key] == "1" }

// number is a numeric option, dflt when unset.
func (c crsConfig) number(key string, dflt float64) float64 {
	if v, set := c[key]; set {
		f, _ := strconv.ParseFloat(v, 64) // parseCRS checked it
		return f
	}
	return dflt
}

// String is the property string as PVE prints it.
func (c crsConfig) String() string { return printPropertyString(crsFormat, c) }

// options is the property as GET /cluster/options shows datacenter.cfg's parsed crs: booleans
// as 0 or 1, the other values as read from the file (as next-id's).
func (c crsConfig) options() map[string]any {
	out := map[string]any{}
	for k, v := range c {
		if crsFormat.props[k].typ == tBoolean {
			out[k] = atoi(v)
		} else {
			out[k] = v
		}
	}
	return out
}

// crsState is the HA manager's scheduler state beside the services': the datacenter's crs
// property and what load_balance remembers between rounds.
type crsState struct {
	config crsConfig
	// sustained counts the rounds the imbalance has exceeded the threshold in a row
	// (Manager.pm sustained_imbalance_round).
	sustained int
	// lastNodes is where each HA service was at the previous round, to see the migrations the
	// CRM still counts as running (see rebalanceBusy).
	lastNodes map[string]string
	// last is the rebalancing migration of the latest round, if any.
	last *HARebalance
}

// crsStats are a guest's figures for the scheduler (proxmox-resource-scheduling
// ResourceStats): its CPUs (maxcpu, 0 for no limit) and memory, and what it uses of them (cpu
// in cores, mem in bytes).
type crsStats struct{ cpu, maxcpu, mem, maxmem float64 }

func (a crsStats) plus(b crsStats) crsStats {
	return crsStats{a.cpu + b.cpu, a.maxcpu + b.maxcpu, a.mem + b.mem, a.maxmem + b.maxmem}
}

// crsNode is a node's usage (NodeStats): CPU in cores and memory in bytes, used and total.
type crsNode struct {
	name                     string
	cpu, maxcpu, mem, maxmem float64
}

// addStarted adds a guest as started: its configured CPUs (all the node's when unlimited) and
// memory.
func (n *crsNode) addStarted(r crsStats) {
	if r.maxcpu == 0 {
		n.cpu += n.maxcpu
	} else {
		n.cpu += r.maxcpu
	}
	n.mem += r.maxmem
}

func (n *crsNode) addRunning(r crsStats) { n.cpu += r.cpu; n.mem += r.mem }

func (n *crsNode) removeRunning(r crsStats) {
	n.cpu, n.mem = max(0, n.cpu-r.cpu), max(0, n.mem-r.mem)
}

func (n crsNode) cpuLoad() float64 { return n.cpu / n.maxcpu }
func (n crsNode) memLoad() float64 { return n.mem / n.maxmem }
func (n crsNode) load() float64    { return (n.cpuLoad() + n.memLoad()) / 2 }

// crsService is a guest in the scheduler's usage: its figures, the nodes it counts on (its
// current node and the target of a move, each when online) and whether it runs (a service
// being started counts with its configured size, see crsUsage.nodes).
type crsService struct {
	sid             string
	stats           crsStats
	current, target string
	running         bool
}

// crsUsage is the HA manager's view of the online nodes' usage under the static or dynamic
// scheduler (its online_node_usage).
type crsUsage struct {
	mode     string
	base     []crsNode // the online nodes: empty (static) or their live load (dynamic)
	services []crsService
}

// crsNodes are the nodes the HA manager schedules on (NodeStatus.pm list_online_nodes). The
// caller holds s.mu.
func (s *Server) crsNodes() []*node {
	var out []*node
	for _, n := range s.nodes {
		if n.schedulable() {
			out = append(out, n)
		}
	}
	return out
}

// schedulable tells whether the HA manager counts node n online for its usage and its rules:
// online, not in maintenance.
func (n *node) schedulable() bool { return n.online && n.haState != "maintenance" }

// crsUsage builds the usage as recompute_online_node_usage does: every service the CRM lists
// on the nodes get_used_service_nodes names for its state (usedNodes), then, from PVE
// 9.2 (pve-ha-manager 5.1.2), every other running guest on its node. The caller holds s.mu.
func (s *Server) crsUsage(mode string) *crsUsage {
	u := &crsUsage{mode: mode}
	online := map[string]bool{}
	live := s.loads()
	for _, n := range s.crsNodes() {
		online[n.name] = true
		cn := crsNode{name: n.name, maxcpu: float64(n.cpus), maxmem: float64(n.maxmem)}
		if mode == "dynamic" {
			l := live[n.name]
			cn.cpu, cn.mem = l.cpu*float64(n.cpus), float64(l.mem)
		}
		u.base = append(u.base, cn)
	}
	onlineOr := func(name string) string {
		if online[name] {
			return name
		}
		return ""
	}
	for _, vmid := range slices.Sorted(maps.Keys(s.guests)) {
		g := s.guests[vmid]
		res := s.haResourceOf(vmid)
		state := ""
		if res != nil {
			state = s.crmState(res)
		}
		svc := crsService{stats: s.crsStatsOf(g, mode)}
		switch {
		case state == "" && (s.haRules == nil || g.status != "running"):
			continue // PVE 8 counts HA services only; a stopped guest counts nowhere
		case state == "":
			svc.sid, svc.current, svc.running = guestSID(g), onlineOr(g.node), true
		default:
			svc.sid = res.sid
			svc.current, svc.target = s.usedNodes(res)
			svc.running = state == "started" && g.status == "running" || state != "started" && svc.current != ""
		}
		if svc.current == "" {
			// Usage.pm's services that are moving onto an online node count there only.
			svc.current, svc.target = svc.target, ""
		}
		if svc.current != "" {
			u.services = append(u.services, svc)
		}
	}
	return u
}

// guestSID is the HA resource id a guest would have (PVE's stats name every guest so).
func guestSID(g *guest) string {
	if g.typ == "lxc" {
		return "ct:" + strconv.Itoa(g.vmid)
	}
	return "vm:" + strconv.Itoa(g.vmid)
}

// crsStatsOf are a guest's figures for the scheduler. Static (PVE2.pm
// get_static_service_stats, the guest configs' derived max-cpu and max-memory): for a VM its
// vcpus, else sockets x cores, and its memory; for a container its cpulimit, else its cores,
// else 0 (no limit), and its memory; in use, the same. Dynamic (get_dynamic_service_stats,
// the guest's stats as /cluster/resources reports them): its maxcpu (capped at its node's
// CPUs), its memory, and the load it puts on its node while it runs (SetGuestLoad, else
// pvesim's default share). The caller holds s.mu.
func (s *Server) crsStatsOf(g *guest, mode string) crsStats {
	maxmem := float64(g.memoryBytes())
	if mode == "dynamic" {
		st := crsStats{maxcpu: float64(s.maxCPU(g)), maxmem: maxmem}
		if g.status == "running" {
			cpu, mem := g.liveUsage()
			st.cpu, st.mem = cpu, float64(mem)
		}
		return st
	}
	maxcpu := float64(g.vcpus())
	if g.typ == "lxc" {
		maxcpu, _ = strconv.ParseFloat(cmp.Or(g.config["cpulimit"], g.config["cores"], "0"), 64)
	}
	return crsStats{cpu: maxcpu, maxcpu: maxcpu, mem: maxmem, maxmem: maxmem}
}

// nodes are the node usages the scheduler works on (libpve-rs-perl's aggregators): static
// (StartedResourceAggregator) adds every service as started on each node it counts on;
// dynamic takes the nodes' live load, and for scoring a start (starting) adds the services
// not running yet as started (StartingAsStartedResourceAggregator), for the imbalance nothing
// (IdentityAggregator).
func (u *crsUsage) nodes(starting bool) []crsNode {
	out := slices.Clone(u.base)
	at := map[string]*crsNode{}
	for i := range out {
		at[out[i].name] = &out[i]
	}
	for _, svc := range u.services {
		if u.mode == "dynamic" && (!starting || svc.running) {
			continue
		}
		for _, n := range []string{svc.current, svc.target} {
			if cn := at[n]; cn != nil {
				cn.addStarted(svc.stats)
			}
		}
	}
	return out
}

// crsWeights are the TOPSIS criteria of proxmox-resource-scheduling (PveTopsisAlternative):
// average CPU 1, highest CPU 2, average memory 5, highest memory 10, each to be minimised,
// normalised to sum 1.
var crsWeights = [4]float64{1.0 / 18, 2.0 / 18, 5.0 / 18, 10.0 / 18}

// topsisAlternative is a cluster state as the TOPSIS criteria see it: 1 plus the root mean
// square and 1 plus the highest of the nodes' CPU and memory loads (the 1 keeps tiny loads
// from weighing as much as large differences).
func topsisAlternative(nodes []crsNode) [4]float64 {
	var sqCPU, sqMem, hiCPU, hiMem float64
	for _, n := range nodes {
		c, m := n.cpuLoad(), n.memLoad()
		sqCPU, sqMem = sqCPU+c*c, sqMem+m*m
		hiCPU, hiMem = max(hiCPU, c), max(hiMem, m)
	}
	k := float64(len(nodes))
	return [4]float64{1 + math.Sqrt(sqCPU/k), 1 + hiCPU, 1 + math.Sqrt(sqMem/k), 1 + hiMem}
}

// topsisScores are the crate's topsis::score_alternatives for criteria that are all minimised:
// each column normalised by its L2 norm, then each alternative's weighted distance to the
// worst (the column maxima) over its distances to the worst and to the best (the minima);
// higher is better, 0 when all alternatives are alike.
func topsisScores(matrix [][4]float64) []float64 {
	for c := range 4 {
		var norm float64
		for _, row := range matrix {
			norm += row[c] * row[c]
		}
		if norm = math.Sqrt(norm); norm != 0 {
			for i := range matrix {
				matrix[i][c] /= norm
			}
		}
	}
	var best, worst [4]float64
	for c := range 4 {
		best[c], worst[c] = math.Inf(1), math.Inf(-1)
		for _, row := range matrix {
			best[c], worst[c] = min(best[c], row[c]), max(worst[c], row[c])
		}
	}
	dist := func(row, ideal [4]float64) float64 {
		var sum float64
		for c := range 4 {
			d := crsWeights[c] * (row[c] - ideal[c])
			sum += d * d
		}
		return math.Sqrt(sum)
	}
	scores := make([]float64, len(matrix))
	for i, row := range matrix {
		if toBest, toWorst := dist(row, best), dist(row, worst); toBest+toWorst != 0 {
			scores[i] = toWorst / (toBest + toWorst)
		}
	}
	return scores
}

// startScores scores each node for starting a guest with figures r there (the crate's
// score_nodes_to_start_resource): the cluster as if r had started on that node, by TOPSIS.
func (u *crsUsage) startScores(r crsStats) map[string]float64 {
	nodes := u.nodes(true)
	matrix := make([][4]float64, len(nodes))
	for i := range nodes {
		with := slices.Clone(nodes)
		with[i].addStarted(r)
		matrix[i] = topsisAlternative(with)
	}
	scores := map[string]float64{}
	for i, sc := range topsisScores(matrix) {
		scores[nodes[i].name] = sc
	}
	return scores
}

// imbalance is the crate's node imbalance: the coefficient of variation of the node loads
// (the mean of CPU and memory load), divided by its upper bound for the node count,
// sqrt(n-1), so that it lies in 0..1 (proxmox-resource-scheduling 2.1; 2.0, which
// pve-ha-manager 5.2.0's scenarios were computed with, did not divide).
func imbalance(nodes []crsNode) float64 {
	if len(nodes) < 2 {
		return 0
	}
	var sum float64
	for _, n := range nodes {
		sum += n.load()
	}
	if sum == 0 {
		return 0
	}
	k := float64(len(nodes))
	mean := sum / k
	var sq float64
	for _, n := range nodes {
		sq += (n.load() - mean) * (n.load() - mean)
	}
	return math.Sqrt(sq/k) / mean / math.Sqrt(k-1)
}

// crsOrder orders the candidate nodes for placing res as select_service_node does under the
// static or dynamic scheduler: best score first, ties by name. It returns false for the basic
// scheduler, which recoveryNodes orders by its count of services. The caller holds s.mu.
func (s *Server) crsOrder(res *haResource, cands []string) ([]string, bool) {
	mode := s.crs.config.mode()
	g := s.guests[res.vmid]
	if mode == "basic" || g == nil {
		return nil, false
	}
	scores := s.crsUsage(mode).startScores(s.crsStatsOf(g, mode))
	out := slices.Clone(cands)
	sort.SliceStable(out, func(i, j int) bool {
		if a, b := scores[out[i]], scores[out[j]]; a != b {
			return a > b
		}
		return out[i] < out[j]
	})
	return out, true
}

// guestLoad is a running guest's live usage set with SetGuestLoad: CPU in cores, memory in
// bytes.
type guestLoad struct {
	cpu float64
	mem uint64
}

// liveUsage is the load a running guest puts on its node: as set with SetGuestLoad, else
// guestCPUShare of its vCPUs and its configured memory.
func (g *guest) liveUsage() (cpu float64, mem uint64) {
	if g.live != nil {
		return g.live.cpu, g.live.mem
	}
	return float64(g.vcpus()) * guestCPUShare, g.memoryBytes()
}

// reportedUsage is what a running guest's stats report (cpu a fraction of its maxcpu): its load
// as set with SetGuestLoad, else guestCPUShare and half its memory.
func (g *guest) reportedUsage(maxcpu int) (cpu float64, mem uint64) {
	if g.live != nil {
		return g.live.cpu / float64(maxcpu), g.live.mem
	}
	return guestCPUShare, g.memoryBytes() / 2
}

// SetGuestLoad sets the live load of a guest while it runs: cpuCores of its vCPUs busy and
// memUsedGiB of its memory in use. A negative value leaves that figure as it is (at first
// guestCPUShare of its vCPUs and all its memory, as its node counts it). Its node's live
// figures, its own stats and the dynamic scheduler follow it, on whichever node it runs.
func (s *Server) SetGuestLoad(vmid int, cpuCores, memUsedGiB float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.guests[vmid]
	switch {
	case g == nil:
		return fmt.Errorf("pvesim: no guest %d", vmid)
	case cpuCores > float64(s.maxCPU(g)):
		return fmt.Errorf("pvesim: cpu_cores %g is above guest %d's %d vCPUs", cpuCores, vmid, s.maxCPU(g))
	case memUsedGiB*gib > float64(g.memoryBytes()):
		return fmt.Errorf("pvesim: mem_used_gib %g is above guest %d's memory of %g GiB", memUsedGiB, vmid, float64(g.memoryBytes())/gib)
	}
	cpu, mem := g.liveUsage()
	if cpuCores >= 0 {
		cpu = cpuCores
	}
	if memUsedGiB >= 0 {
		mem = uint64(memUsedGiB * gib)
	}
	g.live = &guestLoad{cpu: cpu, mem: mem}
	return nil
}

package provider

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/harules"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// livingCluster is haRulesCluster grown to six nodes in three zones (pve1-2 a, pve3-4 b,
// pve5-6 c) under PVE 9.2's dynamic scheduler with automatic rebalancing, at its defaults
// (threshold 30 %, hold 3 rounds, margin 10 %).
func livingCluster() pvesim.Cluster {
	c := haRulesCluster()
	for i := 5; i <= 6; i++ {
		c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: fmt.Sprintf("pve%d", i), CPUs: 8, MemoryGiB: 16, Notes: "qemu-scheduler/labels: zone=c"})
	}
	c.CRS = "ha=dynamic,ha-auto-rebalance=1"
	return c
}

// livingVMIDs are the web VMs of livingConfig.
var livingVMIDs = []int{100, 101, 102, 103}

// livingConfig is four HA VMs of four vCPUs, apart on nodes and spread over the zones (b
// holds two), with strict failover: the provider writes one negative rule over them, and no
// node rule (a spread never pins a VM to its zone, and a member of a negative rule gets one
// class, here every node). They are pinned where the scheduler puts them in most runs, so that
// the life is the same in each: the spread ties zones a and b, which the parallel creates
// settle either way.
func livingConfig(env *accEnv) string {
	return env.providerBlock("  read_node_notes = true") + haWebResource("web-${count.index}", "4", `vmid  = 100 + count.index
  node  = ["pve6", "pve4", "pve1", "pve3"][count.index]
  cores = 4
  topology_spread {
    tags         = ["web"]
    topology_key = "zone"
  }`, `ha {
    failover = "strict"
  }`)
}

// ruleWatch checks after every HA round that no running VM breaks the hard rules the
// provider wrote: it sees every request to the simulator (each read runs a round), and the
// rounds the test runs itself. It serialises them, so that no round runs while it reads
// where the VMs are.
type ruleWatch struct {
	mu     sync.Mutex
	sim    *pvesim.Server
	rules  []scheduler.HARule // none: not watching (before the apply wrote them, during the destroy)
	checks int
	breaks []string
}

// step runs f (requests or rounds of the HA manager) and then checks the rules.
func (w *ruleWatch) step(f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f()
	if w.rules == nil {
		return
	}
	w.checks++
	w.breaks = append(w.breaks, ruleBreaks(w.sim, w.rules)...)
}

// watch starts checking rules, which must be kinds ruleBreaks knows: a check that skipped one
// would pass for it.
func (w *ruleWatch) watch(rules []scheduler.HARule) error {
	for _, r := range rules {
		if !strings.HasPrefix(r.Name, harules.Prefix) || r.Disabled || !(r.Type == scheduler.HANodeAffinity && r.Strict ||
			r.Type == scheduler.HAResourceAffinity && r.Affinity == scheduler.HANegative) {
			return fmt.Errorf("rule %+v: want the provider's strict node rules and negative resource rules only", r)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rules = rules
	return nil
}

// take returns the breaks since the last take; stop ends the watch.
func (w *ruleWatch) take(stop bool) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	breaks := w.breaks
	w.breaks = nil
	if stop {
		w.rules = nil
	}
	return breaks
}

// report is take as an error.
func (w *ruleWatch) report(stop bool) error {
	if breaks := w.take(stop); len(breaks) > 0 {
		return fmt.Errorf("%d breaks of the provider's HA rules in %d checks, the first: %s", len(breaks), w.checks, breaks[0])
	}
	return nil
}

// ruleBreaks says how the running VMs break rules: one on a node its strict node rule does not
// list, two of a negative rule on one node. A stopped VM (one the HA manager has yet to
// recover) runs nowhere.
func ruleBreaks(sim *pvesim.Server, rules []scheduler.HARule) []string {
	at := map[int]string{}
	for _, g := range guests(sim) {
		if g.Status == "running" {
			at[g.VMID] = g.Node
		}
	}
	var out []string
	for _, r := range rules {
		seen := map[string]int{}
		for _, id := range r.VMIDs {
			node, runs := at[id]
			switch {
			case !runs:
			case r.Type == scheduler.HANodeAffinity && !slices.Contains(r.Nodes, node):
				out = append(out, fmt.Sprintf("VM %d runs on %s, outside node rule %s %v", id, node, r.Name, r.Nodes))
			case r.Type == scheduler.HAResourceAffinity && seen[node] != 0:
				out = append(out, fmt.Sprintf("VMs %d and %d run on %s, against negative rule %s", seen[node], id, node, r.Name))
			}
			seen[node] = id
		}
	}
	return out
}

// crsLife is 200 rounds of the HA manager under a noisy load: every 20 rounds another node
// runs hot (a backup, a batch job) and the VMs' load drifts every round, from a fixed seed;
// the node of VM 100 fails at round 40 and is back at 90; the node of VM 102 is in
// maintenance from round 110 to 160.
type crsLife struct {
	t     *testing.T
	sim   *pvesim.Server
	watch *ruleWatch
	rng   *rand.Rand
	hot   string
	// failed and maintained are the nodes of the failure and the maintenance.
	failed, maintained string
	moves              []pvesim.HARebalance
	recovered          map[int]string
}

func newCRSLife(t *testing.T, sim *pvesim.Server, watch *ruleWatch) *crsLife {
	return &crsLife{t: t, sim: sim, watch: watch, rng: rand.New(rand.NewPCG(31, 200))}
}

// run plays rounds from to to, one at a time, each checked, and says which VMs changed
// nodes in them (rebalanced, recovered, moved for the maintenance or back).
func (l *crsLife) run(from, to int) []string {
	var moved []string
	for r := from; r <= to; r++ {
		before := l.nodes()
		l.watch.step(func() {
			l.event(r)
			l.noise(r)
			l.moves = append(l.moves, l.sim.RunHARounds(1)...)
		})
		for id, node := range l.nodes() {
			if node != before[id] {
				moved = append(moved, fmt.Sprintf("round %d: VM %d %s -> %s", r, id, before[id], node))
			}
		}
	}
	return moved
}

// nodes is where the VMs are.
func (l *crsLife) nodes() map[int]string {
	at := map[int]string{}
	for _, id := range livingVMIDs {
		at[id] = l.sim.MustGuest(l.t, id).Node
	}
	return at
}

func (l *crsLife) event(r int) {
	var err error
	switch r {
	case 40:
		l.failed = l.sim.MustGuest(l.t, 100).Node
		l.recovered, err = l.sim.FailNode(l.failed)
	case 90:
		err = l.sim.SetNodeOnline(l.failed, true)
	case 110:
		l.maintained = l.sim.MustGuest(l.t, 102).Node
		err = l.sim.SetNodeHAState(l.maintained, "maintenance")
	case 160:
		err = l.sim.SetNodeHAState(l.maintained, "online")
	}
	must(l.t, err)
}

func (l *crsLife) noise(r int) {
	nodes := livingCluster().Nodes
	if r%10 == 1 {
		l.hot = nodes[l.rng.IntN(len(nodes))].Name
	}
	for _, n := range nodes {
		cpu, mem := 0.1*l.rng.Float64(), 1+2*l.rng.Float64()
		if n.Name == l.hot {
			cpu, mem = 0.6+0.3*l.rng.Float64(), 10+4*l.rng.Float64()
		}
		must(l.t, l.sim.SetNodeLoad(n.Name, cpu, mem))
	}
	for _, id := range livingVMIDs {
		must(l.t, l.sim.SetGuestLoad(id, 4*l.rng.Float64(), 0.5*l.rng.Float64()))
	}
}

// ruleless is the cluster as the apply left it, the same VMs (livingConfig's sizes) on the
// same nodes and HA-managed, without the provider's rules.
func ruleless(t *testing.T, sim *pvesim.Server) *pvesim.Server {
	c := livingCluster()
	for _, id := range livingVMIDs {
		g := sim.MustGuest(t, id)
		c.Guests = append(c.Guests, pvesim.GuestSpec{VMID: id, Node: g.Node, Name: g.Config["name"], Status: "running", Cores: 4,
			MemoryMiB: 512, Tags: []string{"web"}, Config: map[string]string{"scsi0": g.Config["scsi0"]}})
	}
	bare := pvesim.NewTestServer(t, c)
	for _, id := range livingVMIDs {
		must(t, simClient(t, bare).AddHAResource(context.Background(), id, proxmox.HASettings{State: "started", MaxRestart: 1, MaxRelocate: 1}))
	}
	return bare
}

// Living with CRS: VMs kept apart on nodes and spread over zones, HA-managed, under PVE 9.2's
// dynamic scheduler with automatic rebalancing, through 200 rounds of a noisy load, a node
// failure and a maintenance. At no round (the test's own, and those Terraform's reads run)
// does a running VM break a hard rule the provider wrote, and every plan after the moves is
// empty: while the node is down, while the other is in maintenance, and at the end. The same
// life without the provider's rules breaks them.
func TestAccLivingWithCRS(t *testing.T) {
	w := &ruleWatch{}
	env, sim := interceptedEnv(t, livingCluster(), func(sim *pvesim.Server, next http.Handler) http.Handler {
		w.sim = sim
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { w.step(func() { next.ServeHTTP(rw, r) }) })
	})
	config := livingConfig(env)
	life := newCRSLife(t, sim, w)
	// planAfter is a plan after rounds from to to, which must have moved a VM (else the empty
	// plan would prove little); its check reports the breaks of its rounds, and stop ends the
	// watch before the destroy.
	planAfter := func(from, to int, stop bool) resource.TestStep {
		return resource.TestStep{PreConfig: func() {
			moved := life.run(from, to)
			if len(moved) == 0 {
				t.Errorf("no VM moved in rounds %d to %d", from, to)
			}
			t.Logf("%s", strings.Join(moved, "; "))
		}, Config: config, PlanOnly: true,
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{planCheck(func() error { return w.report(stop) })}}}
	}
	runSteps(t,
		resource.TestStep{Config: config, Check: func(*terraform.State) error {
			rules := simRules(t, sim)
			// The negative rule flattens each member's node rule into one class (PVE's check):
			// over every node, which needs no rule. A spread never pins a VM to its zone.
			if len(rules) != 1 || rules[0].Affinity != scheduler.HANegative {
				return fmt.Errorf("rules %+v, want one negative rule", rules)
			}
			t.Logf("applied: %v", life.nodes())
			// The control: the same life without the rules breaks the negative rule.
			bare := &ruleWatch{sim: ruleless(t, sim)}
			if err := bare.watch(rules); err != nil {
				return err
			}
			newCRSLife(t, bare.sim, bare).run(1, 200)
			breaks := bare.take(true)
			for _, kind := range []string{"against negative rule"} {
				i := slices.IndexFunc(breaks, func(b string) bool { return strings.Contains(b, kind) })
				if i < 0 {
					return fmt.Errorf("without the provider's rules, no round broke one %q: the check could not fail there (breaks %q)", kind, breaks)
				}
				t.Logf("without the rules: %s", breaks[i])
			}
			return w.watch(rules)
		}},
		planAfter(1, 70, false),
		planAfter(71, 140, false),
		planAfter(141, 200, true),
	)
	// The life moved things: else the empty plans would prove nothing.
	t.Logf("%d checks; rebalancing: %v; node %s failed, recovered %v; node %s in maintenance",
		w.checks, life.moves, life.failed, life.recovered, life.maintained)
	if len(life.moves) == 0 || len(life.recovered) == 0 {
		t.Errorf("rebalancing moved %v, the failure of %s recovered %v: want moves of both", life.moves, life.failed, life.recovered)
	}
}

package pvesim_test

// pve-ha-manager's test-crs-* scenarios (src/test/test-crs-*/: hardware_status,
// service_config, static_service_stats, dynamic_service_stats, rules_config, datacenter.cfg,
// cmdlist, log.expect) played on pvesim: the cluster, the services and their figures, the
// events of each cmdlist batch, and where each service is once the HA manager has acted on
// them. Figures in bytes become whole MiB of guest memory; a container's fractional CPUs its
// cpulimit.

import (
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// crsNode is a node of hardware_status: its CPUs and memory in bytes.
type crsNode struct {
	name    string
	cpus    int
	mem     float64
	offline bool // powered off at the start
}

// crsVM is a service of service_config with its figures: the node it starts on, its
// static_service_stats (maxcpu, maxmem in bytes) and dynamic_service_stats (cpu in cores, mem
// in bytes), set for every guest of a dynamic scenario.
type crsVM struct {
	node           string
	maxcpu, maxmem float64
	state          string // requested state; "" is started
	ct             bool
	running        bool              // runs before the HA manager is asked to start it
	later          bool              // made an HA resource by the test, not at the start
	cpu, mem       float64           // live load
	config         map[string]string // further config keys
}

// crsScenario is a scenario's cluster: datacenter.cfg's crs, nodes, services and rules.
type crsScenario struct {
	crs   string
	nodes []crsNode
	vms   map[int]crsVM
	rules []pvesim.HARuleSpec
	pve8  bool // PVE 8.2 (no HA rules) rather than 9.2
}

// threeNodes are n1..n3 alike.
func threeNodes(cpus int, mem float64) []crsNode {
	return []crsNode{{"node1", cpus, mem, false}, {"node2", cpus, mem, false}, {"node3", cpus, mem, false}}
}

// pve520Threshold is the 30 % threshold as pve-ha-manager 5.2.0's scenarios apply it on three
// nodes: they were computed with proxmox-resource-scheduling 2.0, whose imbalance was not yet
// divided by sqrt(n-1), against a threshold of 0.3; PVE 9.2 divides and takes percent.
var pve520Threshold = fmt.Sprint(30 / math.Sqrt2)

// start builds the cluster, makes every guest an HA resource with its requested state and sets
// the live loads; the HA manager has not run yet.
func (sc crsScenario) start(t *testing.T) (*pvesim.Server, *api) {
	t.Helper()
	c := pvesim.Cluster{HARules: sc.rules, CRS: sc.crs}
	if c.HARules == nil && !sc.pve8 {
		c.HARules = []pvesim.HARuleSpec{}
	}
	for _, n := range sc.nodes {
		c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: n.name, CPUs: n.cpus, MemoryGiB: n.mem / (1 << 30), Offline: n.offline})
	}
	for _, vmid := range slices.Sorted(maps.Keys(sc.vms)) {
		vm := sc.vms[vmid]
		g := pvesim.GuestSpec{VMID: vmid, Node: vm.node, MemoryMiB: int(math.Round(vm.maxmem / (1 << 20))), Config: map[string]string{}}
		switch {
		case vm.ct && vm.maxcpu != math.Trunc(vm.maxcpu):
			g.Config["cpulimit"] = fmt.Sprint(vm.maxcpu)
		default:
			g.Cores = int(vm.maxcpu)
		}
		if vm.ct {
			g.Type = "lxc"
		}
		if vm.running {
			g.Status = "running"
		}
		for k, v := range vm.config {
			g.Config[k] = v
		}
		c.Guests = append(c.Guests, g)
	}
	s := pvesim.NewTestServer(t, c)
	a := newAPI(t, s)
	for _, g := range c.Guests {
		vm := sc.vms[g.VMID]
		if !vm.later {
			a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {sid(g.VMID, vm.ct)}, "state": {cmpOr(vm.state, "started")}}))
		}
		if strings.Contains(sc.crs, "ha=dynamic") {
			if err := s.SetGuestLoad(g.VMID, vm.cpu, vm.mem/(1<<30)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return s, a
}

func sid(vmid int, ct bool) string {
	if ct {
		return fmt.Sprintf("ct:%d", vmid)
	}
	return fmt.Sprintf("vm:%d", vmid)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// settle runs HA rounds enough for every request to be carried out (a start takes three in
// pvesim: the CRM picks the service up, sees the request, the LRM starts it).
func settle(s *pvesim.Server) []pvesim.HARebalance { return s.RunHARounds(6) }

// wantPlaced asserts where each service is, and that it runs unless listed in stopped.
func wantPlaced(t *testing.T, s *pvesim.Server, want map[int]string, stopped ...int) {
	t.Helper()
	for vmid, node := range want {
		g := s.MustGuest(t, vmid)
		status := "running"
		for _, id := range stopped {
			if id == vmid {
				status = "stopped"
			}
		}
		if g.Node != node || g.Status != status || g.Lock != "" {
			t.Errorf("%d %s on %s (lock %q), want %s on %s", vmid, g.Status, g.Node, g.Lock, status, node)
		}
	}
}

func mustFail(t *testing.T, s *pvesim.Server, node string) {
	t.Helper()
	if _, err := s.FailNode(node); err != nil {
		t.Fatal(err)
	}
}

func mustOnline(t *testing.T, s *pvesim.Server, node string) {
	t.Helper()
	if err := s.SetNodeOnline(node, true); err != nil {
		t.Fatal(err)
	}
}

// TestCRSBasicCountsServices: without crs the scheduler counts HA services (the basic one):
// the same recovery as TestCRSStatic1 picks the first of the nodes with fewest services, not
// the one with most memory.
func TestCRSBasicCountsServices(t *testing.T) {
	s, _ := crsScenario{
		nodes: []crsNode{{"node1", 32, 100e9, false}, {"node2", 32, 200e9, false}, {"node3", 32, 300e9, false}},
		vms:   map[int]crsVM{102: {node: "node1", maxcpu: 2, maxmem: 4e9}},
	}.start(t)
	settle(s)
	mustFail(t, s, "node1")
	wantPlaced(t, s, map[int]string{102: "node2"})
}

// TestCRSNonHAGuestsCount: from PVE 9.2 (pve-ha-manager 5.1.2) the scheduler counts the
// running guests that are no HA resources; PVE 8.2 counted the HA services only.
func TestCRSNonHAGuestsCount(t *testing.T) {
	for _, tc := range []struct {
		pve8 bool
		want string
	}{{false, "node3"}, {true, "node2"}} {
		s, _ := crsScenario{crs: "ha=static", pve8: tc.pve8, nodes: threeNodes(32, 64<<30),
			vms: map[int]crsVM{101: {node: "node1", maxcpu: 2, maxmem: 4 << 30},
				200: {node: "node2", maxcpu: 16, maxmem: 32 << 30, running: true, later: true}},
		}.start(t)
		settle(s)
		mustFail(t, s, "node1")
		if g := s.MustGuest(t, 101); g.Node != tc.want {
			t.Errorf("PVE 8 %v: vm:101 recovered to %s beside the busy non-HA VM 200 on node2, want %s", tc.pve8, g.Node, tc.want)
		}
	}
}

// TestCRSOptions: the crs property is checked as PVE checks datacenter.cfg, per release, and
// GET /cluster/options shows it parsed.
func TestCRSOptions(t *testing.T) {
	for _, tc := range []struct {
		rules bool
		crs   string
		want  string
	}{
		{false, "ha=dynamic", "value 'dynamic' does not have a value in the enumeration 'basic, static'"},
		{false, "ha=static,ha-auto-rebalance=1", "invalid key in comma-separated list property: ha-auto-rebalance"},
		{true, "ha=fast", "value 'fast' does not have a value in the enumeration 'basic, static, dynamic'"},
		{true, "ha=static,ha-auto-rebalance-threshold=20", "crs.ha-auto-rebalance: missing property required by 'crs.ha-auto-rebalance-threshold'"},
		{true, "ha=static,ha-auto-rebalance=1,ha-auto-rebalance-margin=120", "crs.ha-auto-rebalance-margin: value must have a maximum value of 100"},
		{true, "ha=static,ha-auto-rebalance=1,ha-auto-rebalance-method=random", "value 'random' does not have a value in the enumeration 'bruteforce, topsis'"},
	} {
		c := pvesim.Cluster{Nodes: []pvesim.NodeSpec{{Name: "pve1", CPUs: 4, MemoryGiB: 8}}, CRS: tc.crs}
		if tc.rules {
			c.HARules = []pvesim.HARuleSpec{}
		}
		if _, err := pvesim.New(c); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "it takes ha=") {
			t.Errorf("crs %q (rules %v): %v, want an error with %q and what crs takes", tc.crs, tc.rules, err, tc.want)
		}
	}
	s, a := crsScenario{crs: "ha=static,ha-rebalance-on-start=1", nodes: threeNodes(4, 8<<30)}.start(t)
	opts := a.ok(a.get("/cluster/options")).obj()
	if crs, _ := opts["crs"].(map[string]any); crs["ha"] != "static" || crs["ha-rebalance-on-start"] != 1.0 {
		t.Errorf("GET /cluster/options crs = %v, want ha static, ha-rebalance-on-start 1", opts["crs"])
	}
	if err := s.SetCRS("ha=dynamic,ha-auto-rebalance=1,ha-auto-rebalance-hold-duration=-1"); err == nil || !strings.Contains(err.Error(), "minimum value of 0") {
		t.Errorf("SetCRS with a negative hold duration: %v", err)
	}
	if err := s.SetCRS(""); err != nil {
		t.Fatal(err)
	}
	if opts := a.ok(a.get("/cluster/options")).obj(); opts["crs"] != nil {
		t.Errorf("crs after SetCRS(\"\") = %v, want none", opts["crs"])
	}
}

// TestCRSGuestLoad: a guest's live load shows in its stats and its node's, wherever it runs.
func TestCRSGuestLoad(t *testing.T) {
	s, a := crsScenario{nodes: threeNodes(8, 16<<30), vms: map[int]crsVM{101: {node: "node1", maxcpu: 4, maxmem: 8 << 30, running: true}}}.start(t)
	if err := s.SetGuestLoad(101, 2, 4); err != nil {
		t.Fatal(err)
	}
	row := a.row("qemu/101")
	node := a.row("node/node1")
	if row["cpu"] != 0.5 || row["mem"] != float64(4<<30) || node["cpu"] != 0.25 || node["mem"] != float64(4<<30) {
		t.Errorf("guest cpu %v mem %v, node cpu %v mem %v; want 0.5 of 4 vCPUs and 4 GiB on a node of 8 CPUs", row["cpu"], row["mem"], node["cpu"], node["mem"])
	}
	for _, tc := range []struct {
		cpu, mem float64
		want     string
	}{{5, -1, "above guest 101's 4 vCPUs"}, {-1, 9, "above guest 101's memory of 8 GiB"}} {
		if err := s.SetGuestLoad(101, tc.cpu, tc.mem); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SetGuestLoad(101, %g, %g) = %v, want %q", tc.cpu, tc.mem, err, tc.want)
		}
	}
	if err := s.SetGuestLoad(999, 1, 1); err == nil || !strings.Contains(err.Error(), "no guest 999") {
		t.Errorf("SetGuestLoad(999) = %v", err)
	}
}

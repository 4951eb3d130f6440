package pvesim_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// haScenario is one of pve-ha-manager's regression scenarios (src/test/test-*), translated:
// the cluster, the HA configuration and the rounds of commands as that test sets them up, and
// after each round where each service the CRM knows is and in which state, as its log.expect
// shows when the next round begins. Services still moving then (fence, migrate, relocate,
// request_*) are listed as settling: the simulator plays a round at once, PVE over a few
// seconds, so only where they come to rest compares.
type haScenario struct {
	Scenario string `json:"scenario"`
	Group    string `json:"group"`
	// Skip says why the scenario does not run: a device only PVE's test harness has, or a
	// feature pvesim does not have yet.
	Skip     string                    `json:"skip"`
	Nodes    []string                  `json:"nodes"`
	Services map[string]map[string]any `json:"services"`
	// Rules is rules.cfg; without it and with groups, the cluster is PVE 8.
	Rules  *[]pvesim.HARuleSpec `json:"rules"`
	Groups []haScenarioGroup    `json:"groups"`
	Rounds []haScenarioRound    `json:"rounds"`
	// Hardware are the nodes' CPUs and memory in bytes (hardware_status); without, every node
	// has 16 CPUs and 64 GiB.
	Hardware   map[string]haScenarioStats `json:"hardware"`
	Datacenter map[string]any             `json:"datacenter"`
	// StaticStats are the guests' configured CPUs and memory in bytes, DynamicStats their load
	// (cpu in cores, mem in bytes); without, a guest has 1 core and 512 MiB.
	StaticStats   map[string]haScenarioStats `json:"static_stats"`
	DynamicStats  map[string]haScenarioStats `json:"dynamic_stats"`
	ManagerStatus map[string]any             `json:"manager_status"`
}

// haScenarioStats are a node's or a guest's figures as PVE's test harness sets them.
type haScenarioStats struct {
	MaxCPU float64 `json:"maxcpu"`
	MaxMem float64 `json:"maxmem"`
	CPU    float64 `json:"cpu"`
	Mem    float64 `json:"mem"`
}

type haScenarioGroup struct {
	Group      string `json:"group"`
	Nodes      string `json:"nodes"`
	Restricted bool   `json:"restricted"`
	Nofailback bool   `json:"nofailback"`
}

type haScenarioRound struct {
	Commands []string                    `json:"commands"`
	Expect   map[string]pvesim.HAService `json:"expect"`
	Settling []string                    `json:"settling"`
}

func TestHAScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/ha-scenarios/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios under testdata/ha-scenarios: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var sc haScenario
			if err := json.Unmarshal(data, &sc); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if sc.Skip != "" {
				t.Skip(sc.Skip)
			}
			newHAHarness(t, sc).run()
		})
	}
}

// haHarness plays a scenario's hardware and commands on a pvesim Server: node power and
// network through the failure API, the ha-manager commands through the API as ha-manager
// sends them, and HA rounds until the services come to rest.
type haHarness struct {
	t  *testing.T
	sc haScenario
	s  *pvesim.Server
	// down are the nodes that are off or cut off; fenced those of them whose watchdog
	// powered them off.
	down, fenced map[string]bool
	// disarmed: the HA stack is disarmed (disarm-ha).
	disarmed bool
	// resized are the services whose static stats a command changes (set-static-stats).
	resized map[string]bool
}

// crsOf is datacenter.cfg's crs as a property string. Without a threshold, automatic
// rebalancing gets 30 % as pve-ha-manager 5.2.0's scenarios apply it: they were computed with
// proxmox-resource-scheduling 2.0, whose imbalance is not yet divided by sqrt(n-1), against
// 0.3; PVE 9.2's is divided and its threshold in percent.
func crsOf(sc haScenario) string {
	crs, _ := sc.Datacenter["crs"].(map[string]any)
	if crs["ha-auto-rebalance"] != nil && crs["ha-auto-rebalance-threshold"] == nil {
		crs["ha-auto-rebalance-threshold"] = 30 / math.Sqrt(float64(len(sc.Nodes)-1))
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(crs)) {
		out = append(out, fmt.Sprintf("%s=%v", k, crs[k]))
	}
	return strings.Join(out, ",")
}

// autoRebalance tells whether the scenario rebalances automatically.
func (sc haScenario) autoRebalance() bool {
	crs, _ := sc.Datacenter["crs"].(map[string]any)
	return crs["ha-auto-rebalance"] != nil
}

func number(t *testing.T, s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return f
}

func newHAHarness(t *testing.T, sc haScenario) *haHarness {
	c := pvesim.Cluster{CRS: crsOf(sc)}
	for _, n := range sc.Nodes {
		hw := sc.Hardware[n]
		if hw.MaxCPU == 0 {
			hw = haScenarioStats{MaxCPU: 16, MaxMem: 64 << 30}
		}
		c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: n, CPUs: int(hw.MaxCPU), MemoryGiB: hw.MaxMem / (1 << 30)})
	}
	// Every service's guest exists from the start, on the node it is configured or added on:
	// a guest that is no HA resource yet counts for nothing in the HA manager's basic scheduler.
	guests := map[int]pvesim.GuestSpec{}
	// A fake failing service's guest is stopped, so that the HA stack's first start is played.
	// Under the static or dynamic scheduler every guest is stopped, as all are in PVE's test
	// harness until their LRM starts them: the CRM places a service before its start
	// (ha-rebalance-on-start) and leaves one that runs; a guest not running yet puts no load.
	crs, _ := sc.Datacenter["crs"].(map[string]any)
	for sid, cfg := range sc.Services {
		running := cfg["state"] != "stopped" && cfg["state"] != "disabled" && simSID(sid) == sid && crs == nil
		guests[vmidOf(t, sid)] = guestSpec(t, sid, fmt.Sprint(cfg["node"]), running)
	}
	stats, resized := map[string]haScenarioStats{}, map[string]bool{}
	maps.Copy(stats, sc.StaticStats)
	for _, r := range sc.Rounds {
		for _, cmd := range r.Commands {
			f := strings.Fields(cmd)
			switch {
			case len(f) >= 4 && f[0] == "service" && f[2] == "add":
				guests[vmidOf(t, f[1])] = guestSpec(t, f[1], f[3], len(f) > 5 && f[5] == "1")
			case len(f) == 7 && f[2] == "set-static-stats" && stats[f[1]].MaxCPU == 0:
				// The figures of a service added with them are its guest's from the start.
				stats[f[1]] = haScenarioStats{MaxCPU: number(t, f[4]), MaxMem: number(t, f[6]) * (1 << 20)}
			case len(f) == 7 && f[2] == "set-static-stats":
				resized[f[1]] = true
			}
		}
	}
	for sid, st := range stats {
		g, found := guests[vmidOf(t, sid)]
		if !found {
			continue // stats of a service the scenario does not have
		}
		g.Cores, g.MemoryMiB = int(st.MaxCPU), int(math.Round(st.MaxMem/(1<<20)))
		if g.Type == "lxc" && st.MaxCPU != math.Trunc(st.MaxCPU) {
			// A container's fractional CPUs are its cpulimit.
			g.Cores, g.Config = 0, map[string]string{"cpulimit": fmt.Sprint(st.MaxCPU)}
		}
		if resized[sid] {
			// Its size changes while it runs: hot-plugged, within 16 cores.
			g.Cores, g.Config = 16, map[string]string{"hotplug": "network,disk,usb,cpu,memory", "numa": "1", "vcpus": fmt.Sprint(int(st.MaxCPU))}
		}
		guests[vmidOf(t, sid)] = g
	}
	for _, id := range slices.Sorted(maps.Keys(guests)) {
		c.Guests = append(c.Guests, guests[id])
	}
	switch {
	case sc.Rules != nil:
		for _, r := range *sc.Rules {
			r.Resources = slices.Clone(r.Resources)
			for i, sid := range r.Resources {
				r.Resources[i] = simSID(sid)
			}
			c.HARules = append(c.HARules, r)
		}
	case len(sc.Groups) == 0:
		c.HARules = []pvesim.HARuleSpec{} // PVE 9 without rules
	}
	s, err := pvesim.New(c)
	if err != nil {
		t.Fatal(err)
	}
	ha, _ := sc.Datacenter["ha"].(map[string]any)
	if policy, _ := ha["shutdown_policy"].(string); policy != "" {
		if err := s.SetHAShutdownPolicy(policy); err != nil {
			t.Fatal(err)
		}
	}
	for sid, st := range sc.DynamicStats {
		if err := s.SetGuestLoad(vmidOf(t, sid), st.CPU, st.Mem/(1<<30)); err != nil {
			t.Fatal(err)
		}
	}
	h := &haHarness{t: t, sc: sc, s: s, down: map[string]bool{}, fenced: map[string]bool{}, resized: resized}
	for _, g := range sc.Groups {
		p := url.Values{"group": {g.Group}, "nodes": {g.Nodes}}
		if g.Restricted {
			p.Set("restricted", "1")
		}
		if g.Nofailback {
			p.Set("nofailback", "1")
		}
		h.call(http.MethodPost, "/cluster/ha/groups", p)
	}
	for _, sid := range slices.Sorted(maps.Keys(sc.Services)) {
		p := url.Values{"sid": {simSID(sid)}}
		for k, v := range sc.Services[sid] {
			if k != "node" {
				p.Set(k, fmt.Sprint(v))
			}
		}
		h.call(http.MethodPost, "/cluster/ha/resources", p)
		h.fake(sid)
	}
	return h
}

// simSID is the service a scenario's service is played by: one of the harness's fake
// failing services (fa:<id>) is a VM with faults (fake).
func simSID(sid string) string {
	if id, fake := strings.CutPrefix(sid, "fa:"); fake {
		return "vm:" + id
	}
	return sid
}

// fake gives the VM playing a fake failing service fa:<id> its faults
// (Sim/Resources/VirtFail.pm): the id's digits after the first are how many attempts of each
// start and of each migration fail, whether stops fail, whether the service exists (the
// translator leaves out those that do not), and the node the start and migration failures
// happen on (node<digit>, 0 for any).
func (h *haHarness) fake(sid string) {
	id, fake := strings.CutPrefix(sid, "fa:")
	if !fake {
		return
	}
	digit := func(i int) int {
		if i < len(id) {
			return int(id[i] - '0')
		}
		return 0
	}
	f := pvesim.HAFaults{Starts: digit(1), Migrations: digit(2), Stops: digit(3) > 0}
	if n := digit(5); n > 0 {
		f.Node = fmt.Sprintf("node%d", n)
	}
	if err := h.s.SetHAFaults(vmidOf(h.t, sid), f); err != nil {
		h.t.Fatal(err)
	}
}

// vmidOf is the guest id of a service id (vm:101 is 101).
func vmidOf(t *testing.T, sid string) int {
	_, id, _ := strings.Cut(sid, ":")
	vmid, err := strconv.Atoi(id)
	if err != nil {
		t.Fatalf("service id %q: %v", sid, err)
	}
	return vmid
}

func guestSpec(t *testing.T, sid, node string, running bool) pvesim.GuestSpec {
	g := pvesim.GuestSpec{VMID: vmidOf(t, sid), Node: node, Cores: 1, MemoryMiB: 512}
	if strings.HasPrefix(sid, "ct:") {
		g.Type = "lxc"
	}
	if running {
		g.Status = "running"
	}
	return g
}

// call sends an API request as ha-manager would, in process, and fails the test on an error.
func (h *haHarness) call(method, path string, p url.Values) {
	h.t.Helper()
	target, body := "/api2/json"+path, ""
	if method == http.MethodDelete {
		target += "?" + p.Encode()
	} else {
		body = p.Encode()
	}
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.Header.Set("Authorization", "PVEAPIToken="+h.s.APIToken())
	if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	w := httptest.NewRecorder()
	h.s.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		h.t.Fatalf("%s %s %s: %d %s", method, path, body, w.Code, w.Body)
	}
}

func (h *haHarness) run() {
	// The CRM picks the services up in its first round, before any node can fail.
	h.s.RunHARounds(1)
	for i, r := range h.sc.Rounds {
		for _, cmd := range r.Commands {
			h.command(cmd)
		}
		if i == 0 {
			// Nodes round 1 leaves off never came up: the CRM fences and recovers them.
			for _, n := range h.sc.Nodes {
				if !h.down[n] && !slices.Contains(r.Commands, "power "+n+" on") {
					h.down[n] = true
					h.fail(n)
				}
			}
		}
		if h.sc.autoRebalance() {
			// Rebalancing waits its hold duration: PVE's test harness gives each batch of
			// commands five rounds (the first takes the pick-up round), the last one more.
			rounds := 5
			switch {
			case i == len(h.sc.Rounds)-1:
				rounds = 25
			case i == 0:
				rounds--
			}
			h.s.RunHARounds(rounds)
		} else {
			h.settle()
		}
		got := h.s.HAServices()
		for _, sid := range slices.Sorted(maps.Keys(r.Expect)) {
			want := r.Expect[sid]
			if want.State == "absent" {
				want = pvesim.HAService{}
			}
			if got[simSID(sid)] != want {
				h.t.Errorf("round %d %q: %s is %+v, PVE has %+v", i+1, r.Commands, sid, got[simSID(sid)], want)
			}
		}
		if h.t.Failed() {
			return
		}
	}
}

// settle runs HA rounds until nothing changes for a few rounds in a row.
func (h *haHarness) settle() {
	const calm, most = 3, 50
	last, same := h.s.HAServices(), 0
	for range most {
		h.s.RunHARounds(1)
		now := h.s.HAServices()
		if maps.Equal(now, last) {
			if same++; same == calm {
				return
			}
		} else {
			same = 0
		}
		last = now
	}
	h.t.Fatalf("the HA manager does not settle after %d rounds: %+v", most, last)
}

// fail plays a node failing: the CRM fences it and recovers its services. A node with HA
// services has an active LRM, whose watchdog powers the node off once it is cut off: it
// stays off until powered on, even when its network comes back.
func (h *haHarness) fail(node string) {
	for _, svc := range h.s.HAServices() {
		h.fenced[node] = h.fenced[node] || svc.Node == node
	}
	if _, err := h.s.FailNode(node); err != nil {
		h.t.Fatal(err)
	}
}

// command plays one cmdlist entry.
func (h *haHarness) command(cmd string) {
	f := strings.Fields(cmd)
	bad := func() { h.t.Fatalf("command %q: not understood by the harness", cmd) }
	if len(f) < 2 {
		bad()
	}
	if f[0] == "service" {
		f[1] = simSID(f[1])
	}
	switch {
	case f[0] == "delay":
		// More rounds: settle runs them.
	case (f[0] == "power" || f[0] == "network") && len(f) == 3:
		node, on := f[1], f[2] == "on"
		switch {
		case on && h.down[node] && (f[0] == "power" || !h.fenced[node]):
			delete(h.down, node)
			delete(h.fenced, node)
			if err := h.s.SetNodeOnline(node, true); err != nil {
				h.t.Fatal(err)
			}
		case !on && !h.down[node]:
			h.down[node] = true
			h.fail(node)
		}
	case (f[0] == "shutdown" || f[0] == "reboot") && len(f) == 2:
		if err := h.s.ShutdownNode(f[1], f[0] == "reboot"); err != nil {
			h.t.Fatal(err)
		}
		// A node shutting down is off once its LRM is done (at once but under migrate, where
		// it waits for its services to leave); powered on, it is up again.
		h.down[f[1]] = f[0] == "shutdown"
	case f[0] == "crm" && len(f) == 3 && f[2] == "enable-node-maintenance":
		// The CRM drops the request for a node that is not online or while disarmed, and
		// pvesim says so.
		if err := h.s.SetNodeHAState(f[1], "maintenance"); err != nil && !h.down[f[1]] && !h.disarmed {
			h.t.Fatal(err)
		}
	case f[0] == "crm" && len(f) == 4 && f[2] == "disarm-ha":
		// The CRM ignores a second disarm, and pvesim says so.
		if err := h.s.DisarmHA(f[3]); err != nil && !h.disarmed {
			h.t.Fatal(err)
		}
		h.disarmed = true
	case f[0] == "crm" && len(f) == 3 && f[2] == "arm-ha":
		if err := h.s.ArmHA(); err != nil && h.disarmed {
			h.t.Fatal(err)
		}
		h.disarmed = false
	case f[0] == "crm" && len(f) == 3 && f[2] == "disable-node-maintenance":
		if err := h.s.SetNodeHAState(f[1], "online"); err != nil {
			h.t.Fatal(err)
		}
	case f[0] == "service" && len(f) == 3 && slices.Contains([]string{"started", "stopped", "disabled", "ignored"}, f[2]):
		h.call(http.MethodPut, "/cluster/ha/resources/"+f[1], url.Values{"state": {f[2]}})
	case f[0] == "service" && len(f) == 4 && (f[2] == "migrate" || f[2] == "relocate"):
		h.call(http.MethodPost, "/cluster/ha/resources/"+f[1]+"/"+f[2], url.Values{"node": {f[3]}})
	case f[0] == "service" && len(f) >= 4 && f[2] == "add":
		p := url.Values{"sid": {f[1]}, "state": {"started"}}
		if len(f) > 4 {
			p.Set("state", f[4])
		}
		h.call(http.MethodPost, "/cluster/ha/resources", p)
	case f[0] == "service" && len(f) == 4 && f[2] == "stop":
		// ha-manager crm-command stop: the CRM stops a started service and sets its state
		// stopped (next_state_started); in any other state the command waits, dropped by the
		// service's next state change.
		if h.s.HAServices()[f[1]].State == "started" {
			h.call(http.MethodPut, "/cluster/ha/resources/"+f[1], url.Values{"state": {"stopped"}})
		}
	case f[0] == "service" && len(f) == 4 && f[2] == "manual-migrate":
		// A migration outside HA (of an ignored service, or while disarmed in ignore mode).
		if err := h.s.SetGuestNode(vmidOf(h.t, f[1]), f[3]); err != nil {
			h.t.Fatal(err)
		}
	case f[0] == "service" && len(f) >= 5 && f[2] == "set-dynamic-stats":
		// cpu in cores, mem in MiB; a figure not given stays.
		load := map[string]float64{"cpu": -1, "mem": -1}
		for i := 3; i+1 < len(f); i += 2 {
			load[f[i]] = number(h.t, f[i+1])
		}
		if load["mem"] >= 0 {
			load["mem"] /= 1024
		}
		if err := h.s.SetGuestLoad(vmidOf(h.t, f[1]), load["cpu"], load["mem"]); err != nil {
			h.t.Fatal(err)
		}
	case f[0] == "service" && len(f) == 7 && f[2] == "set-static-stats":
		// The VM's vCPUs and memory hot-plugged; a service added with them has them already.
		if h.resized[f[1]] {
			g := h.s.MustGuest(h.t, vmidOf(h.t, f[1]))
			h.call(http.MethodPut, fmt.Sprintf("/nodes/%s/qemu/%d/config", g.Node, g.VMID), url.Values{"vcpus": {fmt.Sprint(int(number(h.t, f[4])))}, "memory": {f[6]}})
		}
	case f[0] == "service" && len(f) == 3 && f[2] == "delete":
		h.call(http.MethodDelete, "/cluster/ha/resources/"+f[1], nil)
	default:
		bad()
	}
}

// A node-affinity rule on one member of a positive group holds for the whole group
// (create_implicit_positive_resource_affinity_node_affinity_rules): when the one node it
// allows fails, neither member is recovered elsewhere, and both come back with the node.
func TestHANodeAffinityOfAPositiveGroup(t *testing.T) {
	strict := []pvesim.HARuleSpec{
		{Rule: "on-node3", Type: "node-affinity", Resources: []string{"vm:101"}, Nodes: []string{"node3"}, Strict: true},
		{Rule: "together", Type: "resource-affinity", Resources: []string{"vm:101", "vm:102"}, Affinity: "positive"},
	}
	on := []string{"power node1 on", "power node2 on", "power node3 on"}
	started := func(node string) pvesim.HAService { return pvesim.HAService{Node: node, State: "started"} }
	newHAHarness(t, haScenario{
		Nodes: []string{"node1", "node2", "node3"},
		Services: map[string]map[string]any{
			"vm:101": {"node": "node3", "state": "started"}, "vm:102": {"node": "node1", "state": "started"},
		},
		Rules: &strict,
		Rounds: []haScenarioRound{
			{Commands: on, Expect: map[string]pvesim.HAService{"vm:101": started("node3"), "vm:102": started("node3")}},
			{Commands: []string{"network node3 off"}, Expect: map[string]pvesim.HAService{
				"vm:101": {Node: "node3", State: "recovery"}, "vm:102": {Node: "node3", State: "recovery"}}},
			{Commands: []string{"power node3 on"}, Expect: map[string]pvesim.HAService{"vm:101": started("node3"), "vm:102": started("node3")}},
		},
	}).run()
}

// The shutdown, disarm and start-failure API refuses what datacenter.cfg, a node's state and
// the HA stack's do not allow, saying why.
func TestHAShutdownAndDisarmRefusals(t *testing.T) {
	s, err := pvesim.New(pvesim.Cluster{Nodes: []pvesim.NodeSpec{{Name: "node1", CPUs: 4, MemoryGiB: 8}, {Name: "node2", CPUs: 4, MemoryGiB: 8, Offline: true}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"unknown policy", s.SetHAShutdownPolicy("stay"), `pvesim: shutdown_policy "stay" is not one of conditional, freeze, failover, migrate`},
		{"offline node", s.ShutdownNode("node2", false), `pvesim: node "node2" is offline already`},
		{"unknown node", s.ShutdownNode("node9", true), `pvesim: no node "node9"`},
		{"arm when armed", s.ArmHA(), "pvesim: the HA stack is not disarmed, and PVE's CRM ignores the command: arm-ha"},
		{"unknown disarm mode", s.DisarmHA("stop"), `pvesim: disarm-ha mode "stop" is not freeze or ignore`},
		{"disarm", s.DisarmHA("ignore"), ""},
		{"disarm twice", s.DisarmHA("freeze"), "pvesim: the HA stack is disarmed already (ignore), and PVE's CRM ignores the command: disarm-ha freeze"},
		{"maintenance when disarmed", s.SetNodeHAState("node1", "maintenance"),
			"pvesim: the HA stack is disarmed, and PVE's CRM ignores the request: enable-node-maintenance node1"},
		{"faults of no HA resource", s.SetHAFaults(100, pvesim.HAFaults{Starts: 1}), "pvesim: guest 100 is no HA resource"},
	} {
		if c.want == "" {
			if c.err != nil {
				t.Errorf("%s: %v", c.name, c.err)
			}
			continue
		}
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("%s: %v, want %s", c.name, c.err, c.want)
		}
	}
}

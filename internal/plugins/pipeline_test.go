package plugins

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

func threeEqualNodes() []scheduler.Node {
	return []scheduler.Node{node("pve1", 8, 32), node("pve2", 8, 32), node("pve3", 8, 32)}
}

// Six identical VMs on three identical empty nodes: each placement debits its node, so they
// land 2-2-2, with ids 100..105 in request order. The exact nodes are fixed by the FNV-1a
// tie-break hash, which is the same on every machine: a change here changes users' plans.
func TestMultiPlacementSpreadsAndTakesDistinctIDs(t *testing.T) {
	reqs := make([]scheduler.Request, 6)
	for i := range reqs {
		reqs[i] = request(fmt.Sprintf("web-%d", i))
		reqs[i].MemoryMiB = 2048
	}
	d, err := mustProfile(scheduler.PluginConfig{}).Schedule(scheduler.Snapshot{Nodes: threeEqualNodes()}, reqs, scheduler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range d.Placements {
		got = append(got, fmt.Sprintf("%s=%s/%d", p.Name, p.Node, p.VMID))
	}
	want := "web-0=pve2/100 web-1=pve1/101 web-2=pve3/102 web-3=pve3/103 web-4=pve2/104 web-5=pve1/105"
	if strings.Join(got, " ") != want {
		t.Fatalf("placements = %s\nwant         %s", strings.Join(got, " "), want)
	}
}

func TestMultiPlacementIsAllOrNothing(t *testing.T) {
	reqs := []scheduler.Request{request("a"), request("b")}
	for i := range reqs {
		reqs[i].Annotations[scheduler.AnnotationVMIDRange] = "200-210"
	}
	used := make([]scheduler.Guest, 0, 10)
	for id := 200; id < 210; id++ {
		used = append(used, running(id, "pve1", 1, 1))
	}
	_, err := mustProfile(scheduler.PluginConfig{}).Schedule(scheduler.Snapshot{Nodes: threeEqualNodes(), Guests: used}, reqs, scheduler.Options{})
	var ue *scheduler.UnschedulableError
	if !errors.As(err, &ue) || err.Error() != `cannot place "b": no free vmid in range 200-210: 11 of 11 in use` {
		t.Fatalf("err = %v", err)
	}
}

// A pinned vmid with several names can place only the first.
func TestPinnedVMIDPlacesOneVM(t *testing.T) {
	reqs := []scheduler.Request{request("a"), request("b")}
	reqs[0].VMID, reqs[1].VMID = 500, 500
	_, err := mustProfile(scheduler.PluginConfig{}).Schedule(scheduler.Snapshot{Nodes: threeEqualNodes()}, reqs, scheduler.Options{})
	want := `vmid: VMID 500 is pinned for "b" but was already given to "a" in the same decision; a pinned vmid can place one VM only`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %s", err, want)
	}
}

// An id pinned by a later request of the same decision is not handed to an earlier one: a
// set of new VMs, some fed a placement data source's VMID, others free, places them all.
func TestPinnedVMIDIsKeptFromEarlierRequests(t *testing.T) {
	reqs := []scheduler.Request{request("a"), request("b"), request("c")}
	reqs[1].VMID = 100
	reqs[2].Annotations[scheduler.AnnotationVMIDRange] = "101-110"
	reqs = append(reqs, request("d"))
	reqs[3].VMID = 101
	p := mustProfile(scheduler.PluginConfig{})
	snap := scheduler.Snapshot{Nodes: threeEqualNodes()}
	for name, schedule := range map[string]func(scheduler.Snapshot, []scheduler.Request, scheduler.Options) (scheduler.Decision, error){
		"Schedule": p.Schedule, "ScheduleSet": p.ScheduleSet,
	} {
		d, err := schedule(snap, reqs, scheduler.Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got []string
		for _, pl := range d.Placements {
			got = append(got, fmt.Sprintf("%s=%d", pl.Name, pl.VMID))
		}
		if want := "a=102 b=100 c=103 d=101"; strings.Join(got, " ") != want {
			t.Errorf("%s: vmids %s, want %s", name, strings.Join(got, " "), want)
		}
	}
}

func TestDeterministicTieBreakSpreadsNames(t *testing.T) {
	p := mustProfile(scheduler.PluginConfig{})
	snap := scheduler.Snapshot{Nodes: threeEqualNodes()}
	seen := map[string]bool{}
	for i := 0; i < 30; i++ {
		name := fmt.Sprintf("vm-%d", i)
		first, err := p.Schedule(snap, []scheduler.Request{request(name)}, scheduler.Options{})
		if err != nil {
			t.Fatal(err)
		}
		again, err := p.Schedule(snap, []scheduler.Request{request(name)}, scheduler.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if first.Placements[0].Node != again.Placements[0].Node {
			t.Fatalf("%s: %s then %s", name, first.Placements[0].Node, again.Placements[0].Node)
		}
		seen[first.Placements[0].Node] = true
	}
	if len(seen) != 3 {
		t.Fatalf("equal nodes chosen for 30 names: %v, want all three", seen)
	}
}

func TestNodeResourcePrefersFreeNode(t *testing.T) {
	nodes := threeEqualNodes()
	nodes[0].CPU, nodes[0].Mem = 0.9, 30*gib
	nodes[1].CPU, nodes[1].Mem = 0.1, 4*gib
	nodes[2].CPU, nodes[2].Mem = 0.5, 16*gib
	d, err := mustProfile(scheduler.PluginConfig{}).Schedule(scheduler.Snapshot{Nodes: nodes}, []scheduler.Request{request("a")}, scheduler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := d.Placements[0]
	if p.Node != "pve2" {
		t.Fatalf("node = %s, want pve2", p.Node)
	}
	if got := p.Candidates[1].Scores["NodeResource"]; got != 88.75 {
		t.Fatalf("pve2 NodeResource = %v, want 50*0.9 + 50*(1-4/32) = 88.75", got)
	}
	// 88.75 plus TaintToleration's 100 (no taint to count).
	want := "a: pve2 (score 188.75; 3/3 nodes feasible), vmid 100 (next free id), storage local-lvm"
	if p.Summary != want {
		t.Fatalf("summary = %q\nwant      %q", p.Summary, want)
	}
}

func TestScoreWeight(t *testing.T) {
	w := int64(3)
	cfg := scheduler.PluginConfig{Scores: map[string]scheduler.PluginSetting{"NodeResource": {Weight: &w}}}
	d, err := mustProfile(cfg).Schedule(scheduler.Snapshot{Nodes: threeEqualNodes()}, []scheduler.Request{request("a")}, scheduler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Placements[0].Candidates[0].Score; got != 400 {
		t.Fatalf("weighted score = %v, want 3*100 + TaintToleration's 100", got)
	}
}

func TestVMIDSelection(t *testing.T) {
	disabled := false
	guests := []scheduler.Guest{
		running(100, "pve1", 1, 1), running(101, "pve1", 1, 1),
		{VMID: 102, Node: "pve1", Type: scheduler.GuestLXC, Status: "stopped"},
	}
	tests := []struct {
		name        string
		cfg         scheduler.PluginConfig
		annotations map[string]string
		pin         int
		bounds      *scheduler.IDBounds
		reserved    []scheduler.Reservation
		want        int
		err         string
	}{
		{name: "next free skips qemu and lxc ids", want: 103},
		{name: "reservations are used ids", reserved: []scheduler.Reservation{{VMID: 103, Node: "pve1"}}, want: 104},
		{name: "datacenter next-id bounds", bounds: &scheduler.IDBounds{Lower: 5000, Upper: 6000}, want: 5000},
		{name: "next-id bounds exhausted", bounds: &scheduler.IDBounds{Lower: 100, Upper: 103}, err: "no free vmid in datacenter next-id range [100, 103)"},
		{name: "range", annotations: map[string]string{scheduler.AnnotationVMIDRange: "100-150"}, want: 103},
		{name: "range exhausted", annotations: map[string]string{scheduler.AnnotationVMIDRange: "100-102"}, err: "no free vmid in range 100-102: 3 of 3 in use"},
		{name: "regex matches whole id", annotations: map[string]string{scheduler.AnnotationVMIDRegex: "10[0-9]"}, want: 103},
		{name: "range beats regex", annotations: map[string]string{scheduler.AnnotationVMIDRange: "200-210", scheduler.AnnotationVMIDRegex: "3[0-9]{2}"}, want: 200},
		{name: "pin beats range", pin: 777, annotations: map[string]string{scheduler.AnnotationVMIDRange: "200-210"}, want: 777},
		{name: "pinned id in use", pin: 101, err: "vmid: VMID 101 is already in use"},
		{name: "disabled range is ignored", cfg: scheduler.PluginConfig{VMIDs: map[string]scheduler.PluginSetting{"Range": {Enable: &disabled}}},
			annotations: map[string]string{scheduler.AnnotationVMIDRange: "200-210"}, want: 103},
		{name: "regex with nothing free", annotations: map[string]string{scheduler.AnnotationVMIDRegex: "10[0-2]"}, err: `no free vmid in 100-999999999 matches regex "10[0-2]"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request("a")
			for k, v := range tt.annotations {
				req.Annotations[k] = v
			}
			req.VMID = tt.pin
			snap := scheduler.Snapshot{Nodes: []scheduler.Node{node("pve1", 64, 256)}, Guests: guests, NextIDBounds: tt.bounds, Reservations: tt.reserved}
			d, err := mustProfile(tt.cfg).Schedule(snap, []scheduler.Request{req}, scheduler.Options{})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Placements[0].VMID; got != tt.want {
				t.Fatalf("vmid = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestReservationsDebitCapacity(t *testing.T) {
	nodes := []scheduler.Node{node("pve1", 8, 8), node("pve2", 8, 8)}
	snap := scheduler.Snapshot{Nodes: nodes, Reservations: []scheduler.Reservation{{VMID: 100, Node: "pve1", VCPUs: 1, MemoryMiB: 8192}}}
	d, err := mustProfile(scheduler.PluginConfig{}).Schedule(snap, []scheduler.Request{request("a")}, scheduler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p := d.Placements[0]; p.Node != "pve2" || p.VMID != 101 {
		t.Fatalf("placement = %s/%d, want pve2/101", p.Node, p.VMID)
	}
}

func TestSticky(t *testing.T) {
	nodes := threeEqualNodes()
	nodes[0].Mem = 30 * gib // the existing guest's node is the worst choice for a new VM
	nodes[0].Storages = append(nodes[0].Storages, scheduler.Storage{Name: "nfs", Content: []string{"images"}, Active: true, Total: gib})
	web := running(150, "pve1", 1, 1)
	web.Name = "web"
	twin := running(151, "pve2", 1, 1)
	twin.Name = "twin"
	twin2 := running(152, "pve3", 1, 1)
	twin2.Name = "twin"
	tmpl := scheduler.Guest{VMID: 9000, Node: "pve1", Name: "web", Type: scheduler.GuestQEMU, Status: "stopped", Template: true}
	snap := scheduler.Snapshot{Nodes: nodes, Guests: []scheduler.Guest{web, twin, twin2, tmpl}}

	tests := []struct {
		name     string
		reqs     func() []scheduler.Request
		opts     scheduler.Options
		existing []bool // per placement
		// moved: the guest is placed anew on another node, keeping its VMID (a resource fed
		// with both migrates it); otherwise a placement not kept is a new VM with a free id.
		moved bool
	}{
		{name: "kept where it is", reqs: func() []scheduler.Request { return []scheduler.Request{request("web")} },
			opts: scheduler.Options{Sticky: true}, existing: []bool{true}},
		{name: "not without the option", reqs: func() []scheduler.Request { return []scheduler.Request{request("web")} },
			existing: []bool{false}},
		{name: "two guests with the name: scheduled as new", reqs: func() []scheduler.Request { return []scheduler.Request{request("twin")} },
			opts: scheduler.Options{Sticky: true}, existing: []bool{false}},
		{name: "node no longer matches the regex", opts: scheduler.Options{Sticky: true}, existing: []bool{false}, moved: true,
			reqs: func() []scheduler.Request {
				r := request("web")
				r.Annotations[scheduler.AnnotationNodeRegex] = "pve[23]"
				return []scheduler.Request{r}
			}},
		{name: "a different pinned vmid", opts: scheduler.Options{Sticky: true}, existing: []bool{false},
			reqs: func() []scheduler.Request { r := request("web"); r.VMID = 160; return []scheduler.Request{r} }},
		{name: "the same pinned vmid", opts: scheduler.Options{Sticky: true}, existing: []bool{true},
			reqs: func() []scheduler.Request { r := request("web"); r.VMID = 150; return []scheduler.Request{r} }},
		{name: "pinned storage exists on its node", opts: scheduler.Options{Sticky: true}, existing: []bool{true},
			reqs: func() []scheduler.Request { r := request("web"); r.Storage = "nfs"; return []scheduler.Request{r} }},
		{name: "kept once per decision", opts: scheduler.Options{Sticky: true}, existing: []bool{true, false},
			reqs: func() []scheduler.Request { return []scheduler.Request{request("web"), request("web")} }},
	}
	p := mustProfile(scheduler.PluginConfig{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := p.Schedule(snap, tt.reqs(), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			for i, pl := range d.Placements {
				if pl.Existing != tt.existing[i] {
					t.Fatalf("placement %d = %+v, want existing=%v", i, pl, tt.existing[i])
				}
				if pl.Existing && (pl.Node != "pve1" || pl.VMID != 150) {
					t.Fatalf("kept placement = %s/%d, want pve1/150", pl.Node, pl.VMID)
				}
				if tt.moved && (pl.Node == "pve1" || pl.VMID != 150) {
					t.Fatalf("moved placement = %s/%d, want another node and the guest's vmid 150", pl.Node, pl.VMID)
				}
				if !pl.Existing && !tt.moved && (pl.Node == "pve1" || pl.VMID == 150 || pl.VMID == 9000) {
					t.Fatalf("new placement = %s/%d, want another node and a free id", pl.Node, pl.VMID)
				}
				if len(pl.Candidates) != 3 {
					t.Fatalf("%d candidates, want every node", len(pl.Candidates))
				}
			}
		})
	}
}

// The sticky check sees what earlier placements of the same decision took: here "big" fills
// pve1, so "web" at its requested size no longer fits there and, with nowhere else to go, the
// decision fails with the reason.
func TestStickyCountsEarlierPlacements(t *testing.T) {
	web := running(150, "pve1", 1, 2)
	web.Name = "web"
	snap := scheduler.Snapshot{Nodes: []scheduler.Node{node("pve1", 8, 8)}, Guests: []scheduler.Guest{web}}
	big, again := request("big"), request("web")
	big.MemoryMiB, again.MemoryMiB = 5120, 4096
	_, err := mustProfile(scheduler.PluginConfig{}).Schedule(snap, []scheduler.Request{big, again}, scheduler.Options{Sticky: true})
	var ue *scheduler.UnschedulableError
	if !errors.As(err, &ue) || ue.Request != "web" || ue.Candidates[0].Reasons[0] != "MemoryOvercommit: (7168+4096)/8192 MiB = 1.375 > 1" {
		t.Fatalf("err = %v", err)
	}
}

func TestCheckNode(t *testing.T) {
	snap := scheduler.Snapshot{Nodes: threeEqualNodes(), Guests: []scheduler.Guest{running(150, "pve1", 1, 1)}}
	req := request("vm150")
	req.Annotations[scheduler.AnnotationNodeRegex] = "pve[23]"
	p := mustProfile(scheduler.PluginConfig{})
	if got := p.CheckNode(snap, req, "pve1", 150); strings.Join(got, "|") != `NodeRegex: "pve1" does not match "pve[23]"` {
		t.Fatalf("CheckNode(pve1) = %q", got)
	}
	if got := p.CheckNode(snap, req, "pve2", 150); got != nil {
		t.Fatalf("CheckNode(pve2) = %q, want nil", got)
	}
	if got := p.CheckNode(snap, req, "pve9", 150); strings.Join(got, "|") != `node "pve9" is not part of the cluster` {
		t.Fatalf("CheckNode(pve9) = %q", got)
	}
}

func TestCheckNodeExcludesTheGuestItself(t *testing.T) {
	snap := scheduler.Snapshot{Nodes: []scheduler.Node{node("pve1", 8, 8)}, Guests: []scheduler.Guest{running(100, "pve1", 4, 8)}}
	req := request("vm100")
	req.MemoryMiB = 8192
	if got := mustProfile(scheduler.PluginConfig{}).CheckNode(snap, req, "pve1", 100); got != nil {
		t.Fatalf("CheckNode = %q, want nil", got)
	}
}

func TestStorageChoice(t *testing.T) {
	n := node("pve1", 8, 32)
	n.Storages = []scheduler.Storage{
		{Name: "local", Content: []string{"iso", "vztmpl"}, Active: true, Total: 900 * gib},
		{Name: "big", Content: []string{"images"}, Active: false, Total: 800 * gib},
		{Name: "ceph", Content: []string{"images", "rootdir"}, Active: true, Shared: true, Total: 500 * gib, Used: 100 * gib},
		{Name: "local-lvm", Content: []string{"images"}, Active: true, Total: 300 * gib},
		{Name: "overfull", Content: []string{"images"}, Active: true, Total: 900 * gib, Used: 950 * gib},
	}
	tests := []struct{ pin, want, err string }{
		{want: "ceph"},
		{pin: "local-lvm", want: "local-lvm"},
		{pin: "big", err: `storage "big" is not active on pve1`},
		{pin: "local", err: `storage "local" on pve1 does not hold VM images`},
		{pin: "nfs", err: `storage "nfs" does not exist on pve1`},
	}
	for _, tt := range tests {
		req := request("a")
		req.Storage = tt.pin
		d, err := mustProfile(scheduler.PluginConfig{}).Schedule(scheduler.Snapshot{Nodes: []scheduler.Node{n}}, []scheduler.Request{req}, scheduler.Options{})
		if tt.err != "" {
			var ue *scheduler.UnschedulableError
			if !errors.As(err, &ue) || !strings.Contains(ue.Candidates[0].Reasons[0], tt.err) {
				t.Errorf("pin %q: err = %v, want reason %q", tt.pin, err, tt.err)
			}
			continue
		}
		if err != nil || d.Placements[0].Storage != tt.want {
			t.Errorf("pin %q: storage = %v (%v), want %s", tt.pin, d, err, tt.want)
		}
	}
}

func TestUnschedulableStorage(t *testing.T) {
	req := request("a")
	req.Storage = "nfs"
	_, err := mustProfile(scheduler.PluginConfig{}).Schedule(scheduler.Snapshot{Nodes: threeEqualNodes()}, []scheduler.Request{req}, scheduler.Options{})
	if err == nil || err.Error() != `cannot place "a": 0/3 nodes are available: 3 node(s) had no usable storage "nfs"` {
		t.Fatalf("err = %v", err)
	}
	full := node("pve1", 8, 32)
	full.Storages = []scheduler.Storage{{Name: "iso", Content: []string{"iso"}, Active: true, Total: gib}}
	_, err = mustProfile(scheduler.PluginConfig{}).Schedule(scheduler.Snapshot{Nodes: []scheduler.Node{full}}, []scheduler.Request{request("a")}, scheduler.Options{})
	if err == nil || err.Error() != `cannot place "a": 0/1 nodes are available: 1 node(s) had no active storage for VM images` {
		t.Fatalf("err = %v", err)
	}
}

func TestEmptyCluster(t *testing.T) {
	_, err := mustProfile(scheduler.PluginConfig{}).Schedule(scheduler.Snapshot{}, []scheduler.Request{request("a")}, scheduler.Options{})
	if err == nil || err.Error() != `cannot place "a": 0/0 nodes are available: the cluster reports no nodes` {
		t.Fatalf("err = %v", err)
	}
}

func TestValidateRequest(t *testing.T) {
	tests := []struct {
		key, value, want string
	}{
		{scheduler.AnnotationNodeRegex, "pve[", `annotations["node.qemu-scheduler/regex"]: invalid regex "pve[": error parsing regexp: missing closing ]: ` + "`[`"},
		{scheduler.AnnotationVMIDRegex, "(12", `annotations["vmid.qemu-scheduler/regex"]: invalid regex "(12"`},
		{scheduler.AnnotationVMIDRange, "150", `invalid range "150": want START-END, e.g. 200-299`},
		{scheduler.AnnotationVMIDRange, "a-10", `invalid range "a-10": START and END must be whole numbers`},
		{scheduler.AnnotationVMIDRange, " 100-150", `START and END must be whole numbers`},
		{scheduler.AnnotationVMIDRange, "300-200", `start 300 is greater than end 200`},
		{scheduler.AnnotationVMIDRange, "1-10", `ids must lie within 100-999999999`},
		{scheduler.AnnotationVMIDRange, "100-1000000000", `ids must lie within 100-999999999`},
	}
	p := mustProfile(scheduler.PluginConfig{})
	for _, tt := range tests {
		req := request("a")
		req.Annotations[tt.key] = tt.value
		err := p.ValidateRequest(&req)
		var ie *scheduler.InputError
		if !errors.As(err, &ie) || ie.Attribute != "annotations" || ie.Key != tt.key || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s=%q: err = %v, want InputError containing %q", tt.key, tt.value, err, tt.want)
		}
	}
	sizes := []struct {
		change func(r *scheduler.Request)
		want   string
	}{
		{func(r *scheduler.Request) { r.VMID = 99 }, "vmid: 99 is outside the valid VMID range 100-999999999"},
		{func(r *scheduler.Request) { r.VMID = 1000000000 }, "vmid: 1000000000 is outside the valid VMID range 100-999999999"},
		{func(r *scheduler.Request) { r.Cores = 0 }, "cores: must be at least 1, got 0"},
		{func(r *scheduler.Request) { r.Sockets = -1 }, "sockets: must be at least 1, got -1"},
		{func(r *scheduler.Request) { r.MemoryMiB = 0 }, "memory: must be at least 1 MiB, got 0"},
	}
	for _, tt := range sizes {
		bad := request("a")
		tt.change(&bad)
		var ie *scheduler.InputError
		if err := p.ValidateRequest(&bad); !errors.As(err, &ie) || err.Error() != tt.want {
			t.Errorf("err = %v, want InputError %q", err, tt.want)
		}
	}
}

// Every registered plugin answers to the name it is registered under, and the names are the
// reference's, in pipeline order (Range before Regex gives Range precedence).
func TestRegistry(t *testing.T) {
	var names [3][]string
	for i, specs := range [][]scheduler.PluginSpec{Registry.Filters, Registry.Scores, Registry.VMIDs} {
		for _, spec := range specs {
			names[i] = append(names[i], spec.Name)
		}
	}
	got := fmt.Sprint(names[0], names[1], names[2])
	if want := "[NodeName NodeOnline NodeRegex NodeSelector TaintToleration CPUOvercommit MemoryOvercommit StorageCapacity VMAffinity TopologySpread] [NodeResource NodeAffinity TaintToleration VMAffinity TopologySpread LeastAllocated MostAllocated BalancedAllocation] [Range Regex]"; got != want {
		t.Fatalf("registered names = %s, want %s", got, want)
	}
	for _, specs := range [][]scheduler.PluginSpec{Registry.Filters, Registry.Scores, Registry.VMIDs} {
		for _, spec := range specs {
			plugin, err := spec.New(nil)
			if err != nil {
				t.Fatalf("%s with default args: %v", spec.Name, err)
			}
			if plugin.Name() != spec.Name {
				t.Errorf("plugin registered as %s calls itself %s", spec.Name, plugin.Name())
			}
		}
	}
}

// A profile is shared by concurrent decisions (the plugins' caches fill up meanwhile): each
// gets the same answer as a lone one. Run with -race, as make test does.
func TestProfileIsSafeForConcurrentDecisions(t *testing.T) {
	p := mustProfile(scheduler.PluginConfig{})
	snap := scheduler.Snapshot{Nodes: threeEqualNodes()}
	req := request("web")
	req.Annotations[scheduler.AnnotationNodeRegex] = "pve[12]"
	req.Annotations[scheduler.AnnotationVMIDRegex] = `7\d\d`
	results := make(chan string, 8)
	for i := 0; i < cap(results); i++ {
		go func() {
			d, err := p.Schedule(snap, []scheduler.Request{req}, scheduler.Options{})
			if err != nil {
				results <- err.Error()
				return
			}
			results <- d.Placements[0].Summary
		}()
	}
	want := "web: pve2 (score 200; 2/3 nodes feasible), vmid 700 (regex 7\\d\\d), storage local-lvm"
	for i := 0; i < cap(results); i++ {
		if got := <-results; got != want {
			t.Fatalf("decision = %s\nwant       %s", got, want)
		}
	}
}

// An annotation whose plugin the config disables is ignored by the decision, and the profile
// says so, naming the plugin: a user who wrote it expects it to hold.
func TestIgnoredAnnotations(t *testing.T) {
	off := false
	prof, err := NewProfile(scheduler.PluginConfig{
		Filters: map[string]scheduler.PluginSetting{NodeRegexName: {Enable: &off}},
		VMIDs:   map[string]scheduler.PluginSetting{RegexName: {Enable: &off}},
	})
	if err != nil {
		t.Fatal(err)
	}
	req := scheduler.Request{Name: "a", Annotations: map[string]string{
		scheduler.AnnotationNodeRegex: "pve3", scheduler.AnnotationVMIDRegex: "2[0-9]{3}", scheduler.AnnotationVMIDRange: "300-310"}}
	got := prof.IgnoredAnnotations(&req)
	want := map[string]string{scheduler.AnnotationNodeRegex: NodeRegexName, scheduler.AnnotationVMIDRegex: RegexName}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ignored %v, want %v (the range's plugin is enabled)", got, want)
	}
	all, err := NewProfile(scheduler.PluginConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if got := all.IgnoredAnnotations(&req); len(got) != 0 {
		t.Fatalf("default profile ignores %v, want nothing", got)
	}
}

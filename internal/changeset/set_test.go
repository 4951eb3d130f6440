package changeset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/planhints"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/plugins"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

func registryProfile(t *testing.T) *scheduler.Profile {
	t.Helper()
	p, err := scheduler.NewProfile(plugins.Registry, scheduler.PluginConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Four 16 GiB VMs, two per 64 GiB node, all growing to 40 GiB: each alone fits its node
// ((16+40)/64), but the plan's growth does not. Planned in parallel, as Terraform plans them,
// every check gives the node's figure after the plan; planned one after the other (more than
// -parallelism of them), the second VM of a node still does.
func TestChangeSetGrowthCountsThePlansOtherChanges(t *testing.T) {
	snap := scheduler.Snapshot{}
	for i := 1; i <= 2; i++ {
		snap.Nodes = append(snap.Nodes, scheduler.Node{Name: fmt.Sprintf("n%d", i), Online: true, MaxCPU: 16, MaxMem: 64 << 30})
	}
	for i := 0; i < 4; i++ {
		snap.Guests = append(snap.Guests, scheduler.Guest{VMID: 100 + i, Node: fmt.Sprintf("n%d", i%2+1), Name: fmt.Sprintf("w%d", i),
			Type: scheduler.GuestQEMU, Status: "running", CPUs: 2, MaxMem: 16 << 30})
	}
	p := registryProfile(t)
	grown := scheduler.Request{Cores: 2, Sockets: 1, MemoryMiB: 40960}
	over := "MemoryOvercommit: (40960+40960)/65536 MiB = 1.25 > 1"
	check := func(c *Set, i int) string {
		size := SizeOf(grown)
		size.Node = fmt.Sprintf("n%d", i%2+1)
		s, err := c.Grow(context.Background(), snap, 100+i, size)
		if err != nil {
			t.Error(err)
		}
		return strings.Join(p.CheckNode(s, grown, fmt.Sprintf("n%d", i%2+1), 100+i), "; ")
	}
	c := New(nil, nil)
	c.QuietFor = 500 * time.Millisecond // room for a loaded machine to start the four
	got := make([]string, 4)
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = check(c, i) }()
	}
	wg.Wait()
	if want := []string{over, over, over, over}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("checks planned in parallel\n got %q\nwant %q", got, want)
	}
	c = New(nil, nil)
	for i := range got {
		got[i] = check(c, i)
	}
	if want := []string{"", "", over, over}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("checks planned one after the other\n got %q\nwant %q", got, want)
	}
	// Beyond -parallelism the first VMs of a node are planned before the others: a warning says
	// which of the plan's growth its figures count.
	c = New(nil, nil)
	grow := func(i int) scheduler.Snapshot {
		size := SizeOf(grown)
		size.Node = fmt.Sprintf("n%d", i%2+1)
		s, err := c.Grow(context.Background(), snap, 100+i, size)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := grow(0)
	if got, want := c.GrowthNote(first, "n1"), "of VM 100 (w0);"; !strings.Contains(got, want) || !strings.Contains(got, "-parallelism") {
		t.Errorf("after w0 grew, the note on n1 is %q, want it to name %q and -parallelism", got, want)
	}
	second := grow(2)
	if got, want := c.GrowthNote(second, "n1"), "of VMs 100 (w0), 102 (w2);"; !strings.Contains(got, want) {
		t.Errorf("after w0 and w2 grew, the note on n1 is %q, want it to name %q", got, want)
	}
	if got, want := c.GrowthNote(first, "n1"), "of VM 100 (w0);"; !strings.Contains(got, want) {
		t.Errorf("the note of w0's figures, after w2 grew, is %q, want it to name only %q, as its figures count", got, want)
	}
	if got := c.GrowthNote(second, "n2"); got != "" {
		t.Errorf("nothing grew on n2, yet its note is %q", got)
	}
	if g := snap.Guests[0]; g.MaxMem != 16<<30 {
		t.Errorf("the caller's snapshot changed: guest 100 has %d bytes", g.MaxMem)
	}
}

// Terraform refreshes each existing VM just before it plans it, and a loaded machine can space
// the plans of one plan's VMs further apart than the quiet wait: a VM that grows waits for the
// plans of the VMs this process has read, so its check gives the node's figure after the plan.
// Three 8 GiB VMs of a 64 GiB node grow to 30 GiB; w1 and w2 are planned well after w0.
func TestChangeSetGrowthWaitsForTheVMsRead(t *testing.T) {
	snap := scheduler.Snapshot{Nodes: []scheduler.Node{{Name: "n1", Online: true, MaxCPU: 16, MaxMem: 64 << 30}}}
	for i := 0; i < 3; i++ {
		snap.Guests = append(snap.Guests, scheduler.Guest{VMID: 100 + i, Node: "n1", Name: fmt.Sprintf("w%d", i),
			Type: scheduler.GuestQEMU, Status: "running", CPUs: 2, MaxMem: 8 << 30})
	}
	p := registryProfile(t)
	grown := scheduler.Request{Cores: 2, Sockets: 1, MemoryMiB: 30720}
	clk := newManualClock()
	c := New(nil, nil)
	c.Clock = clk
	c.QuietFor = 20 * time.Millisecond
	for i := 0; i < 3; i++ {
		c.Reading(100 + i) // the refresh of each, before its plan
	}
	first := make(chan string, 1)
	done := make(chan struct{}, 3)
	go func() {
		s, err := c.Grow(context.Background(), snap, 100, SizeOf(grown))
		if err != nil {
			t.Error(err)
		}
		first <- strings.Join(p.CheckNode(s, grown, "n1", 100), "; ")
		done <- struct{}{}
	}()
	// The late plans of the others, as a loaded machine spaces them: ten quiet waits later.
	for i := 0; i < 10; i++ {
		if d := clk.nextWait(t); d != c.QuietFor {
			t.Fatalf("w0 waits %v for the VMs read, want QuietFor", d)
		}
		clk.advance(c.QuietFor)
	}
	clk.nextWait(t)
	for _, vmid := range []int{101, 102} {
		go func() {
			if _, err := c.Grow(context.Background(), snap, vmid, SizeOf(grown)); err != nil {
				t.Error(err)
			}
			done <- struct{}{}
		}()
		clk.nextWait(t)
	}
	clk.run(t, 5*time.Millisecond, done, 3)
	if got, want := <-first, "MemoryOvercommit: (61440+30720)/65536 MiB = 1.4063 > 1"; got != want {
		t.Errorf("the first VM planned checked %q, want the node's figure after the plan %q", got, want)
	}
}

// The apply follows the plan's placements (planhints): the creates of the first wave leave the
// room the plan gave the later ones. Two 8 GiB nodes take 4+4 and 6+2 GiB in exactly one way;
// the two 4 GiB VMs decided alone would go one per node and strand the 6 GiB VM. When the
// cluster changed since the plan so that its room is gone, the apply decides without it.
func TestChangeSetApplyFollowsThePlan(t *testing.T) {
	var nodes []scheduler.Node
	for _, n := range []string{"n1", "n2"} {
		nodes = append(nodes, scheduler.Node{Name: n, Online: true, MaxCPU: 16, MaxMem: 8 << 30,
			Storages: []scheduler.Storage{{Name: "local-lvm", Content: []string{"images"}, Active: true, Total: 100 << 30}}})
	}
	vm := func(name string, mib int) Member {
		return Member{Profile: registryProfile(t), Req: scheduler.Request{Name: name, Cores: 1, Sockets: 1, MemoryMiB: mib}}
	}
	set := []Member{vm("first-0", 4096), vm("first-1", 4096), vm("later-0", 6144), vm("later-1", 2048)}
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		changed []scheduler.Guest // what another actor created between the plan and the apply
		want    string
	}{
		{"unchanged cluster", nil, "first-0 first-1 same node, later-0 placed"},
		// The set no longer fits; beside the plan's room the first wave does not either, so
		// the apply decides without it, and what fits is created.
		{"room taken since the plan", []scheduler.Guest{
			{VMID: 900, Node: "n1", Type: scheduler.GuestQEMU, Status: "running", CPUs: 1, MaxMem: 1 << 30},
			{VMID: 901, Node: "n2", Type: scheduler.GuestQEMU, Status: "running", CPUs: 1, MaxMem: 1 << 30}},
			"first-0 first-1 apart"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			plan := New(planhints.NewIn(dir, "e"), nil)
			snap := scheduler.Snapshot{Nodes: nodes}
			for _, m := range set {
				if err := plan.Plan(ctx, snap, m); err != nil {
					t.Fatalf("plan %s: %v", m.Req.Name, err)
				}
			}
			apply := New(planhints.NewIn(dir, "e"), nil)
			snap.Guests = tc.changed
			for _, m := range set[:2] { // the first wave; the later creates wait for it
				if err := apply.Plan(ctx, snap, m); err != nil {
					t.Fatalf("apply's plan of %s: %v", m.Req.Name, err)
				}
			}
			where := map[string]string{}
			for _, m := range set {
				p, err := apply.Decide(snap, m)
				if err != nil {
					where[m.Req.Name] = "unplaced"
					continue
				}
				where[m.Req.Name] = p.Node
				snap.Reservations = append(snap.Reservations, p.Reservation(&m.Req)) // the ledger
			}
			if h := apply.Hint(ReduceNewVMs); h != ApplyHint(ReduceNewVMs) {
				t.Errorf("after the apply's creates, a refusal ends %q, want the apply's hint (no \"before anything is created\")", h)
			}
			if h := plan.Hint(ReduceNewVMs); h != DestroyHint(ReduceNewVMs) {
				t.Errorf("in the plan, a refusal ends %q, want %q", h, DestroyHint(ReduceNewVMs))
			}
			// The same refusal comes from the plan Terraform makes of a create at apply, beside
			// the creates of the VMs that still fit: it says what holds in each case.
			if h := DestroyHint(ReduceNewVMs); strings.Contains(h, "before anything is created") || !strings.Contains(h, Replanned) {
				t.Errorf("a refusal before the apply's creates ends %q: it claims nothing is created, or lacks what holds at apply (%q)", h, Replanned)
			}
			got := "first-0 first-1 apart"
			if where["first-0"] == where["first-1"] {
				got = "first-0 first-1 same node"
				if where["later-0"] != "unplaced" {
					got += ", later-0 placed"
				}
			}
			if got != tc.want {
				t.Errorf("placements %v: %s, want %s", where, got, tc.want)
			}
		})
	}
}

// An apply that finds no placements of its plan (a saved plan applied on another machine, or
// without the plan's working directory) decides its creates beyond the first wave as they come:
// a refusal then does not blame a changed cluster but says how to keep the plan's placements.
// With the plan's placements found, the refusal is the apply's usual one.
func TestChangeSetApplyWithoutThePlanSaysSo(t *testing.T) {
	snap := scheduler.Snapshot{Nodes: []scheduler.Node{{Name: "n1", Online: true, MaxCPU: 16, MaxMem: 8 << 30,
		Storages: []scheduler.Storage{{Name: "local-lvm", Content: []string{"images"}, Active: true, Total: 100 << 30}}}}}
	vm := Member{Profile: registryProfile(t), Req: scheduler.Request{Name: "a", Cores: 1, Sockets: 1, MemoryMiB: 1024}}
	ctx := context.Background()
	elsewhere := New(planhints.NewIn(t.TempDir(), "e"), nil)
	if _, err := elsewhere.Decide(snap, vm); err != nil {
		t.Fatal(err)
	}
	if h := elsewhere.Hint(ReduceNewVMs); strings.Contains(h, "The cluster changed since the plan") || !strings.Contains(h, planhints.DirEnv) ||
		!strings.Contains(h, "-parallelism") {
		t.Errorf("an apply without its plan's placements ends a refusal %q, want how to keep them (%s, -parallelism), not a changed cluster", h, planhints.DirEnv)
	}
	dir := t.TempDir()
	if err := New(planhints.NewIn(dir, "e"), nil).Plan(ctx, snap, vm); err != nil {
		t.Fatal(err)
	}
	apply := New(planhints.NewIn(dir, "e"), nil)
	if _, err := apply.Decide(snap, vm); err != nil {
		t.Fatal(err)
	}
	if h := apply.Hint(ReduceNewVMs); h != ApplyHint(ReduceNewVMs) {
		t.Errorf("an apply with its plan's placements ends a refusal %q, want %q", h, ApplyHint(ReduceNewVMs))
	}
}

// A refused VM's plan fails anyway, so it waits longer for the plan's other new VMs than a VM
// that fits: its line then counts the whole set, however far apart a loaded machine spaces
// the plans, and it is the plan's only error. Two 4 GiB VMs fill the 8 GiB node; three more
// arrive 200 ms apart.
func TestChangeSetRefusalCountsTheWholeSet(t *testing.T) {
	snap := scheduler.Snapshot{Nodes: []scheduler.Node{{Name: "n1", Online: true, MaxCPU: 16, MaxMem: 8 << 30,
		Storages: []scheduler.Storage{{Name: "local-lvm", Content: []string{"images"}, Active: true, Total: 100 << 30}}}}}
	clk := newManualClock()
	c := New(nil, nil)
	c.Clock = clk
	// Plans spaced 200 ms apart, more than QuietFor: a refusal that waited QuietFor alone
	// would count fewer VMs. The refused wait (5 x 190 ms, under firstBurstMax) leaves a
	// loaded machine 750 ms of stall between two plans.
	c.QuietFor = 190 * time.Millisecond
	vm := func(n string) Member {
		return Member{Profile: registryProfile(t), Req: scheduler.Request{Name: n, Cores: 1, Sockets: 1, MemoryMiB: 4096}}
	}
	for _, n := range []string{"a", "b"} {
		if err := c.Plan(context.Background(), snap, vm(n)); err != nil {
			t.Fatal(err)
		}
	}
	errs := make([]error, 3)
	done := make(chan struct{}, 1)
	go func() { errs[0] = c.Plan(context.Background(), snap, vm("c")); done <- struct{}{} }()
	clk.nextWait(t)
	for i, n := range []string{"d", "e"} {
		clk.advance(200 * time.Millisecond) // the next plan, as a loaded machine spaces them
		errs[i+1] = c.Plan(context.Background(), snap, vm(n))
	}
	clk.run(t, 10*time.Millisecond, done, 1)
	// One refusal, the first's, reports the set: the others add no error of their own.
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "only 2 of the plan's 5 new VMs can be placed together") {
		t.Errorf("refusal: %v, want it to count the plan's 5 new VMs", errs[0])
	}
	if errs[1] != nil || errs[2] != nil {
		t.Errorf("the other refused VMs report %v and %v, want nothing", errs[1], errs[2])
	}
	// A VM planned after the refusal adds none either.
	if err := c.Plan(context.Background(), snap, vm("f")); err != nil {
		t.Errorf("a VM refused after the set's refusal reports %v, want nothing", err)
	}
}

// twoSmallNodes is a cluster of two online 8 GiB nodes, n1 and n2, each with 100 GiB of
// local-lvm: small enough that a few GiB decide what fits together.
func twoSmallNodes() scheduler.Snapshot {
	snap := scheduler.Snapshot{}
	for _, n := range []string{"n1", "n2"} {
		snap.Nodes = append(snap.Nodes, scheduler.Node{Name: n, Online: true, MaxCPU: 16, MaxMem: 8 << 30,
			Storages: []scheduler.Storage{{Name: "local-lvm", Content: []string{"images"}, Active: true, Total: 100 << 30}}})
	}
	return snap
}

// memReq is a request of one vCPU and mib MiB.
func memReq(name string, mib int) scheduler.Request {
	return scheduler.Request{Name: name, Cores: 1, Sockets: 1, MemoryMiB: mib}
}

// A placement data source read after the plan's new VMs did not see them: the new VMs are
// placed again beside its picks, and when they no longer fit, the read fails (all or nothing).
func TestChangeSetReadAfterNewVMsRefits(t *testing.T) {
	snap, p, ctx := twoSmallNodes(), registryProfile(t), context.Background()
	for _, tc := range []struct {
		name string
		pick int    // MiB of the data source's VM
		want string // the read's error, "" for none
	}{
		{"the new VMs fit beside the pick", 3072, ""},
		{"the new VMs no longer fit", 4096, `beside this read's picks they do not all fit; below, why "ext-0", a name of the plan's qemuscheduler_placement data sources, does not.` +
			"\n\n0/2 nodes are available"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(nil, nil)
			for _, n := range []string{"web-0", "web-1"} { // 5 GiB each: one per node
				if err := c.Plan(ctx, snap, Member{Profile: p, Req: memReq(n, 5120)}); err != nil {
					t.Fatal(err)
				}
			}
			_, err := c.Read(ctx, snap, p, []scheduler.Request{memReq("ext-0", tc.pick)})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("read: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "only 2 of the plan's 3 new VMs")):
				t.Errorf("read: %v, want an error saying %q and how many of the new VMs and names fit together", err, tc.want)
			case tc.want != "" && strings.Contains(err.Error(), "even without"):
				t.Errorf("read: %v, says the VM fits nowhere alone, where the picks take its room", err)
			case tc.want != "" && ReadReduce(err) != ReduceEither:
				t.Errorf("a read refused with the plan's new VMs says to reduce %q, want %q", ReadReduce(err), ReduceEither)
			}
		})
	}
}

// A VM that grows after the plan's new VMs were planned: they are placed again beside the
// growth, the growth's check counts them where they go, and when they no longer fit, the
// growth's plan says so. g (2 GiB on n1, 8 GiB nodes) grows to 6 GiB; the new 4 GiB VM went
// to the emptier n1 and moves to n2, unless n2 is as full.
func TestChangeSetGrowthPlacesTheNewVMsAgain(t *testing.T) {
	p, ctx := registryProfile(t), context.Background()
	for _, tc := range []struct {
		name string
		n2   int    // MiB of the guest on n2
		want string // the growth's error, "" for none
	}{
		{"placed again", 4096, ""},
		{"no longer fit", 6144, `"g" grows in this plan, and beside its new size the plan's new VMs no longer fit together; below, why "new-0" does not.

0/2 nodes are available: 2 node(s) exceeded memory overcommit ratio 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := twoSmallNodes()
			snap.Guests = []scheduler.Guest{
				{VMID: 100, Node: "n1", Name: "g", Type: scheduler.GuestQEMU, Status: "running", CPUs: 1, MaxMem: 2 << 30},
				{VMID: 101, Node: "n2", Name: "other", Type: scheduler.GuestQEMU, Status: "running", CPUs: 1, MaxMem: uint64(tc.n2) << 20},
			}
			c := New(nil, nil)
			c.QuietFor = 0
			if err := c.Plan(ctx, snap, Member{Profile: p, Req: scheduler.Request{Name: "new-0", Cores: 1, Sockets: 1, MemoryMiB: 4096}}); err != nil {
				t.Fatal(err)
			}
			if got := c.Members["new-0"].Tentative.Node; got != "n1" {
				t.Fatalf("new-0 tentatively on %s, want n1: the test does not exercise the placement again", got)
			}
			grown := scheduler.Request{Cores: 1, Sockets: 1, MemoryMiB: 6144}
			after, err := c.Grow(ctx, snap, 100, SizeOf(grown))
			if tc.want != "" {
				var ue *scheduler.UnschedulableError
				if !errors.As(BesideGrowth(err, "g"), &ue) || ue.Message != tc.want {
					t.Fatalf("grow: %v, want an error saying %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Members["new-0"].Tentative.Node; got != "n2" {
				t.Errorf("new-0 tentatively on %s after the growth, want n2", got)
			}
			if reasons := p.CheckNode(after, scheduler.Request{Cores: 1, Sockets: 1, MemoryMiB: tc.n2}, "n2", 101); len(reasons) != 0 {
				t.Errorf("n2 after the plan: %v", reasons)
			}
			// The growth's check counts the new VM where it goes: on n2, 4+4 GiB fill it.
			if reasons := p.CheckNode(after, scheduler.Request{Cores: 1, Sockets: 1, MemoryMiB: tc.n2 + 1}, "n2", 101); len(reasons) == 0 {
				t.Error("the snapshot after the growth does not count the new VM on n2")
			}
		})
	}
}

// The apply's creates decided together stay as decided: the VM decided first is placed beside
// the others' joint placement, and a later one keeps its place there while it holds, although
// alone it would score another node higher (the required vm_affinity of app, which only n1
// takes, would break).
func TestChangeSetApplyKeepsTheJointDecision(t *testing.T) {
	snap := scheduler.Snapshot{}
	for _, n := range []struct {
		name string
		cpu  float64
	}{{"n1", 0.9}, {"n2", 0.1}} {
		snap.Nodes = append(snap.Nodes, scheduler.Node{Name: n.name, Online: true, MaxCPU: 16, MaxMem: 16 << 30, CPU: n.cpu,
			Labels:   map[string]string{"zone": n.name},
			Storages: []scheduler.Storage{{Name: "local-lvm", Content: []string{"images"}, Active: true, Total: 100 << 30}}})
	}
	p := registryProfile(t)
	app := scheduler.Request{Name: "app", Cores: 1, Sockets: 1, MemoryMiB: 1024, NodeSelector: map[string]string{"zone": "n1"},
		VMAffinity: []scheduler.VMGroupTerm{{Tags: []string{"db"}, TopologyKey: "node"}}}
	db := scheduler.Request{Name: "db", Cores: 1, Sockets: 1, MemoryMiB: 1024, Tags: []string{"db"}}
	alone, err := p.Schedule(snap, []scheduler.Request{db}, scheduler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := New(nil, nil)
	c.Members["db"] = &Member{Profile: p, Req: db}
	first, err := c.Decide(snap, Member{Profile: p, Req: app})
	if err != nil {
		t.Fatal(err)
	}
	if first.Node == alone.Placements[0].Node {
		t.Fatalf("app went to %s, where db alone goes: the test does not exercise the kept decision", first.Node)
	}
	// The ledger holds app from here: the snapshot carries it as a reservation.
	snap.Reservations = append(snap.Reservations, first.Reservation(&app))
	second, err := c.Decide(snap, Member{Profile: p, Req: db})
	if err != nil {
		t.Fatal(err)
	}
	if second.Node != first.Node {
		t.Errorf("db decided on %s, app on %s: the joint decision was not kept", second.Node, first.Node)
	}
}

// Pending gives the VMs of the set not created yet their places, each once: the joint
// decision's for a member decided with another, else its tentative one, and nothing for a VM
// the view shows already (a guest, a ledger's reservation).
func TestChangeSetPending(t *testing.T) {
	c := New(nil, nil)
	web := func(name string) scheduler.Request { return scheduler.Request{Name: name, Tags: []string{"web"}} }
	c.Members["a"] = &Member{Req: web("a"), Tentative: &scheduler.Placement{Name: "a", Node: "n1"}}
	c.Members["b"] = &Member{Req: web("b"), Tentative: &scheduler.Placement{Name: "b", Node: "n1"}}
	c.Members["c"] = &Member{Req: web("c"), Tentative: &scheduler.Placement{Name: "c", Node: "n2"}}
	c.batch["b"] = scheduler.Placement{Name: "b", Node: "n2", VMID: 101}
	snap := scheduler.Snapshot{Guests: []scheduler.Guest{{VMID: 102, Name: "c", Node: "n2"}}}
	got := map[string]string{}
	for _, r := range c.Pending(snap).Reservations {
		if _, twice := got[r.Name]; twice || !slices.Equal(r.Tags, []string{"web"}) {
			t.Errorf("reservation %+v: twice, or without the member's tags", r)
		}
		got[r.Name] = r.Node
	}
	if want := map[string]string{"a": "n1", "b": "n2"}; !maps.Equal(got, want) {
		t.Errorf("pending %v, want %v", got, want)
	}
}

// The disk growth of the plan is counted per storage: a local storage per node, a shared one
// once for the cluster, with the plan's new VMs' disks on it.
func TestChangeSetDiskGrowthPerStorage(t *testing.T) {
	snap := scheduler.Snapshot{Reservations: []scheduler.Reservation{{VMID: -1, Node: "n2", Name: "new", Storage: "ceph", DiskBytes: 30 * scheduler.GiB}}}
	for _, n := range []string{"n1", "n2"} {
		snap.Nodes = append(snap.Nodes, scheduler.Node{Name: n, Online: true, MaxCPU: 16, MaxMem: 16 << 30, Storages: []scheduler.Storage{
			{Name: "local", Content: []string{"images"}, Active: true, Total: 100 * scheduler.GiB, Used: 50 * scheduler.GiB},
			{Name: "ceph", Content: []string{"images"}, Active: true, Shared: true, Total: 1000 * scheduler.GiB, Used: 900 * scheduler.GiB}}})
	}
	c := New(nil, nil)
	c.QuietFor = 0
	grow := func(vmid int, node string, added map[string]uint64) {
		if _, err := c.Grow(context.Background(), snap, vmid, PlannedSize{CPUs: 1, Memory: 1 << 30, Node: node, Added: added}); err != nil {
			t.Fatal(err)
		}
	}
	grow(100, "n1", map[string]uint64{"local": 40 * scheduler.GiB, "ceph": 40 * scheduler.GiB})
	grow(101, "n2", map[string]uint64{"local": 40 * scheduler.GiB, "ceph": 20 * scheduler.GiB})
	// n1's local: 40 of 50 free; ceph: 40 + 20 grown and 30 new of 100 free.
	if got := strings.Join(c.StorageShort(snap, 100), "; "); got != "" {
		t.Errorf("VM 100: %q, want nothing (90 of 100 GiB on ceph)", got)
	}
	grow(102, "n1", map[string]uint64{"local": 20 * scheduler.GiB, "ceph": 11 * scheduler.GiB})
	ceph := "StorageCapacity: ceph has 100 GiB free, the plan's disks grow by 71 GiB there and its new VMs need 30 GiB"
	if got, want := strings.Join(c.StorageShort(snap, 100), "; "), ceph+"; StorageCapacity: local has 50 GiB free, the plan's disks grow by 60 GiB there"; got != want {
		t.Errorf("VM 100: %q\nwant %q", got, want)
	}
	if got := strings.Join(c.StorageShort(snap, 101), "; "); got != ceph {
		t.Errorf("VM 101 (n2's local has room): %q\nwant %q", got, ceph)
	}
}

// A placement data source read after the plan's new VMs, whose picks made alone strand them,
// is placed together with them: two 4 GiB names and new VMs of 6 and 2 GiB on two 8 GiB nodes
// fit in one way only (the names on one node, the VMs on the other). Deciding the names alone
// spread them, one per node, and the plan was refused with a set that fits.
func TestChangeSetReadPlacedWithTheNewVMs(t *testing.T) {
	snap, p, ctx := twoSmallNodes(), registryProfile(t), context.Background()
	c := New(nil, nil)
	for _, m := range []scheduler.Request{memReq("six", 6144), memReq("two", 2048)} {
		if err := c.Plan(ctx, snap, Member{Profile: p, Req: m}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := c.Read(ctx, snap, p, []scheduler.Request{memReq("d-0", 4096), memReq("d-1", 4096)})
	if err != nil {
		t.Fatalf("read: %v, want the names placed beside the new VMs", err)
	}
	if len(d.Placements) != 2 || d.Placements[0].Node != d.Placements[1].Node || d.Placements[0].VMID == d.Placements[1].VMID {
		t.Fatalf("picks %+v, want both names on one node with distinct VMIDs", d.Placements)
	}
	for _, name := range []string{"six", "two"} {
		if m := c.Members[name]; m.Tentative == nil || m.Tentative.Node == d.Placements[0].Node {
			t.Errorf("%s: tentative %v, want the node the picks leave free", name, m.Tentative)
		}
	}
	if c.Picks["d-0"].Node != d.Placements[0].Node || c.Picks["d-1"].Node != d.Placements[1].Node {
		t.Errorf("the picks kept for the plan %v differ from the read's answer %+v", c.Picks, d.Placements)
	}
}

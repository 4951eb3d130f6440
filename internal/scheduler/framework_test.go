package scheduler

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// probe is a filter and a score that records what the framework hands it.
type probe struct {
	preFilters, preScores int
	preFilterErr          error
	// guests maps node name to the guests Filter saw there, as "vmid:tags".
	guests map[string][]string
	state  *CycleState
}

func (*probe) Name() string { return "Probe" }

func (p *probe) PreFilter(s *CycleState, _ *Request, nodes []*NodeInfo) error {
	p.preFilters++
	s.Write("Probe", len(nodes))
	p.state = s
	return p.preFilterErr
}

func (p *probe) Filter(s *CycleState, _ *Request, n *NodeInfo) *Rejection {
	if s != p.state {
		panic("Filter got another state than PreFilter wrote")
	}
	var seen []string
	for _, g := range n.Guests {
		seen = append(seen, strings.Join(append([]string{itoa(g.VMID)}, g.Tags...), ":"))
	}
	p.guests[n.Node.Name] = seen
	return nil
}

func (p *probe) PreScore(*CycleState, *Request, []*NodeInfo) { p.preScores++ }

// Score is the node's position; NormalizeScores maps the highest to 100 and the rest to 0.
func (p *probe) Score(_ *CycleState, _ *Request, n *NodeInfo) float64 {
	return float64(n.Node.MaxCPU)
}

func (p *probe) NormalizeScores(_ *CycleState, _ *Request, scores []NodeScore) {
	top := 0.0
	for _, s := range scores {
		top = max(top, s.Score)
	}
	for i := range scores {
		if scores[i].Score == top {
			scores[i].Score = 100
		} else {
			scores[i].Score = 0
		}
	}
}

func probeProfile(t *testing.T, p *probe) *Profile {
	t.Helper()
	reg := Registry{
		Filters: []PluginSpec{{Name: "Probe", New: func(map[string]string) (Plugin, error) { return p, nil }}},
		Scores:  []PluginSpec{{Name: "Probe", New: func(map[string]string) (Plugin, error) { return p, nil }}},
	}
	return testProfile(t, reg, PluginConfig{})
}

// The pre-steps run once per request, not once per node, and the earlier placements of the
// call and the reservations are guests of their node with their tags.
func TestPreStepsOncePerRequestAndAssumedGuests(t *testing.T) {
	p := &probe{guests: map[string][]string{}}
	prof := probeProfile(t, p)
	nodes := testNodes("n1", "n2", "n3")
	nodes[2].MaxCPU = 16 // the normaliser makes n3 the only 100
	snap := Snapshot{
		Nodes: nodes,
		Guests: []Guest{
			{VMID: 100, Node: "n1", Status: "stopped", Tags: []string{"db"}},
			{VMID: 101, Node: "n1", Template: true},
		},
		Reservations: []Reservation{{VMID: 102, Node: "n2", Name: "r", VCPUs: 1, MemoryMiB: 1, Tags: []string{"web"}}},
	}
	reqs := []Request{
		{Name: "a", Cores: 1, Sockets: 1, MemoryMiB: 1, Tags: []string{"web"}},
		{Name: "b", Cores: 1, Sockets: 1, MemoryMiB: 1},
	}
	d, err := prof.Schedule(snap, reqs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.preFilters != 2 || p.preScores != 2 {
		t.Fatalf("PreFilter ran %d times, PreScore %d times; want once per request (2)", p.preFilters, p.preScores)
	}
	if d.Placements[0].Node != "n3" || d.Placements[0].Candidates[2].Scores["Probe"] != 100 || d.Placements[0].Candidates[0].Scores["Probe"] != 0 {
		t.Fatalf("normalised scores not used: %+v", d.Placements[0].Candidates)
	}
	want := map[string][]string{"n1": {"100:db"}, "n2": {"102:web"}, "n3": {"103:web"}}
	if !reflect.DeepEqual(p.guests, want) {
		t.Fatalf("the second request saw guests %v, want %v (templates out, stopped in, assumed with tags)", p.guests, want)
	}
}

// A pre-filter error rejects the request at once, named after it; CheckNode reports it.
func TestPreFilterRejectsRequest(t *testing.T) {
	p := &probe{guests: map[string][]string{}, preFilterErr: &UnschedulableError{Message: "no group member anywhere"}}
	prof := probeProfile(t, p)
	snap := Snapshot{Nodes: testNodes("n1")}
	_, err := prof.Schedule(snap, []Request{{Name: "a", Cores: 1, Sockets: 1, MemoryMiB: 1}}, Options{})
	var ue *UnschedulableError
	if !errors.As(err, &ue) || ue.Request != "a" {
		t.Fatalf("err = %v, want an UnschedulableError for request a", err)
	}
	if got := prof.CheckNode(snap, Request{Name: "a"}, "n1", 0); len(got) != 1 || !strings.Contains(got[0], "no group member anywhere") {
		t.Fatalf("CheckNode = %v, want the pre-filter's reason", got)
	}
}

// Sticky placement and CheckNode see the node without the guest being checked, but with the
// placements made earlier in the call.
func TestKeptGuestIsLeftOutOfItsOwnView(t *testing.T) {
	p := &probe{guests: map[string][]string{}}
	prof := probeProfile(t, p)
	snap := Snapshot{
		Nodes:  testNodes("n1"),
		Guests: []Guest{{VMID: 100, Node: "n1", Name: "keep-me", Status: "running", Tags: []string{"web"}}, {VMID: 101, Node: "n1", Status: "running"}},
	}
	reqs := []Request{{Name: "new", Cores: 1, Sockets: 1, MemoryMiB: 1, Tags: []string{"x"}}, {Name: "keep-me", Cores: 1, Sockets: 1, MemoryMiB: 1}}
	d, err := prof.Schedule(snap, reqs, Options{Sticky: true})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Placements[1].Existing {
		t.Fatalf("keep-me was not kept: %+v", d.Placements[1])
	}
	if want := []string{"101", "102:x"}; !reflect.DeepEqual(p.guests["n1"], want) {
		t.Fatalf("sticky view of n1 = %v, want %v", p.guests["n1"], want)
	}
	if got := prof.CheckNode(snap, reqs[1], "n1", 100); got != nil || !reflect.DeepEqual(p.guests["n1"], []string{"101"}) {
		t.Fatalf("CheckNode = %v, view %v; want passing without guest 100", got, p.guests["n1"])
	}
}

// A guest about to run (pending: being created, or not started yet) weighs on the live
// figures as a running one would; a running guest is in them already, a stopped one is not.
func TestPendingGuestRaisesLiveFigures(t *testing.T) {
	nodes := testNodes("n1")
	nodes[0].Mem = 1 << 30
	g := func(vmid int, status string, pending bool) Guest {
		return Guest{VMID: vmid, Node: "n1", Status: status, Pending: pending, CPUs: 2, MaxMem: 1 << 30}
	}
	infos := NodeInfos(&Snapshot{Nodes: nodes, Guests: []Guest{g(100, "running", false), g(101, "stopped", false), g(102, "stopped", true), g(103, "running", true)}})
	ni := infos[0]
	if ni.AllocCPU != 6 || ni.Mem != 2<<30 || ni.CPU != 2.0/8 {
		t.Fatalf("alloc cpu %v (want 6: running, pending, pending running), live mem %d GiB (want 2: host + the pending stopped one), cpu %v (want 0.25)", ni.AllocCPU, ni.Mem>>30, ni.CPU)
	}
}

// rejectNode refuses one node, as a node entering HA maintenance is refused.
type rejectNode string

func (rejectNode) Name() string { return "RejectNode" }
func (n rejectNode) Filter(_ *CycleState, _ *Request, ni *NodeInfo) *Rejection {
	if ni.Node.Name == string(n) {
		return &Rejection{Reason: "in maintenance"}
	}
	return nil
}

// A named guest whose node no longer passes is placed anew on another node with its own VMID,
// by Schedule and by the joint placement alike: fed to another provider's VM, the new node
// migrates it, where a new VMID would destroy it and create another.
func TestMovedGuestKeepsItsVMID(t *testing.T) {
	reg := Registry{Filters: []PluginSpec{{Name: "RejectNode", New: func(map[string]string) (Plugin, error) { return rejectNode("n1"), nil }}}}
	prof := testProfile(t, reg, PluginConfig{})
	snap := Snapshot{Nodes: testNodes("n1", "n2"), Guests: []Guest{{VMID: 2000, Node: "n1", Name: "clone-1", Status: "running"}}}
	reqs := []Request{{Name: "clone-1", Cores: 1, Sockets: 1, MemoryMiB: 1}, {Name: "clone-2", Cores: 1, Sockets: 1, MemoryMiB: 1}}
	for name, schedule := range map[string]func(Snapshot, []Request, Options) (Decision, error){"Schedule": prof.Schedule, "jointly": prof.scheduleJointly} {
		d, err := schedule(snap, reqs, Options{Sticky: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		moved, other := d.Placements[0], d.Placements[1]
		if moved.Node != "n2" || moved.VMID != 2000 || moved.Existing || !strings.Contains(moved.Summary, "vmid 2000 (the existing guest's, which leaves n1)") {
			t.Errorf("%s: clone-1 = %s/%d existing %v (%s), want moved to n2 keeping vmid 2000", name, moved.Node, moved.VMID, moved.Existing, moved.Summary)
		}
		if other.VMID == 2000 {
			t.Errorf("%s: clone-2 took the moved guest's vmid 2000", name)
		}
	}
	// Pinned to another id, the request is another VM: it gets that id.
	pinned := []Request{{Name: "clone-1", Cores: 1, Sockets: 1, MemoryMiB: 1, VMID: 2100}}
	if d, err := prof.Schedule(snap, pinned, Options{Sticky: true}); err != nil || d.Placements[0].VMID != 2100 {
		t.Errorf("pinned 2100: %+v, %v", d.Placements, err)
	}
}

package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// cpuFit is a capacity filter: the node's vCPUs may not be overcommitted.
type cpuFit struct{}

func (cpuFit) Name() string { return "CPUFit" }

func (cpuFit) Filter(_ *CycleState, r *Request, n *NodeInfo) *Rejection {
	if n.AllocCPU+float64(r.VCPUs()) <= float64(n.Node.MaxCPU) {
		return nil
	}
	return &Rejection{Reason: fmt.Sprintf("CPUFit: %v+%d > %d", n.AllocCPU, r.VCPUs(), n.Node.MaxCPU), Group: "had too few CPUs"}
}

func cpuFitProfile(t *testing.T) *Profile {
	t.Helper()
	return testProfile(t, Registry{Filters: []PluginSpec{{Name: "CPUFit", New: func(map[string]string) (Plugin, error) { return cpuFit{}, nil }}}}, PluginConfig{})
}

func cpuRequests(cores ...int) []Request {
	reqs := make([]Request, len(cores))
	for i, c := range cores {
		reqs[i] = Request{Name: fmt.Sprintf("vm-%d", i), Cores: c, Sockets: 1, MemoryMiB: 1}
	}
	return reqs
}

// Bin packing the greedy order gets wrong: 3+3+2 and 4+4 on two 8-CPU nodes, the 3s first.
// The set fits jointly, and the SetError of one VM more counts the largest subset.
func TestScheduleSetPacksWhatGreedyStrands(t *testing.T) {
	p := cpuFitProfile(t)
	snap := Snapshot{Nodes: testNodes("n1", "n2")}
	reqs := cpuRequests(3, 3, 4, 4, 2)
	if _, err := p.Schedule(snap, reqs, Options{}); err == nil {
		t.Fatal("the greedy pass packed the set: the test does not exercise the search")
	}
	d, err := p.ScheduleSet(snap, reqs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	load := map[string]int{}
	for i, pl := range d.Placements {
		load[pl.Node] += reqs[i].Cores
		if pl.VMID != 100+i || pl.Name != reqs[i].Name {
			t.Fatalf("placement %d = %s/%d, want %s/%d", i, pl.Name, pl.VMID, reqs[i].Name, 100+i)
		}
	}
	if load["n1"] != 8 || load["n2"] != 8 {
		t.Fatalf("loads %v, want both nodes full", load)
	}
	extra := cpuRequests(3, 3, 4, 4, 2, 1)
	_, err = p.ScheduleSet(snap, extra, Options{})
	var se *SetError
	var ue *UnschedulableError
	if !errors.As(err, &se) || !errors.As(err, &ue) || se.Placed != 5 || se.Total != 6 || len(se.Unplaced) != 1 || ue.Request != se.Unplaced[0] {
		t.Fatalf("err = %#v, want a SetError with 5 of 6 placed", err)
	}
	want := fmt.Sprintf("cannot place %q: 0/2 nodes are available: 2 node(s) had too few CPUs\nonly 5 of the plan's 6 new VMs can be placed together; cannot place: %s", ue.Request, ue.Request)
	if err.Error() != want {
		t.Fatalf("err = %q\nwant  %q", err, want)
	}
}

// Twelve alike VMs on eight alike nodes, one VM too many: the search proves it without trying
// every arrangement (the nodes are interchangeable, and so are the VMs).
func TestScheduleSetSymmetryBoundsTheSearch(t *testing.T) {
	p := cpuFitProfile(t)
	snap := Snapshot{Nodes: testNodes("n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8")}
	reqs := cpuRequests(5, 5, 5, 5, 5, 5, 5, 5, 3, 3, 3, 3)
	for i := range snap.Nodes[:5] {
		snap.Nodes[i].MaxCPU = 7 // five nodes cannot take a 5 and a 3, so only three 3s fit
	}
	s, _ := newTestSearch(p, &snap, reqs)
	if s.solve() {
		t.Fatal("placed 12 VMs that need 4 nodes of 8 CPUs for the pairs, of 3")
	}
	if s.work > 20_000 {
		t.Fatalf("the search did %d units of work; the symmetry should keep it small", s.work)
	}
	_, err := p.ScheduleSet(snap, reqs, Options{})
	var se *SetError
	if !errors.As(err, &se) || se.Placed != 11 || !strings.HasSuffix(err.Error(), "cannot place: vm-11") {
		t.Fatalf("err = %v, want 11 of 12 placed", err)
	}
}

// A VM of the set that fits on no node even alone is refused for itself: its error says so,
// not that only part of the set fits (which would send the user looking for room).
func TestScheduleSetNamesAVMThatFitsNowhereAlone(t *testing.T) {
	p := cpuFitProfile(t)
	snap := Snapshot{Nodes: testNodes("n1", "n2")}
	_, err := p.ScheduleSet(snap, cpuRequests(2, 9), Options{})
	var se *SetError
	if !errors.As(err, &se) || !se.Alone || se.Request != "vm-1" || strings.Contains(err.Error(), "can be placed together") ||
		!strings.HasSuffix(err.Error(), aloneLine) {
		t.Fatalf("err = %v (%#v), want vm-1 refused alone", err, se)
	}
	// Two VMs that each fit alone but not together keep the line on the set.
	_, err = p.ScheduleSet(snap, cpuRequests(8, 8, 8), Options{})
	if !errors.As(err, &se) || se.Alone || !strings.Contains(err.Error(), "only 2 of the plan's 3 new VMs") {
		t.Fatalf("err = %v, want the set's line", err)
	}
}

// Errors no arrangement of nodes changes are Schedule's, not a SetError.
func TestScheduleSetPassesThroughInputAndVMIDErrors(t *testing.T) {
	p := cpuFitProfile(t)
	snap := Snapshot{Nodes: testNodes("n1"), NextIDBounds: &IDBounds{Lower: 100, Upper: 101}}
	_, err := p.ScheduleSet(snap, cpuRequests(1, 1), Options{})
	var se *SetError
	var ue *UnschedulableError
	if errors.As(err, &se) || !errors.As(err, &ue) || !strings.Contains(err.Error(), "no free vmid") {
		t.Fatalf("err = %v, want the VMID error", err)
	}
	_, err = p.ScheduleSet(snap, cpuRequests(0), Options{})
	var ie *InputError
	if !errors.As(err, &ie) || ie.Attribute != "cores" {
		t.Fatalf("err = %v, want the input error on cores", err)
	}
}

// The large-neighbourhood search, which takes over beyond the exact search's share of the
// budget, frees placed VMs to make room: from a branch with both small VMs on one node, the
// third 5-CPU VM fits only once a small one moves next to another 5.
func TestLNSMovesAPlacedVM(t *testing.T) {
	p := cpuFitProfile(t)
	snap := Snapshot{Nodes: testNodes("n1", "n2", "n3")}
	reqs := cpuRequests(5, 5, 5, 3, 3, 3)
	s, _ := newTestSearch(p, &snap, reqs)
	small := slices.IndexFunc(s.classes, func(c *vmClass) bool { return c.rep.Cores == 3 })
	s.push(small, 0)
	s.push(small, 0)
	s.deepest = slices.Clone(s.stack)
	if !s.lns(lnsStep) {
		t.Fatal("the large-neighbourhood search did not place the set")
	}
	load := make([]int, 3)
	for _, st := range s.stack {
		load[st.node] += reqs[st.req].Cores
	}
	if !slices.Equal(load, []int{8, 8, 8}) {
		t.Fatalf("loads %v, want a 5 and a 3 on every node", load)
	}
}

// A refusal after the search gave up counts the most VMs the search placed together: the
// large-neighbourhood search's best placement, not only what the error's own short search
// finds again. Seven VMs of 5, 5, 5, 3, 3, 3 and 3 CPUs on three 8-CPU nodes: at most six fit
// (a 5 and a 3 on each), which the LNS reaches from both 3s stacked on one node.
func TestScheduleSetGaveUpCountsTheLNSBest(t *testing.T) {
	p := cpuFitProfile(t)
	snap := Snapshot{Nodes: testNodes("n1", "n2", "n3")}
	reqs := cpuRequests(5, 5, 5, 3, 3, 3, 3)
	s, run := newTestSearch(p, &snap, reqs)
	s.complete = false
	small := slices.IndexFunc(s.classes, func(c *vmClass) bool { return c.rep.Cores == 3 })
	s.push(small, 0)
	s.push(small, 0)
	s.deepest = slices.Clone(s.stack)
	if s.lns(10 * lnsStep) {
		t.Fatal("the large-neighbourhood search placed a set that does not fit")
	}
	if s.best != 6 {
		t.Fatalf("best = %d after the LNS, want its 6", s.best)
	}
	err := s.failure(run)
	var se *SetError
	if !errors.As(err, &se) || !se.GaveUp || se.Placed != 6 || !strings.Contains(err.Error(), "having placed 6 of the plan's 7 new VMs") {
		t.Fatalf("err = %v (%+v), want the search's giving up with 6 placed", err, se)
	}
}

// A search that runs out of its budget proves nothing: its error says that it gave up and the
// set may still fit, never "only N of M".
func TestScheduleSetGaveUpSaysSo(t *testing.T) {
	p := cpuFitProfile(t)
	snap := Snapshot{Nodes: testNodes("n1", "n2")}
	reqs := cpuRequests(3, 3, 4, 4, 2, 1)
	s, run := newTestSearch(p, &snap, reqs)
	s.budget, s.complete = 1, false
	if s.solve() || s.proven {
		t.Fatal("a search of one unit of work placed or refused the set")
	}
	err := s.failure(run)
	var se *SetError
	if !errors.As(err, &se) || !se.GaveUp || se.Maximal || strings.Contains(err.Error(), "only ") ||
		!strings.Contains(err.Error(), "gave up after its budget") || !strings.Contains(err.Error(), "may still fit") {
		t.Fatalf("err = %v (%+v), want the search's giving up", err, se)
	}
	// The whole search proves it, and says only then how many fit.
	_, err = p.ScheduleSet(snap, reqs, Options{})
	if !errors.As(err, &se) || se.GaveUp || !se.Maximal || !strings.Contains(err.Error(), "only 5 of the plan's 6 new VMs") {
		t.Fatalf("err = %v, want the proven refusal", err)
	}
}

// newTestSearch is the joint search of every request of reqs as new VMs, VMIDs from 100 in
// request order, with its run.
func newTestSearch(p *Profile, snap *Snapshot, reqs []Request) (*search, *run) {
	run := p.newRun(snap, reqs, Options{})
	fresh := make([]int, len(reqs))
	vmids := map[int]int{}
	for i := range reqs {
		fresh[i], vmids[i] = i, 100+i
	}
	return newSearch(p, run.infos, snap, reqs, fresh, vmids), run
}

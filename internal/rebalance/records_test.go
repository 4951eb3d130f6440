package rebalance

import (
	"reflect"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/nodelabels"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// recorded gives a guest a placement record with this policy.
func recorded(g scheduler.Guest, policy scheduler.Request) scheduler.Guest {
	g.Recorded = &scheduler.Recorded{Policy: policy}
	return g
}

var (
	apartFromCP = scheduler.Request{VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: []string{"cp"}, TopologyKey: "node"}}}
	maintenance = scheduler.Taint{Key: nodelabels.TaintMaintenance, Effect: nodelabels.NoSchedule}
)

// The control-plane case of issue 24: a rebalance over the opt-in tag only, with no rule of its
// own, must not move a control-plane VM next to another one. Without records it would.
func TestRecordKeepsControlPlaneApart(t *testing.T) {
	ns := nodes("pve1", "pve2", "pve3")
	ns[2].Taints = []scheduler.Taint{maintenance}
	guests := []scheduler.Guest{vm(101, "pve1", 1, 1, "cp", "web"), vm(102, "pve2", 1, 1, "cp", "web"), vm(103, "pve3", 1, 1, "cp", "web")}
	in := input(t, ns, guests...)
	if got := moves(mustPlan(t, in)); len(got) != 1 || got[0] == "" {
		t.Fatalf("without records: moves %v, want vm103 moved next to another control plane (the defect)", got)
	}
	for i := range guests {
		guests[i] = recorded(guests[i], apartFromCP)
	}
	in = input(t, ns, guests...)
	plan := mustPlan(t, in)
	if len(plan.Moves) != 0 || len(plan.Kept) != 1 || plan.Kept[0].VMID != 103 {
		t.Fatalf("with records: plan %+v, want vm103 kept", plan)
	}
	if r := plan.Kept[0].Reason; !strings.Contains(r, "policy violation on pve3") || !strings.Contains(r, "VMAntiAffinity: pve1 already runs 1 guest tagged [cp]") {
		t.Errorf("kept reason %q does not name the maintenance and the recorded anti-affinity", r)
	}
}

// A recorded guest is checked against its own rules, not the data source's; a guest without a
// record against the data source's.
func TestRecordReplacesDataSourcePolicy(t *testing.T) {
	in := input(t, nodes("pve1", "pve2", "pve3"),
		recorded(vm(100, "pve3", 1, 1, "web"), scheduler.Request{Annotations: map[string]string{scheduler.AnnotationNodeRegex: "pve3"}}),
		vm(101, "pve3", 1, 1, "web"))
	in.Policy.Annotations[scheduler.AnnotationNodeRegex] = "pve[12]"
	plan := mustPlan(t, in)
	if got := moves(plan); len(got) != 1 || !strings.HasPrefix(got[0], "vm101:pve3>") {
		t.Fatalf("moves %v, want only vm101 (vm100's record allows pve3 only)", got)
	}
}

// The disruption budget: two members of one anti-affinity group violate, one moves.
func TestMaxMovesPerGroup(t *testing.T) {
	ns := nodes("pve1", "pve2", "pve3", "pve4", "pve5")
	ns[0].Taints, ns[1].Taints = []scheduler.Taint{maintenance}, []scheduler.Taint{maintenance}
	var guests []scheduler.Guest
	for i, n := range []string{"pve1", "pve2", "pve3"} {
		guests = append(guests, recorded(vm(101+i, n, 1, 1, "cp", "web"), apartFromCP))
	}
	in := input(t, ns, guests...)
	in.MaxMovesPerGroup = 1
	plan := mustPlan(t, in)
	if got := moves(plan); len(got) != 1 || !strings.HasPrefix(got[0], "vm101:pve1>") {
		t.Fatalf("moves %v, want vm101 only", got)
	}
	if len(plan.Kept) != 1 || plan.Kept[0].VMID != 102 ||
		!strings.Contains(plan.Kept[0].Reason, "max_moves_per_group (1) reached for the group tagged [cp]: this plan already moves 1 of its members") {
		t.Fatalf("kept %+v, want vm102 with the budget named", plan.Kept)
	}
	in.MaxMovesPerGroup = 2
	if got := moves(mustPlan(t, in)); len(got) != 2 {
		t.Fatalf("budget 2: moves %v, want both", got)
	}
}

// HighNodeUtilization empties the least used node onto the fullest node that takes each guest;
// a node under the thresholds never receives.
func TestHighNodeUtilizationEmptiesANode(t *testing.T) {
	in := input(t, nodes("pve1", "pve2", "pve3"),
		vm(100, "pve1", 1, 5, "web"), vm(101, "pve1", 1, 5, "web"),
		vm(200, "pve2", 5, 50, "web"),
		vm(300, "pve3", 3, 30, "web"))
	in.RemovePolicyViolations = false
	in.HighNodeUtilization = &HighUtilization{CPUThreshold: 25, MemoryThreshold: 25}
	plan := mustPlan(t, in)
	if want := []string{"vm100:pve1>pve2", "vm101:pve1>pve2"}; !reflect.DeepEqual(moves(plan), want) {
		t.Fatalf("moves %v, want %v (pve2 is the fullest)", moves(plan), want)
	}
	if r := plan.Moves[0].Reason; !strings.Contains(r, "HighNodeUtilization: pve1 is under the thresholds (cpu 20%, memory 10%) and is emptied") {
		t.Errorf("reason %q", r)
	}
	if !strings.Contains(plan.Summary, "2 emptying") {
		t.Errorf("summary %q", plan.Summary)
	}
	if after := plan.After[0]; after.RunningGuests != 0 {
		t.Errorf("pve1 after: %+v, want empty", after)
	}
	// Two nodes under the thresholds: the emptier gives to the fuller one? Never: both are
	// being emptied, so their guests go to pve2 only.
	in.HighNodeUtilization = &HighUtilization{CPUThreshold: 40, MemoryThreshold: 40}
	plan = mustPlan(t, in)
	for _, m := range plan.Moves {
		if m.To != "pve2" {
			t.Errorf("move %+v goes to a node being emptied", m)
		}
	}
	// The per-node cap still holds.
	in.MaxMovesPerNode = 1
	plan = mustPlan(t, in)
	if len(plan.Kept) == 0 || !strings.Contains(plan.Kept[0].Reason, "max_moves_per_node reached") {
		t.Errorf("kept %+v, want the cap named", plan.Kept)
	}
}

// A record naming a profile the provider lacks warns and falls back to the data source's.
func TestRecordUnknownProfileWarns(t *testing.T) {
	g := recorded(vm(100, "pve1", 1, 1, "web"), scheduler.Request{})
	g.Recorded.Profile = "gone"
	in := input(t, nodes("pve1", "pve2"), g)
	in.Profiles = func(name string) (*scheduler.Profile, error) {
		return nil, &scheduler.InputError{Attribute: "profile", Message: "profile \"" + name + "\" is not defined"}
	}
	plan := mustPlan(t, in)
	if len(plan.Warnings) != 1 || !strings.Contains(plan.Warnings[0], `VM 100 (vm100): its placement record names profile "gone"`) {
		t.Errorf("warnings %q", plan.Warnings)
	}
}

// A move into a domain must keep the required anti-affinity recorded by the guests already
// there (kube's symmetry), even when the moving guest declares no rule.
func TestMoveKeepsRecordedAntiAffinityOfGuestsThere(t *testing.T) {
	ns := nodes("pve1", "pve2", "pve3")
	ns[2].Taints = []scheduler.Taint{maintenance}
	in := input(t, ns,
		recorded(vm(100, "pve1", 1, 1, "db"), scheduler.Request{VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: []string{"db"}, TopologyKey: "node"}}}),
		vm(101, "pve2", 6, 60, "other"),
		vm(102, "pve3", 1, 1, "db", "web"))
	plan := mustPlan(t, in)
	if got := moves(plan); len(got) != 1 || got[0] != "vm102:pve3>pve2" {
		t.Fatalf("moves %v, want vm102 to the busier pve2: pve1's guest keeps db guests out", got)
	}
}

// The budget counts members by the group's whole selector: a tags_any_of group is one group,
// and a guest its tags_none_of excludes is not in it.
func TestMaxMovesPerGroupSelectors(t *testing.T) {
	ns := nodes("pve1", "pve2", "pve3", "pve4", "pve5")
	ns[0].Taints, ns[1].Taints = []scheduler.Taint{maintenance}, []scheduler.Taint{maintenance}
	apart := scheduler.Request{VMAntiAffinity: []scheduler.VMGroupTerm{{TagsAnyOf: []string{"etcd", "cp"}, TagsNoneOf: []string{"canary"}, TopologyKey: "node"}}}
	in := input(t, ns,
		recorded(vm(101, "pve1", 1, 1, "cp", "web"), apart),
		recorded(vm(102, "pve2", 1, 1, "etcd", "web"), apart),
		recorded(vm(103, "pve3", 1, 1, "etcd", "web"), apart))
	in.MaxMovesPerGroup = 1
	plan := mustPlan(t, in)
	if len(plan.Moves) != 1 || len(plan.Kept) != 1 || !strings.Contains(plan.Kept[0].Reason, "max_moves_per_group (1) reached for the group tagged any of [cp etcd] none of [canary]") {
		t.Fatalf("plan %+v, want one move and vm102 kept by the budget of the any-of group", plan)
	}
	in.Snapshot.Guests[1].Tags = []string{"etcd", "web", "canary"}
	if plan := mustPlan(t, in); len(plan.Moves) != 2 {
		t.Fatalf("a canary is not in the group, so not in its budget: moves %v, kept %+v", moves(plan), plan.Kept)
	}
}

// Every candidate is planned together: two workers kept apart by rack both leave their
// maintenance nodes in one plan, and the second move sees the first (the two workers
// moved into one rack, had each move been planned against the cluster as it was).
func TestMovesOfOnePlanSeeEachOther(t *testing.T) {
	ns := nodes("pve1", "pve2", "pve3", "pve4", "pve5", "pve6", "pve7", "pve8")
	rack := map[string]string{}
	for i := range ns {
		r := "r" + string(rune('1'+i/2))
		ns[i].Labels, rack[ns[i].Name] = map[string]string{"rack": r}, r
	}
	apartByRack := scheduler.Request{VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: []string{"worker"}, TopologyKey: "rack"}}}
	var workers []scheduler.Guest
	for i, n := range []int{0, 2, 4} { // one worker per rack r1, r2, r3; r1 and r2 in maintenance
		if n < 4 {
			ns[n].Taints = []scheduler.Taint{maintenance}
		}
		workers = append(workers, recorded(vm(101+i, ns[n].Name, 1, 1, "worker", "web"), apartByRack))
	}
	in := input(t, ns, workers...)
	in.MaxMovesPerGroup = 2
	plan := mustPlan(t, in)
	if len(plan.Moves) != 2 || len(plan.Kept) != 0 {
		t.Fatalf("plan %+v, want both workers moved", plan)
	}
	byRack := map[string][]int{"r3": {103}}
	for _, m := range plan.Moves {
		byRack[rack[m.To]] = append(byRack[rack[m.To]], m.VMID)
	}
	for r, ids := range byRack {
		if len(ids) > 1 {
			t.Errorf("rack %s gets workers %v: the moves were not planned together (%v)", r, ids, moves(plan))
		}
	}
}

// HighNodeUtilization moves under the same rules and budget as the other strategies: the
// fullest node's guest records that it keeps db guests out, so pve1's db guest goes to pve3
// (to pve2 without that record); two members of one spread group leaving pve1 are one move
// and one kept by max_moves_per_group.
func TestHighNodeUtilizationUnderTheSameRules(t *testing.T) {
	apartFromDB := scheduler.Request{VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: []string{"db"}, TopologyKey: "node"}}}
	high := func(guests ...scheduler.Guest) Input {
		in := input(t, nodes("pve1", "pve2", "pve3"), guests...)
		in.RemovePolicyViolations = false
		in.HighNodeUtilization = &HighUtilization{CPUThreshold: 25, MemoryThreshold: 25}
		in.MaxMovesPerGroup = 1
		return in
	}
	full, medium := vm(200, "pve2", 5, 50, "other"), vm(300, "pve3", 3, 30, "other")
	if got := moves(mustPlan(t, high(vm(100, "pve1", 1, 5, "web", "db"), full, medium))); !reflect.DeepEqual(got, []string{"vm100:pve1>pve2"}) {
		t.Fatalf("without the record: moves %v, want vm100 to the fullest pve2", got)
	}
	if got := moves(mustPlan(t, high(vm(100, "pve1", 1, 5, "web", "db"), recorded(full, apartFromDB), medium))); !reflect.DeepEqual(got, []string{"vm100:pve1>pve3"}) {
		t.Fatalf("moves %v, want vm100 to pve3: pve2's guest records that it keeps db guests out", got)
	}
	spread := scheduler.Request{TopologySpread: []scheduler.SpreadConstraint{{Tags: []string{"web"}, TopologyKey: "node", MaxSkew: 1, WhenUnsatisfiable: "ScheduleAnyway"}}}
	plan := mustPlan(t, high(recorded(vm(100, "pve1", 1, 2, "web"), spread), recorded(vm(101, "pve1", 1, 2, "web"), spread), full, medium))
	if len(plan.Moves) != 1 || len(plan.Kept) != 1 || !strings.Contains(plan.Kept[0].Reason, "max_moves_per_group (1) reached for the group tagged [web]") {
		t.Fatalf("plan %+v, want one move and one guest kept by the budget", plan)
	}
}

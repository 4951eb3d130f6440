package rebalance

import (
	"reflect"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

func steps(plan Plan) []int {
	var out []int
	for _, m := range plan.Moves {
		out = append(out, m.Step)
	}
	return out
}

// pinnedTo gives a guest a placement record that allows only the nodes the regex matches.
func pinnedTo(g scheduler.Guest, regex string) scheduler.Guest {
	g.Recorded = &scheduler.Recorded{Policy: scheduler.Request{Annotations: map[string]string{scheduler.AnnotationNodeRegex: regex}}}
	return g
}

// A pair that must stay together (a positive HA rule, or required vm_affinity by node) leaves
// a node in maintenance as one step, to a node that takes both; alone, neither could leave.
func TestPairLeavesMaintenanceTogether(t *testing.T) {
	ns := nodes("pve1", "pve2", "pve3")
	ns[2].Taints = []scheduler.Taint{{Key: "node.qemu-scheduler/maintenance", Effect: "NoSchedule"}}
	for name, rule := range map[string]func(in *Input){
		"positive HA rule": func(in *Input) {
			in.Snapshot.HARules = []scheduler.HARule{{Name: "together", Type: scheduler.HAResourceAffinity, Affinity: scheduler.HAPositive, VMIDs: []int{100, 101}}}
		},
		"required vm_affinity": func(in *Input) {
			in.Policy.VMAffinity = []scheduler.VMGroupTerm{{Tags: []string{"web"}, TopologyKey: "node"}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			in := input(t, ns, vm(100, "pve3", 1, 1, "web"), vm(101, "pve3", 1, 1, "web"), vm(102, "pve1", 1, 1))
			rule(&in)
			plan := mustPlan(t, in)
			got := moves(plan)
			if len(got) != 2 || plan.Moves[0].To != plan.Moves[1].To || !reflect.DeepEqual(steps(plan), []int{1, 1}) {
				t.Fatalf("moves %v steps %v, want vm100 and vm101 to one node in one step", got, steps(plan))
			}
			if !strings.HasSuffix(plan.Moves[0].Reason, "; with the group (vm 100, 101)") || len(plan.Kept) != 0 {
				t.Fatalf("plan %+v, want the group named", plan)
			}
			if again := mustPlan(t, applyMoves(in, plan)); len(again.Moves) != 0 {
				t.Fatalf("after the moves: %v", moves(again))
			}
			in.MaxMovesPerNode = 1
			if plan := mustPlan(t, in); len(plan.Moves) != 0 || !strings.Contains(plan.Kept[0].Reason, "the group (vm 100, 101) needs 2 moves off pve3, max_moves_per_node is 1") {
				t.Fatalf("max_moves_per_node 1: plan %+v, want both kept", plan)
			}
		})
	}
}

// The move after a group's takes the next step.
func TestStepAfterGroup(t *testing.T) {
	ns := nodes("pve1", "pve2", "pve3")
	ns[2].Taints = []scheduler.Taint{{Key: "node.qemu-scheduler/maintenance", Effect: "NoSchedule"}}
	in := input(t, ns, vm(100, "pve3", 1, 1, "web"), vm(101, "pve3", 1, 1, "web"), vm(102, "pve3", 1, 1, "web"))
	in.Snapshot.HARules = []scheduler.HARule{{Name: "together", Type: scheduler.HAResourceAffinity, Affinity: scheduler.HAPositive, VMIDs: []int{100, 101}}}
	in.MaxMovesPerNode = 3
	if plan := mustPlan(t, in); !reflect.DeepEqual(steps(plan), []int{1, 1, 2}) || plan.Moves[2].VMID != 102 {
		t.Fatalf("moves %v steps %v, want the pair in step 1, vm102 in step 2", moves(plan), steps(plan))
	}
}

// A guest whose only allowed node is full moves there once another guest made room: first
// the cheapest guest that frees enough leaves, then the guest arrives.
func TestMakeRoomForPinnedGuest(t *testing.T) {
	in := input(t, nodes("pve1", "pve2"),
		pinnedTo(vm(100, "pve2", 1, 20, "web"), "pve1"),
		vm(101, "pve1", 1, 60, "web"), vm(102, "pve1", 1, 30, "web"))
	plan := mustPlan(t, in)
	if got, want := moves(plan), []string{"vm102:pve1>pve2", "vm100:pve2>pve1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("moves %v (kept %+v), want %v", got, plan.Kept, want)
	}
	if !reflect.DeepEqual(steps(plan), []int{1, 2}) || plan.Moves[0].Reason != "makes room on pve1 for vm 100" {
		t.Fatalf("plan %+v, want two steps, the first making room", plan)
	}
	if again := mustPlan(t, applyMoves(in, plan)); len(again.Moves) != 0 {
		t.Fatalf("after the moves: %v", moves(again))
	}
	in.MaxMoves = 1
	if plan := mustPlan(t, in); len(plan.Moves) != 0 || len(plan.Kept) != 1 {
		t.Fatalf("max_moves 1: plan %+v, want vm100 kept", plan)
	}
}

// Two guests that must trade full nodes swap through a third: one parks there, the other
// takes its place, the parked one moves on to the node the other left. Each step leaves every
// node within its memory.
func TestSwapThroughParking(t *testing.T) {
	in := input(t, nodes("pve1", "pve2", "pve3"),
		pinnedTo(vm(100, "pve1", 1, 60, "web"), "pve2"), vm(200, "pve1", 1, 30),
		pinnedTo(vm(101, "pve2", 1, 60, "web"), "pve1"), vm(201, "pve2", 1, 30))
	plan := mustPlan(t, in)
	if got, want := moves(plan), []string{"vm101:pve2>pve3", "vm100:pve1>pve2", "vm101:pve3>pve1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("moves %v (kept %+v), want %v", got, plan.Kept, want)
	}
	if !reflect.DeepEqual(steps(plan), []int{1, 2, 3}) || plan.Moves[0].Reason != "parked on pve3 to make room on pve2 for vm 100" ||
		plan.Moves[2].Reason != "back from parking on pve3" {
		t.Fatalf("plan %+v", plan)
	}
	used := map[string]uint64{"pve1": 90 * gib, "pve2": 90 * gib}
	for _, m := range plan.Moves {
		used[m.From] -= 60 * gib
		used[m.To] += 60 * gib
		if used[m.To] > 100*gib {
			t.Fatalf("step %d overfills %s", m.Step, m.To)
		}
	}
	if again := mustPlan(t, applyMoves(in, plan)); len(again.Moves) != 0 || len(again.Kept) != 0 {
		t.Fatalf("after the moves: %+v", again)
	}
	in.MaxMoves = 2
	if plan := mustPlan(t, in); len(plan.Moves) != 0 || len(plan.Kept) != 2 {
		t.Fatalf("max_moves 2: plan %+v, want both kept (the swap takes three moves)", plan)
	}
}

// low_node_utilization moves a pair that must stay together as one move when neither may
// leave alone, measuring the gain of both.
func TestBalanceMovesAGroup(t *testing.T) {
	in := input(t, nodes("pve1", "pve2"),
		vm(100, "pve1", 1, 20, "web"), vm(101, "pve1", 1, 20, "web"), vm(102, "pve1", 1, 40), // memory 80%
		vm(103, "pve2", 1, 10)) // 10%
	in.Snapshot.HARules = []scheduler.HARule{{Name: "together", Type: scheduler.HAResourceAffinity, Affinity: scheduler.HAPositive, VMIDs: []int{100, 101}}}
	in.LowNodeUtilization = &Utilization{Memory: &Band{Threshold: 30, Target: 60}}
	plan := mustPlan(t, in)
	if got, want := moves(plan), []string{"vm100:pve1>pve2", "vm101:pve1>pve2"}; !reflect.DeepEqual(got, want) || !reflect.DeepEqual(steps(plan), []int{1, 1}) {
		t.Fatalf("moves %v steps %v (kept %+v), want %v in one step", got, steps(plan), plan.Kept, want)
	}
	if r := plan.Moves[0].Reason; r != "LowNodeUtilization: pve1 is above target (memory 80%); with the group (vm 100, 101)" {
		t.Fatalf("reason %q", r)
	}
	if again := mustPlan(t, applyMoves(in, plan)); len(again.Moves) != 0 {
		t.Fatalf("after the moves: %v", moves(again))
	}
}

// A group moves only within the disruption budget of every spread or anti-affinity group its
// members are in.
func TestGroupWithinBudget(t *testing.T) {
	ns := nodes("pve1", "pve2", "pve3")
	ns[2].Taints = []scheduler.Taint{{Key: "node.qemu-scheduler/maintenance", Effect: "NoSchedule"}}
	in := input(t, ns, vm(100, "pve3", 1, 1, "web"), vm(101, "pve3", 1, 1, "web"))
	in.Snapshot.HARules = []scheduler.HARule{{Name: "together", Type: scheduler.HAResourceAffinity, Affinity: scheduler.HAPositive, VMIDs: []int{100, 101}}}
	in.Policy.TopologySpread = []scheduler.SpreadConstraint{{Tags: []string{"web"}, TopologyKey: "node", MaxSkew: 5, WhenUnsatisfiable: "DoNotSchedule"}}
	in.MaxMovesPerGroup = 1
	plan := mustPlan(t, in)
	if len(plan.Moves) != 0 || len(plan.Kept) != 2 ||
		!strings.Contains(plan.Kept[0].Reason, "the group (vm 100, 101) moves as one: max_moves_per_group (1) for the group tagged [web]: the plan would move 2 of its members") {
		t.Fatalf("plan %+v, want both kept by the budget", plan)
	}
	in.MaxMovesPerGroup = 2
	if got := moves(mustPlan(t, in)); len(got) != 2 {
		t.Fatalf("budget 2: moves %v, want the pair", got)
	}
}

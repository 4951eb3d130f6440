package rebalance

import (
	"reflect"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Guests larger than the band still narrow the spread: the receiver may end above target as
// long as it ends below the donor, and the next move, which would put the receiver above the
// donor, is refused (no ping-pong, in this plan or the next).
func TestLargeGuestsNarrowTheSpread(t *testing.T) {
	in := input(t, nodes("pve1", "pve2", "pve3"),
		vm(100, "pve1", 1, 30, "web"), vm(101, "pve1", 1, 30, "web"), vm(102, "pve1", 1, 30, "web"), // memory 90%
		vm(103, "pve2", 1, 10), vm(104, "pve3", 1, 10)) // 10% each
	in.LowNodeUtilization = &Utilization{Memory: &Band{Threshold: 20, Target: 30}}
	plan := mustPlan(t, in)
	if got, want := moves(plan), []string{"vm100:pve1>pve3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("moves %v, want %v: 90/10 becomes 60/40", got, want)
	}
	if k := plan.Kept; len(k) != 2 || !strings.Contains(k[0].Reason, "LowNodeUtilization: pve1 stays above target (memory 60%)") ||
		!strings.Contains(k[0].Reason, "pve2: would end at memory 40%, not below pve1 at memory 30%") {
		t.Fatalf("kept %+v, want pve1's two other guests with why pve3 does not take them", k)
	}
	if again := mustPlan(t, applyMoves(in, plan)); len(again.Moves) != 0 {
		t.Fatalf("second plan moves %v, want none", moves(again))
	}
}

// A memory-only balance measures its gain on memory: the receiver's CPU (300% here, of guests
// outside the opt-in) neither refuses the move nor counts against it.
func TestMemoryOnlyGain(t *testing.T) {
	in := input(t, nodes("pve1", "pve2"),
		vm(100, "pve1", 1, 40, "web"), vm(101, "pve1", 1, 40, "web"), // memory 80%, cpu 20%
		vm(102, "pve2", 30, 10)) // memory 10%, cpu 300%
	in.LowNodeUtilization = &Utilization{Memory: &Band{Threshold: 30, Target: 60}}
	plan := mustPlan(t, in)
	if got, want := moves(plan), []string{"vm100:pve1>pve2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("moves %v (kept %+v), want %v", got, plan.Kept, want)
	}
	if r := plan.Moves[0].Reason; r != "LowNodeUtilization: pve1 is above target (memory 80%)" {
		t.Fatalf("reason %q, want memory alone", r)
	}
	// Balancing CPU too, pve2 is no receiver.
	in.LowNodeUtilization.CPU = &Band{Threshold: 30, Target: 60}
	if plan := mustPlan(t, in); len(plan.Moves) != 0 || len(plan.Kept) != 2 ||
		plan.Kept[0].Reason != "LowNodeUtilization: pve1 stays above target (cpu 20%, memory 80%); no node takes it: no other node is under every threshold" {
		t.Fatalf("cpu and memory: plan %+v, want no move, both guests kept", plan)
	}
}

// Balanciness needs no thresholds: act while the fullest node is more than N points above the
// emptiest, move downhill only.
func TestBalanciness(t *testing.T) {
	in := input(t, nodes("pve1", "pve2", "pve3"),
		vm(100, "pve1", 1, 20, "web"), vm(101, "pve1", 1, 20, "web"), vm(102, "pve1", 1, 20, "web"), vm(103, "pve1", 1, 20, "web"), // 80%
		vm(104, "pve2", 1, 20, "web"), vm(105, "pve2", 1, 20, "web"), // 40%
		vm(106, "pve3", 1, 20, "web")) // 20%
	in.LowNodeUtilization = &Utilization{Memory: &Band{}, Balanciness: 20}
	plan := mustPlan(t, in)
	if got, want := moves(plan), []string{"vm100:pve1>pve3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("moves %v, want %v: 80/40/20 becomes 60/40/40, a spread of 20", got, want)
	}
	if r := plan.Moves[0].Reason; r != "LowNodeUtilization: pve1 is 60 points above the emptiest node in memory (80% vs 20%) > balanciness 20" {
		t.Fatalf("reason %q", r)
	}
	if again := mustPlan(t, applyMoves(in, plan)); len(again.Moves) != 0 || len(again.Kept) != 0 {
		t.Fatalf("second plan %+v, want nothing: the spread is within balanciness", again)
	}
}

// Of two moves that gain the same, the one carrying less memory and local disk wins.
func TestCheaperOfEqualMoves(t *testing.T) {
	in := input(t, nodes("pve1", "pve2"),
		vm(100, "pve1", 4, 8, "web"), vm(101, "pve1", 4, 1, "web")) // cpu 80%
	in.LowNodeUtilization = &Utilization{CPU: &Band{Threshold: 30, Target: 60}}
	if got, want := moves(mustPlan(t, in)), []string{"vm101:pve1>pve2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("moves %v, want %v: 1 GiB of memory rather than 8", got, want)
	}
	in.Snapshot.Guests[0].MaxMem = gib
	in.Disks = func(g *scheduler.Guest) ([]Disk, error) {
		if g.VMID == 101 {
			return []Disk{{"local-pve1", 50 * gib}}, nil
		}
		return []Disk{{"local-pve1", 5 * gib}, {"ceph", 500 * gib}}, nil
	}
	for i := range in.Snapshot.Nodes {
		in.Snapshot.Nodes[i].Storages = append(in.Snapshot.Nodes[i].Storages, scheduler.Storage{Name: "local-pve1", Active: true, Total: 1 << 40})
	}
	if got, want := moves(mustPlan(t, in)), []string{"vm100:pve1>pve2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("moves %v, want %v: 5 GiB of local disk rather than 50 (shared ceph moves nothing)", got, want)
	}
}

// A target whose storage lacks room for the guest's local disks is refused with the numbers;
// one move's disks take the room the next would need.
func TestTargetWithoutRoomRefused(t *testing.T) {
	ns := nodes("pve1", "pve2", "pve3")
	for i := range ns {
		ns[i].Storages = append(ns[i].Storages, scheduler.Storage{Name: "data", Active: true, Total: 100 * gib, Used: 50 * gib})
	}
	ns[0].Storages[2].Used = 95 * gib
	in := input(t, ns, vm(100, "pve3", 1, 1, "web"), vm(101, "pve3", 1, 1, "web"))
	in.Policy.Annotations[scheduler.AnnotationNodeRegex] = "pve[12]"
	in.Disks = func(g *scheduler.Guest) ([]Disk, error) { return []Disk{{"ceph", 200 * gib}, {"data", 30 * gib}}, nil }
	plan := mustPlan(t, in)
	if got, want := moves(plan), []string{"vm100:pve3>pve2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("moves %v, want %v", got, want)
	}
	if len(plan.Kept) != 1 || !strings.Contains(plan.Kept[0].Reason, "pve1: data needs 30 GiB free, has 5 GiB; pve2: data needs 30 GiB free, has 20 GiB") {
		t.Fatalf("kept %+v, want vm101 refused by both nodes' room (pve2 after vm100's disks)", plan.Kept)
	}
}

// A container with the opt-in tag moves like a VM; a guest outside the opt-in on a node that
// repels it is reported, not moved.
func TestContainersAndNotOptedIn(t *testing.T) {
	ns := nodes("pve1", "pve2", "pve3")
	ns[2].Taints = []scheduler.Taint{{Key: "node.qemu-scheduler/maintenance", Effect: "NoExecute"}}
	ct := vm(100, "pve3", 1, 1, "web")
	ct.Type = scheduler.GuestLXC
	in := input(t, ns, ct, vm(101, "pve3", 1, 1, "db"), vm(102, "pve2", 1, 1, "db"))
	plan := mustPlan(t, in)
	if got := moves(plan); len(got) != 1 || !strings.HasPrefix(got[0], "vm100:pve3>") {
		t.Fatalf("moves %v, want the container off pve3", got)
	}
	if len(plan.Kept) != 1 || plan.Kept[0].VMID != 101 || !strings.HasPrefix(plan.Kept[0].Reason, "policy violation on pve3: TaintToleration") ||
		!strings.HasSuffix(plan.Kept[0].Reason, "; not opted in") {
		t.Fatalf("kept %+v, want vm101 not opted in (vm102's node repels nothing)", plan.Kept)
	}
}

// drain_nodes moves every candidate off the node under its rules and caps, and nothing onto
// it; what stays is kept with why.
func TestDrainNodes(t *testing.T) {
	in := input(t, nodes("pve1", "pve2", "pve3", "pve4"),
		vm(100, "pve4", 1, 1, "web"), vm(101, "pve4", 1, 1, "web"), vm(102, "pve4", 1, 1, "web"),
		vm(103, "pve4", 1, 1, "db"), vm(104, "pve1", 4, 40, "web"), vm(105, "pve1", 3, 30, "web"))
	in.Snapshot.HARules = []scheduler.HARule{{Name: "stay", Type: scheduler.HANodeAffinity, Strict: true, VMIDs: []int{102}, Nodes: []string{"pve4"}}}
	in.LowNodeUtilization = &Utilization{CPU: &Band{Threshold: 30, Target: 60}, Memory: &Band{Threshold: 30, Target: 60}}
	in.DrainNodes = []string{"pve4"}
	in.MaxMovesPerNode = 3
	plan := mustPlan(t, in)
	got := moves(plan)
	if len(got) != 3 || !strings.HasPrefix(got[0], "vm100:pve4>") || !strings.HasPrefix(got[1], "vm101:pve4>") || strings.HasSuffix(got[2], ">pve4") {
		t.Fatalf("moves %v, want vm100 and vm101 off pve4 and vm104's balance not onto it", got)
	}
	if plan.Moves[0].Reason != "drain_nodes: pve4 is drained" {
		t.Fatalf("reason %q", plan.Moves[0].Reason)
	}
	want := map[int]string{
		102: "drain_nodes: pve4 is drained; no node takes it: pve3: HA rule stay (node-affinity) allows only pve4",
		103: "drain_nodes: pve4 is drained; not opted in",
	}
	for _, k := range plan.Kept {
		if w, ok := want[k.VMID]; !ok || !strings.HasPrefix(k.Reason, w) {
			t.Fatalf("kept %+v, want %v", plan.Kept, want)
		}
		delete(want, k.VMID)
	}
	if len(want) != 0 {
		t.Fatalf("kept %+v, missing %v", plan.Kept, want)
	}
	in.DrainNodes = []string{"pve9"}
	if _, err := PlanMoves(in); err == nil || err.Error() != `drain_nodes names "pve9", which is not a node of the cluster (pve1, pve2, pve3, pve4)` {
		t.Fatalf("unknown node: %v", err)
	}
}

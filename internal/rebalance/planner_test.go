package rebalance

import (
	"reflect"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/plugins"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

const gib = 1 << 30

func nodes(names ...string) []scheduler.Node {
	var out []scheduler.Node
	for _, n := range names {
		out = append(out, scheduler.Node{Name: n, Online: true, MaxCPU: 10, MaxMem: 100 * gib,
			Storages: []scheduler.Storage{
				{Name: "ceph", Content: []string{"images"}, Active: true, Shared: true, Total: 1 << 42},
				{Name: "local-" + n, Content: []string{"images"}, Active: true, Total: 1 << 40},
			}})
	}
	return out
}

func vm(vmid int, node string, cpus float64, memGiB uint64, tags ...string) scheduler.Guest {
	return scheduler.Guest{VMID: vmid, Node: node, Name: "vm" + scheduler.FormatNumber(float64(vmid)), Type: scheduler.GuestQEMU,
		Status: "running", CPUs: cpus, MaxMem: memGiB * gib, Tags: tags}
}

func input(t testing.TB, ns []scheduler.Node, guests ...scheduler.Guest) Input {
	t.Helper()
	prof, err := plugins.NewProfile(scheduler.PluginConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return Input{
		Snapshot: scheduler.Snapshot{Nodes: ns, Guests: guests},
		Profile:  prof, Policy: scheduler.Request{Annotations: map[string]string{}},
		OptIn: []string{"web"}, RemovePolicyViolations: true,
		MaxMoves: 10, MaxMovesPerNode: 2, MinGain: 5,
	}
}

func mustPlan(t *testing.T, in Input) Plan {
	t.Helper()
	plan, err := PlanMoves(in)
	if err != nil {
		t.Fatal(err)
	}
	again, err := PlanMoves(in)
	if err != nil || !reflect.DeepEqual(plan, again) {
		t.Fatalf("same input, another plan:\n%+v\n%+v (%v)", plan, again, err)
	}
	return plan
}

func moves(plan Plan) []string {
	var out []string
	for _, m := range plan.Moves {
		out = append(out, m.Name+":"+m.From+">"+m.To)
	}
	return out
}

// applyMoves is what a user does with the plan: pin each guest to its target.
func applyMoves(in Input, plan Plan) Input {
	guests := append([]scheduler.Guest(nil), in.Snapshot.Guests...)
	for _, m := range plan.Moves {
		for i := range guests {
			if guests[i].VMID == m.VMID {
				guests[i].Node = m.To
			}
		}
	}
	in.Snapshot.Guests = guests
	return in
}

// A policy violation moves opted-in guests only, to a node that passes; applying the moves
// and planning again yields nothing.
func TestViolationMovesOptedInGuestsOnly(t *testing.T) {
	in := input(t, nodes("pve1", "pve2", "pve3"),
		vm(100, "pve3", 1, 1, "web"),
		vm(101, "pve3", 1, 1, "db"),
		vm(102, "pve1", 1, 1, "web"))
	in.Policy.Annotations[scheduler.AnnotationNodeRegex] = "pve[12]"
	plan := mustPlan(t, in)
	if got := moves(plan); len(got) != 1 || !strings.HasPrefix(got[0], "vm100:pve3>") || strings.HasSuffix(got[0], "pve3") {
		t.Fatalf("moves %v, want vm100 off pve3 (vm101 is not opted in)", got)
	}
	if r := plan.Moves[0].Reason; !strings.Contains(r, `NodeRegex: "pve3" does not match "pve[12]"`) {
		t.Fatalf("reason %q does not say which policy", r)
	}
	if again := mustPlan(t, applyMoves(in, plan)); len(again.Moves) != 0 {
		t.Fatalf("second plan moves %v, want none", moves(again))
	}
}

func TestTemplatesLockedAndOfflineNeverMove(t *testing.T) {
	ns := nodes("pve1", "pve2", "pve3")
	ns[2].Online = false
	tmpl := vm(100, "pve2", 1, 1, "web")
	tmpl.Template = true
	locked := vm(101, "pve2", 1, 1, "web")
	locked.Lock = "backup"
	in := input(t, ns, tmpl, locked, vm(102, "pve3", 1, 1, "web"))
	in.Policy.Annotations[scheduler.AnnotationNodeRegex] = "pve1"
	if plan := mustPlan(t, in); len(plan.Moves) != 0 || len(plan.Kept) != 0 {
		t.Fatalf("plan %+v, want nothing: a template, a locked guest, a guest of an offline node", plan)
	}
}

func TestMoveLimits(t *testing.T) {
	var guests []scheduler.Guest
	for i := 0; i < 5; i++ {
		guests = append(guests, vm(100+i, "pve3", 1, 1, "web"), vm(200+i, "pve2", 1, 1, "web"))
	}
	in := input(t, nodes("pve1", "pve2", "pve3"), guests...)
	in.Policy.Annotations[scheduler.AnnotationNodeRegex] = "pve1"
	plan := mustPlan(t, in)
	want := []string{"vm100:pve3>pve1", "vm101:pve3>pve1", "vm200:pve2>pve1", "vm201:pve2>pve1"}
	if got := moves(plan); !reflect.DeepEqual(got, want) {
		t.Fatalf("per-node cap: moves %v, want %v", got, want)
	}
	if len(plan.Kept) != 6 || !strings.Contains(plan.Kept[0].Reason, "max_moves_per_node reached for pve3") {
		t.Fatalf("kept %+v, want the six over the cap with the reason", plan.Kept)
	}
	in.MaxMoves = 3
	plan = mustPlan(t, in)
	if got := moves(plan); len(got) != 3 {
		t.Fatalf("max_moves 3: moves %v", got)
	}
	// Every violation past the caps is still reported.
	if len(plan.Kept) != 7 || !strings.Contains(plan.Kept[len(plan.Kept)-1].Reason, "max_moves (3) reached") {
		t.Fatalf("max_moves 3: kept %+v, want the seven violations left with the reason", plan.Kept)
	}
}

// The reason a guest cannot move names each refusing node.
func TestKeptWhenNoNodePasses(t *testing.T) {
	in := input(t, nodes("pve1", "pve2"), vm(100, "pve2", 1, 1, "web"), vm(101, "pve1", 40, 1))
	in.Policy.Annotations[scheduler.AnnotationNodeRegex] = "pve1"
	plan := mustPlan(t, in)
	if len(plan.Moves) != 0 || len(plan.Kept) != 1 || !strings.Contains(plan.Kept[0].Reason, "no node passes: pve1: CPUOvercommit: (40+1)/10 = 4.1 > 4") {
		t.Fatalf("plan %+v, want vm100 kept with pve1's overcommit reason", plan)
	}
}

// A guest kept for a rule it breaks and for its node's load is one entry with both reasons, so
// that kept can be keyed by vmid (a Terraform for expression fails on a duplicate key).
func TestKeptOnceWithEveryReason(t *testing.T) {
	in := input(t, nodes("pve1", "pve2", "pve3"), vm(100, "pve2", 8, 1, "web"), vm(101, "pve1", 40, 1))
	in.Policy.Annotations[scheduler.AnnotationNodeRegex] = "pve1"
	in.LowNodeUtilization = &Utilization{CPU: &Band{30, 60}, Memory: &Band{30, 60}}
	plan := mustPlan(t, in)
	if len(plan.Moves) != 0 || len(plan.Kept) != 1 {
		t.Fatalf("plan %+v, want vm100 kept once", plan)
	}
	if r := plan.Kept[0].Reason; !strings.Contains(r, "no node passes: pve1: CPUOvercommit") || !strings.Contains(r, "LowNodeUtilization: pve2 stays above target (cpu 80%") {
		t.Fatalf("reason %q, want the violation and the load", r)
	}
}

func TestLowNodeUtilization(t *testing.T) {
	ns := nodes("pve1", "pve2", "pve3")
	in := input(t, ns,
		vm(100, "pve1", 4, 10, "web"), vm(101, "pve1", 3, 10, "web"), vm(102, "pve1", 1, 10, "web"), // 80% cpu
		vm(103, "pve2", 2, 10, "web"), // 20%
		vm(104, "pve3", 5, 50, "web")) // 50%
	in.LowNodeUtilization = &Utilization{CPU: &Band{30, 60}, Memory: &Band{30, 60}}
	plan := mustPlan(t, in)
	// vm101 (3 vCPUs) levels the two nodes at 50%: a gain of 60 points, where the larger vm100
	// would gain 40.
	if got, want := moves(plan), []string{"vm101:pve1>pve2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("moves %v, want %v (the guest that gains most to the underused node, then pve1 is at target)", got, want)
	}
	if plan.Before[0].CPUPercent != 80 || plan.After[0].CPUPercent != 50 || plan.After[1].CPUPercent != 50 {
		t.Fatalf("before %+v after %+v", plan.Before, plan.After)
	}
	if !strings.Contains(plan.Moves[0].Reason, "LowNodeUtilization: pve1 is above target (cpu 80%") {
		t.Fatalf("reason %q", plan.Moves[0].Reason)
	}
	if again := mustPlan(t, applyMoves(in, plan)); len(again.Moves) != 0 {
		t.Fatalf("second plan moves %v, want none (no ping-pong)", moves(again))
	}
	// A gain below min_gain is not worth a migration: the node stays above target, and its
	// guests are reported with why no node takes them.
	in.MinGain = 90
	plan = mustPlan(t, in)
	if got := moves(plan); len(got) != 0 {
		t.Fatalf("min_gain 90: moves %v, want none", got)
	}
	if len(plan.Kept) != 3 || !strings.Contains(plan.Kept[0].Reason, "LowNodeUtilization: pve1 stays above target (cpu 80%") ||
		!strings.Contains(plan.Kept[0].Reason, "< min_gain 90") {
		t.Fatalf("min_gain 90: kept %+v, want pve1's three guests with the reason", plan.Kept)
	}
}

// The guests of a node still above target that a cap keeps from moving are reported in kept,
// as the data source's docs promise, with the cap: otherwise a user sees a node left above
// target and no reason.
func TestLowNodeUtilizationKeptByCaps(t *testing.T) {
	var guests []scheduler.Guest
	for i := range 5 {
		guests = append(guests, vm(100+i, "pve1", 3, 1, "web")) // 150% cpu
	}
	in := input(t, nodes("pve1", "pve2", "pve3", "pve4"), guests...)
	in.LowNodeUtilization = &Utilization{CPU: &Band{30, 60}, Memory: &Band{30, 60}}
	plan := mustPlan(t, in)
	if got := moves(plan); len(got) != 2 {
		t.Fatalf("moves %v, want two (max_moves_per_node 2)", got)
	}
	if len(plan.Kept) != 3 {
		t.Fatalf("kept %+v, want the three guests over max_moves_per_node", plan.Kept)
	}
	for _, k := range plan.Kept {
		if !strings.Contains(k.Reason, "LowNodeUtilization: pve1 stays above target (cpu 90%") || !strings.Contains(k.Reason, "max_moves_per_node reached for pve1") {
			t.Fatalf("kept %+v: want the node's load and the cap", k)
		}
	}
	in.MaxMoves = 1
	plan = mustPlan(t, in)
	if len(plan.Moves) != 1 || len(plan.Kept) != 4 || !strings.Contains(plan.Kept[0].Reason, "max_moves (1) reached") {
		t.Fatalf("max_moves 1: plan %+v, want one move and four kept with the cap", plan)
	}
}

// A running guest with a local disk moves only where its storage exists.
func TestLocalDisksNeedTheirStorage(t *testing.T) {
	ns := nodes("pve1", "pve2", "pve3")
	ns[1].Storages = append(ns[1].Storages, scheduler.Storage{Name: "local-pve3", Content: []string{"images"}, Active: true, Total: 1 << 40})
	in := input(t, ns, vm(100, "pve3", 1, 1, "web"))
	in.Policy.Annotations[scheduler.AnnotationNodeRegex] = "pve[12]"
	asked := 0
	in.Disks = func(g *scheduler.Guest) ([]Disk, error) {
		asked++
		return []Disk{{"ceph", 10 * gib}, {"local-pve3", 10 * gib}}, nil
	}
	plan := mustPlan(t, in)
	if got := moves(plan); !reflect.DeepEqual(got, []string{"vm100:pve3>pve2"}) || asked != 2 {
		t.Fatalf("moves %v (disks asked %d times over two runs), want pve2, the node with local-pve3", got, asked)
	}
	in.Snapshot.Nodes = nodes("pve1", "pve2", "pve3")
	plan = mustPlan(t, in)
	if len(plan.Moves) != 0 || !strings.Contains(plan.Kept[0].Reason, "disk storage local-pve3 not on pve1") {
		t.Fatalf("plan %+v, want kept for its local disk", plan)
	}
}

func TestHARules(t *testing.T) {
	ns := nodes("pve1", "pve2", "pve3")
	in := input(t, ns, vm(100, "pve3", 1, 1, "web"), vm(101, "pve1", 1, 1))
	in.Policy.Annotations[scheduler.AnnotationNodeRegex] = "pve[12]"
	in.Snapshot.HARules = []scheduler.HARule{
		{Name: "apart", Type: "resource-affinity", Affinity: "negative", VMIDs: []int{100, 101}},
		{Name: "off", Type: "node-affinity", VMIDs: []int{100}, Nodes: []string{"pve1"}, Disabled: true},
	}
	if got := moves(mustPlan(t, in)); !reflect.DeepEqual(got, []string{"vm100:pve3>pve2"}) {
		t.Fatalf("negative affinity with vm101 on pve1: moves %v, want pve2", got)
	}
	in.Snapshot.HARules = append(in.Snapshot.HARules, scheduler.HARule{Name: "pin", Type: "node-affinity", VMIDs: []int{100}, Nodes: []string{"pve1", "pve3"}, Strict: true})
	plan := mustPlan(t, in)
	if len(plan.Moves) != 0 || !strings.Contains(plan.Kept[0].Reason, "HA rule pin (node-affinity) allows only pve1, pve3") ||
		!strings.Contains(plan.Kept[0].Reason, "HA rule apart (negative resource-affinity): vm 101 runs there") {
		t.Fatalf("plan %+v, want kept with both HA rules named", plan)
	}
	// A positive peer holds the guest: it moves only to the peer's node, as the HA manager
	// keeps the pair together.
	in = input(t, ns, vm(100, "pve3", 1, 1, "web"), vm(101, "pve2", 1, 1))
	in.Policy.Annotations[scheduler.AnnotationNodeRegex] = "pve[12]"
	if got := moves(mustPlan(t, in)); !reflect.DeepEqual(got, []string{"vm100:pve3>pve1"}) {
		t.Fatalf("without rules: moves %v, want the emptier pve1", got)
	}
	in.Snapshot.HARules = []scheduler.HARule{{Name: "together", Type: "resource-affinity", Affinity: "positive", VMIDs: []int{100, 101}}}
	if got := moves(mustPlan(t, in)); !reflect.DeepEqual(got, []string{"vm100:pve3>pve2"}) {
		t.Fatalf("positive affinity with vm101 on pve2: moves %v, want pve2", got)
	}
}

// A node of a lower priority class of the guest's node-affinity rule does not take it while a
// higher one is online: the HA manager would move it back (failback). With failback off the
// lower class keeps it, and the move is made.
func TestHARulePriorities(t *testing.T) {
	in := input(t, nodes("pve1", "pve2", "pve3"), vm(100, "pve3", 1, 1, "web"))
	in.Policy.Annotations[scheduler.AnnotationNodeRegex] = "pve[12]"
	in.Snapshot.HARules = []scheduler.HARule{{Name: "prio", Type: scheduler.HANodeAffinity, Strict: true, VMIDs: []int{100},
		Nodes: []string{"pve1", "pve3"}, Priorities: map[string]int{"pve1": 1, "pve3": 2}}}
	plan := mustPlan(t, in)
	if len(plan.Moves) != 0 || len(plan.Kept) != 1 ||
		!strings.Contains(plan.Kept[0].Reason, "HA rule prio (node-affinity): pve1 has priority 1, the HA manager moves the VM back to pve3 (priority 2)") ||
		!strings.Contains(plan.Kept[0].Reason, "HA rule prio (node-affinity) allows only pve1, pve3") {
		t.Fatalf("plan %+v, want vm 100 kept with the priorities named", plan)
	}
	in.Snapshot.HAFailbackOff = map[int]bool{100: true}
	if got := moves(mustPlan(t, in)); !reflect.DeepEqual(got, []string{"vm100:pve3>pve1"}) {
		t.Fatalf("failback off: moves %v, want pve1", got)
	}
}

// Each kind of hard policy makes a violation: a NoExecute or NoSchedule taint, a node
// selector, required anti-affinity. The anti-affinity pair moves one guest, not both.
func TestViolationKinds(t *testing.T) {
	ns := nodes("pve1", "pve2", "pve3")
	ns[0].Taints = []scheduler.Taint{{Key: "node.qemu-scheduler/maintenance", Effect: "NoSchedule"}}
	ns[1].Labels = map[string]string{"zone": "a"}
	ns[2].Labels = map[string]string{"zone": "b"}
	tests := []struct {
		name   string
		guests []scheduler.Guest
		policy func(r *scheduler.Request)
		want   []string
	}{
		{"maintenance taint drains", []scheduler.Guest{vm(100, "pve1", 1, 1, "web")}, func(*scheduler.Request) {}, []string{"vm100:pve1>"}},
		{"tolerated taint stays", []scheduler.Guest{vm(100, "pve1", 1, 1, "web")}, func(r *scheduler.Request) {
			r.Tolerations = []scheduler.Toleration{{Key: "node.qemu-scheduler/maintenance", Operator: "Exists"}}
		}, nil},
		{"node selector", []scheduler.Guest{vm(100, "pve3", 1, 1, "web")}, func(r *scheduler.Request) {
			r.NodeSelector = map[string]string{"zone": "a"}
		}, []string{"vm100:pve3>pve2"}},
		// pve1 (NoSchedule) is no eligible domain: 3-0 over pve2 and pve3 becomes 2-1.
		{"spread moves the surplus", []scheduler.Guest{vm(100, "pve2", 1, 1, "web"), vm(101, "pve2", 1, 1, "web"), vm(102, "pve2", 1, 1, "web")},
			func(r *scheduler.Request) {
				r.TopologySpread = []scheduler.SpreadConstraint{{Tags: []string{"web"}, TopologyKey: "node", MaxSkew: 1, WhenUnsatisfiable: "DoNotSchedule"}}
			}, []string{"vm100:pve2>pve3"}},
		{"anti-affinity moves one of a pair", []scheduler.Guest{vm(100, "pve2", 1, 1, "web"), vm(101, "pve2", 1, 1, "web")}, func(r *scheduler.Request) {
			r.VMAntiAffinity = []scheduler.VMGroupTerm{{Tags: []string{"web"}, TopologyKey: "node"}}
		}, []string{"vm100:pve2>pve3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := input(t, ns, tt.guests...)
			tt.policy(&in.Policy)
			got := moves(mustPlan(t, in))
			if len(got) != len(tt.want) {
				t.Fatalf("moves %v, want %v", got, tt.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Fatalf("moves %v, want %v", got, tt.want)
				}
			}
			if again := mustPlan(t, applyMoves(in, mustPlan(t, in))); len(again.Moves) != 0 {
				t.Fatalf("after the moves: %v, want none", moves(again))
			}
		})
	}
}

// A peer the HA manager is moving counts on its target as PVE's get_resource_affinity
// counts it: a negative peer also there (the CRM would refuse the move), a positive one
// only there (the group is going there).
func TestHARulesPeerMoving(t *testing.T) {
	ns := nodes("pve1", "pve2", "pve3", "pve4")
	in := input(t, ns, vm(100, "pve4", 1, 1, "web"), vm(101, "pve1", 1, 1))
	in.Policy.Annotations[scheduler.AnnotationNodeRegex] = "pve[123]"
	in.Snapshot.HARules = []scheduler.HARule{{Name: "apart", Type: "resource-affinity", Affinity: "negative", VMIDs: []int{100, 101}}}
	if got := moves(mustPlan(t, in)); !reflect.DeepEqual(got, []string{"vm100:pve4>pve3"}) {
		t.Fatalf("vm101 settled on pve1: moves %v, want pve3", got)
	}
	in.Snapshot.HAMoves = map[int]string{101: "pve3"}
	plan := mustPlan(t, in)
	if got := moves(plan); !reflect.DeepEqual(got, []string{"vm100:pve4>pve2"}) {
		t.Fatalf("vm101 moving from pve1 to pve3: moves %v, want pve2, the one node without it", got)
	}
	in.Policy.Annotations[scheduler.AnnotationNodeRegex] = "pve[13]"
	plan = mustPlan(t, in)
	if len(plan.Moves) != 0 || len(plan.Kept) != 1 || !strings.Contains(plan.Kept[0].Reason, "pve3: HA rule apart (negative resource-affinity): the HA manager is moving vm 101 there") ||
		!strings.Contains(plan.Kept[0].Reason, "pve1: HA rule apart (negative resource-affinity): vm 101 runs there") {
		t.Fatalf("plan %+v, want vm100 kept, both of vm101's nodes named", plan)
	}
	// Positive: the group goes where the HA manager moves vm101, not where it still runs.
	in.Policy.Annotations[scheduler.AnnotationNodeRegex] = "pve[123]"
	in.Snapshot.HARules = []scheduler.HARule{{Name: "together", Type: "resource-affinity", Affinity: "positive", VMIDs: []int{100, 101}}}
	in.Snapshot.HAMoves = map[int]string{101: "pve2"}
	if got := moves(mustPlan(t, in)); !reflect.DeepEqual(got, []string{"vm100:pve4>pve2"}) {
		t.Fatalf("vm101 moving to pve2: moves %v, want pve2", got)
	}
	in.Snapshot.HAMoves = nil
	if got := moves(mustPlan(t, in)); !reflect.DeepEqual(got, []string{"vm100:pve4>pve1"}) {
		t.Fatalf("vm101 settled on pve1: moves %v, want pve1", got)
	}
}

// The guest's own provider node rule does not hold it: the move rewrites it. A user's rule
// on the guest, or the provider's node rule of another guest, still does.
func TestOwnHARuleDoesNotHoldItsVM(t *testing.T) {
	in := input(t, nodes("pve1", "pve2", "pve3"), vm(100, "pve3", 1, 1, "web"))
	in.Policy.Annotations[scheduler.AnnotationNodeRegex] = "pve[12]"
	own := scheduler.HARule{Name: "qemuscheduler-vm-100", Type: scheduler.HANodeAffinity, Strict: true, VMIDs: []int{100}, Nodes: []string{"pve3"}}
	in.Snapshot.HARules = []scheduler.HARule{own}
	if got := moves(mustPlan(t, in)); !reflect.DeepEqual(got, []string{"vm100:pve3>pve1"}) {
		t.Fatalf("own node rule: moves %v, want pve1", got)
	}
	for _, name := range []string{"stay", "qemuscheduler-vm-101"} {
		other := own
		other.Name = name
		in.Snapshot.HARules = []scheduler.HARule{own, other}
		plan := mustPlan(t, in)
		if len(plan.Moves) != 0 || !strings.Contains(plan.Kept[0].Reason, "HA rule "+name+" (node-affinity) allows only pve3") {
			t.Fatalf("rule %s: plan %+v, want vm 100 kept by it", name, plan)
		}
	}
}

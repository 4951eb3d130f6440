package rebalance

import (
	"fmt"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// BenchmarkPlan: 64 nodes, 10,000 guests of which 2,000 opted in; the policy excludes eight
// nodes (their opted-in guests must move) and LowNodeUtilization drains the busiest nodes,
// max_moves 50.
func BenchmarkPlan(b *testing.B) {
	names, ns := benchNodes(64, 128, 1024)
	var guests []scheduler.Guest
	for i := 0; i < 10000; i++ {
		node := names[i%64]
		if i%64 < 8 && i%3 == 0 {
			node = names[8] // a hot node
		}
		g := vm(100+i, node, 2, 4)
		if i%5 == 0 {
			g.Tags = []string{"web"}
		}
		if i%3 == 0 {
			g.Status = "stopped"
		}
		guests = append(guests, g)
	}
	in := input(b, ns, guests...)
	in.Policy.Annotations[scheduler.AnnotationNodeRegex] = "pve([1-9][0-9])"
	in.MaxMoves, in.MaxMovesPerNode = 50, 10
	in.LowNodeUtilization = &Utilization{CPU: &Band{30, 50}, Memory: &Band{30, 50}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		plan, err := PlanMoves(in)
		if err != nil || len(plan.Moves) != 50 {
			b.Fatalf("%d moves, %v", len(plan.Moves), err)
		}
	}
}

// BenchmarkPlan40x750: the size of ProxLB's real-world scenarios, 40 nodes and 750 running
// guests, all opted in, of mixed sizes and heaped on the first ten nodes; pve40 is drained and
// LowNodeUtilization balances memory by balanciness; max_moves 50.
func BenchmarkPlan40x750(b *testing.B) {
	names, ns := benchNodes(40, 64, 512)
	var guests []scheduler.Guest
	for i := 0; i < 750; i++ {
		node := names[i%40]
		if i%2 == 0 {
			node = names[i%10]
		}
		guests = append(guests, vm(100+i, node, float64(1+i%4), uint64(2+i%7*2), "web"))
	}
	in := input(b, ns, guests...)
	in.DrainNodes = []string{"pve40"}
	in.MaxMoves, in.MaxMovesPerNode = 50, 10
	in.LowNodeUtilization = &Utilization{Memory: &Band{}, Balanciness: 5}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		plan, err := PlanMoves(in)
		if err != nil || len(plan.Moves) != 50 {
			b.Fatalf("%d moves, %v", len(plan.Moves), err)
		}
	}
}

// benchNodes are n equal nodes pve1..pveN of cpus CPUs and memGiB GiB, with their names.
func benchNodes(n, cpus int, memGiB uint64) ([]string, []scheduler.Node) {
	var names []string
	for i := 1; i <= n; i++ {
		names = append(names, fmt.Sprintf("pve%d", i))
	}
	ns := nodes(names...)
	for i := range ns {
		ns[i].MaxCPU, ns[i].MaxMem = cpus, memGiB*gib
	}
	return names, ns
}

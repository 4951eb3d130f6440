package plugins

import (
	"reflect"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Kube-scheduler's NodeResourcesFit LeastAllocated and MostAllocated tables and its
// BalancedAllocation table (pkg/scheduler/framework/plugins/noderesources,
// least_allocated_test.go, most_allocated_test.go, balanced_allocation_test.go), replayed
// against our plugins under kube's case names. A kube cpu
// quantity of 1000 is one of our vCPUs and a memory quantity of 1 one MiB (the scores are
// ratios, the same in any unit). The scores compare exactly: ours truncate where kube's
// integer arithmetic does. Left out: weights outside
// 1..100 (config errors here too, tested with the args), extended resources and DRA (none on
// PVE), fractional CPUs, and kube's non-zero defaults and PreScore skip for pods without
// requests.

// kubeResourceNode is a node of cpu (kube quantity) and memory; pods are [cpu, memory] pairs.
func kubeResourceNode(name string, cpu, mem int, pods ...[2]int) (scheduler.Node, []scheduler.Guest) {
	n := scheduler.Node{Name: name, Online: true, MaxCPU: cpu / 1000, MaxMem: uint64(mem) * scheduler.MiB}
	var gs []scheduler.Guest
	for i, p := range pods {
		gs = append(gs, scheduler.Guest{VMID: 100 + i + 10*len(name), Node: name, Type: scheduler.GuestQEMU, Status: "running",
			CPUs: float64(p[0] / 1000), MaxMem: uint64(p[1]) * scheduler.MiB})
	}
	return n, gs
}

type kubeResourceCase struct {
	name string
	// request is the incoming pod's [cpu, memory].
	request [2]int
	nodes   [][]any // name, cpu, memory, pods...
	weights map[string]string
	want    map[string]float64
}

func runKubeResourceCases(t *testing.T, build func(map[string]string) (scheduler.Plugin, error), cases []kubeResourceCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var nodes []scheduler.Node
			var guests []scheduler.Guest
			for _, spec := range tc.nodes {
				var pods [][2]int
				for _, p := range spec[3:] {
					pods = append(pods, p.([2]int))
				}
				n, gs := kubeResourceNode(spec[0].(string), spec[1].(int), spec[2].(int), pods...)
				nodes, guests = append(nodes, n), append(guests, gs...)
			}
			r := request("p")
			r.Cores, r.MemoryMiB = tc.request[0]/1000, tc.request[1]
			got := scoreNodes(newPlugin[scheduler.ScorePlugin](t, build, tc.weights), &r, infos(nodes, guests...))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, kube %v", got, tc.want)
			}
		})
	}
}

var memoryTwice = map[string]string{argMemoryWeight: "2", argCPUWeight: "1"}

func TestKubeLeastAllocated(t *testing.T) {
	runKubeResourceCases(t, newLeastAllocated, []kubeResourceCase{
		{name: "nothing scheduled, nothing requested", nodes: [][]any{{"node1", 4000, 10000}, {"node2", 4000, 10000}},
			want: map[string]float64{"node1": 100, "node2": 100}},
		{name: "nothing scheduled, resources requested, differently sized nodes", request: [2]int{3000, 5000},
			nodes: [][]any{{"node1", 4000, 10000}, {"node2", 6000, 10000}}, want: map[string]float64{"node1": 37, "node2": 50}},
		{name: "no resources requested, pods scheduled with resources",
			nodes: [][]any{{"node1", 10000, 20000, [2]int{3000, 0}, [2]int{3000, 0}}, {"node2", 10000, 20000, [2]int{3000, 0}, [2]int{3000, 5000}}},
			want:  map[string]float64{"node1": 70, "node2": 57}},
		{name: "resources requested, pods scheduled with resources", request: [2]int{3000, 5000},
			nodes: [][]any{{"node1", 10000, 20000, [2]int{3000, 0}}, {"node2", 10000, 20000, [2]int{3000, 5000}}},
			want:  map[string]float64{"node1": 57, "node2": 45}},
		{name: "resources requested, pods scheduled with resources, differently sized nodes", request: [2]int{3000, 5000},
			nodes: [][]any{{"node1", 10000, 20000, [2]int{3000, 0}}, {"node2", 10000, 50000, [2]int{3000, 5000}}},
			want:  map[string]float64{"node1": 57, "node2": 60}},
		{name: "requested resources exceed node capacity", request: [2]int{3000, 0},
			nodes: [][]any{{"node1", 4000, 10000, [2]int{3000, 0}}, {"node2", 4000, 10000, [2]int{3000, 5000}}},
			want:  map[string]float64{"node1": 50, "node2": 25}},
		{name: "zero node resources, pods scheduled with resources",
			nodes: [][]any{{"node1", 0, 0, [2]int{3000, 0}}, {"node2", 0, 0, [2]int{3000, 5000}}},
			want:  map[string]float64{"node1": 0, "node2": 0}},
		{name: "nothing scheduled, resources requested with different weight on CPU and memory, differently sized nodes",
			request: [2]int{3000, 5000}, nodes: [][]any{{"node1", 4000, 10000}, {"node2", 6000, 10000}}, weights: memoryTwice,
			want: map[string]float64{"node1": 41, "node2": 50}},
	})
}

func TestKubeMostAllocated(t *testing.T) {
	runKubeResourceCases(t, newMostAllocated, []kubeResourceCase{
		{name: "nothing scheduled, nothing requested", nodes: [][]any{{"node1", 4000, 10000}, {"node2", 4000, 10000}},
			want: map[string]float64{"node1": 0, "node2": 0}},
		{name: "nothing scheduled, resources requested, differently sized nodes", request: [2]int{3000, 5000},
			nodes: [][]any{{"node1", 4000, 10000}, {"node2", 6000, 10000}}, want: map[string]float64{"node1": 62, "node2": 50}},
		{name: "no resources requested, pods scheduled with resources",
			nodes: [][]any{{"node1", 10000, 20000, [2]int{3000, 0}, [2]int{3000, 0}}, {"node2", 10000, 20000, [2]int{3000, 0}, [2]int{3000, 5000}}},
			want:  map[string]float64{"node1": 30, "node2": 42}},
		{name: "resources requested, pods scheduled with resources", request: [2]int{3000, 5000},
			nodes: [][]any{{"node1", 10000, 20000, [2]int{3000, 0}}, {"node2", 10000, 20000, [2]int{3000, 5000}}},
			want:  map[string]float64{"node1": 42, "node2": 55}},
		{name: "resources requested equal node capacity", request: [2]int{5000, 9000},
			nodes: [][]any{{"node1", 5000, 10000}, {"node2", 10000, 9000}}, want: map[string]float64{"node1": 95, "node2": 75}},
		// Kube has two cases of this name; this is the one weighting memory twice.
		{name: "nothing scheduled, resources requested, differently sized nodes", request: [2]int{3000, 5000},
			nodes: [][]any{{"node1", 4000, 10000}, {"node2", 6000, 10000}}, weights: memoryTwice,
			want: map[string]float64{"node1": 58, "node2": 50}},
	})
}

func TestKubeBalancedAllocation(t *testing.T) {
	cpuOnly, cpuAndMemory := [2]int{3000, 0}, [2]int{3000, 5000}
	runKubeResourceCases(t, newBalancedAllocation, []kubeResourceCase{
		{name: "nothing scheduled, resources requested, differently sized nodes", request: cpuAndMemory,
			nodes: [][]any{{"node1", 4000, 10000}, {"node2", 6000, 10000}}, want: map[string]float64{"node1": 87, "node2": 100}},
		{name: "resources requested, pods scheduled with resources", request: cpuAndMemory,
			nodes: [][]any{{"node1", 10000, 20000, cpuOnly}, {"node2", 10000, 20000, cpuAndMemory}}, want: map[string]float64{"node1": 82, "node2": 95}},
		{name: "resources requested, pods scheduled with resources, differently sized nodes", request: cpuAndMemory,
			nodes: [][]any{{"node1", 10000, 20000, cpuOnly}, {"node2", 10000, 50000, cpuAndMemory}}, want: map[string]float64{"node1": 82, "node2": 80}},
		{name: "requested resources at node capacity", request: cpuOnly,
			nodes: [][]any{{"node1", 6000, 10000, cpuOnly}, {"node2", 6000, 10000, cpuAndMemory}}, want: map[string]float64{"node1": 50, "node2": 75}},
	})
}

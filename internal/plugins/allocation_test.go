package plugins

import (
	"errors"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// The allocation scores are checked on kube-scheduler's published examples
// (noderesources/least_allocated_test.go, most_allocated_test.go,
// balanced_allocation_test.go), with kube's millicores read as vCPUs (4000 -> 4) and its
// memory units as MiB. kube truncates each score to an integer; this scheduler keeps the
// fraction (rounded to hundredths when summed), so 37.5 here is kube's 37.

// kubeNode is a node of cpus vCPUs and memMiB MiB.
func kubeNode(name string, cpus int, memMiB uint64) scheduler.Node {
	return scheduler.Node{Name: name, Online: true, MaxCPU: cpus, MaxMem: memMiB * scheduler.MiB}
}

// kubePod is a running guest of cpus vCPUs and memMiB MiB on node.
func kubePod(vmid int, node string, cpus float64, memMiB uint64) scheduler.Guest {
	return scheduler.Guest{VMID: vmid, Node: node, Type: scheduler.GuestQEMU, Status: "running", CPUs: cpus, MaxMem: memMiB * scheduler.MiB}
}

// kubeRequest asks for cpus vCPUs and memMiB MiB; kube's empty pod is kubeRequest(0, 0).
func kubeRequest(cpus, memMiB int) scheduler.Request {
	return scheduler.Request{Name: "pod", Cores: cpus, Sockets: 1, MemoryMiB: memMiB}
}

type kubeCase struct {
	name  string
	req   scheduler.Request
	nodes []scheduler.Node
	pods  []scheduler.Guest
	args  map[string]string
	want  map[string]float64
}

func runKubeCases(t *testing.T, build func(map[string]string) (scheduler.Plugin, error), cases []kubeCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			s := newPlugin[scheduler.ScorePlugin](t, build, tt.args)
			got := scoreNodes(s, &tt.req, infos(tt.nodes, tt.pods...))
			for node, want := range tt.want {
				if g := round2(got[node]); g != want {
					t.Errorf("%s: score %v, want %v", node, g, want)
				}
			}
		})
	}
}

func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }

func TestLeastAllocatedKubeExamples(t *testing.T) {
	runKubeCases(t, newLeastAllocated, []kubeCase{{
		// node1: cpu (4-3)*100/4 = 25, memory (10000-5000)*100/10000 = 50, (25+50)/2 = 37.5
		// node2: cpu (6-3)*100/6 = 50, memory 50, (50+50)/2 = 50
		name: "nothing scheduled, resources requested, differently sized nodes", req: kubeRequest(3, 5000),
		nodes: []scheduler.Node{kubeNode("node1", 4, 10000), kubeNode("node2", 6, 10000)},
		want:  map[string]float64{"node1": 37.5, "node2": 50},
	}, {
		// node1: cpu (10-6)*100/10 = 40, memory (20000-0)*100/20000 = 100, (40+100)/2 = 70
		// node2: cpu 40, memory (20000-5000)*100/20000 = 75, (40+75)/2 = 57.5
		name: "no resources requested, pods scheduled with resources", req: kubeRequest(0, 0),
		nodes: []scheduler.Node{kubeNode("node1", 10, 20000), kubeNode("node2", 10, 20000)},
		pods:  []scheduler.Guest{kubePod(1, "node1", 3, 0), kubePod(2, "node1", 3, 0), kubePod(3, "node2", 3, 0), kubePod(4, "node2", 3, 5000)},
		want:  map[string]float64{"node1": 70, "node2": 57.5},
	}, {
		// node1: cpu (10-6)*100/10 = 40, memory (20000-5000)*100/20000 = 75, (40+75)/2 = 57.5
		// node2: cpu 40, memory (50000-10000)*100/50000 = 80, (40+80)/2 = 60
		name: "resources requested, pods scheduled with resources, differently sized nodes", req: kubeRequest(3, 5000),
		nodes: []scheduler.Node{kubeNode("node1", 10, 20000), kubeNode("node2", 10, 50000)},
		pods:  []scheduler.Guest{kubePod(1, "node1", 3, 0), kubePod(2, "node2", 3, 5000)},
		want:  map[string]float64{"node1": 57.5, "node2": 60},
	}, {
		// node1: cpu 6 > 4 -> 0, memory 100, (0+100)/2 = 50
		// node2: cpu 0, memory (10000-5000)*100/10000 = 50, (0+50)/2 = 25
		name: "requested resources exceed node capacity", req: kubeRequest(3, 0),
		nodes: []scheduler.Node{kubeNode("node1", 4, 10000), kubeNode("node2", 4, 10000)},
		pods:  []scheduler.Guest{kubePod(1, "node1", 3, 0), kubePod(2, "node2", 3, 5000)},
		want:  map[string]float64{"node1": 50, "node2": 25},
	}, {
		// no capacity: every resource scores 0
		name: "zero node resources", req: kubeRequest(0, 0),
		nodes: []scheduler.Node{kubeNode("node1", 0, 0)},
		want:  map[string]float64{"node1": 0},
	}, {
		// node1: (25*1 + 50*2)/(1+2) = 41.67 (kube 41); node2: (50*1 + 50*2)/3 = 50
		name: "different weight on cpu and memory", req: kubeRequest(3, 5000), args: map[string]string{"memory_weight": "2"},
		nodes: []scheduler.Node{kubeNode("node1", 4, 10000), kubeNode("node2", 6, 10000)},
		want:  map[string]float64{"node1": 41.67, "node2": 50},
	}})
}

func TestMostAllocatedKubeExamples(t *testing.T) {
	runKubeCases(t, newMostAllocated, []kubeCase{{
		// node1: cpu 3*100/4 = 75, memory 5000*100/10000 = 50, (75+50)/2 = 62.5
		// node2: cpu 3*100/6 = 50, memory 50, (50+50)/2 = 50
		name: "nothing scheduled, resources requested, differently sized nodes", req: kubeRequest(3, 5000),
		nodes: []scheduler.Node{kubeNode("node1", 4, 10000), kubeNode("node2", 6, 10000)},
		want:  map[string]float64{"node1": 62.5, "node2": 50},
	}, {
		// node1: cpu 6*100/10 = 60, memory 0, (60+0)/2 = 30
		// node2: cpu 60, memory 5000*100/20000 = 25, (60+25)/2 = 42.5
		name: "no resources requested, pods scheduled with resources", req: kubeRequest(0, 0),
		nodes: []scheduler.Node{kubeNode("node1", 10, 20000), kubeNode("node2", 10, 20000)},
		pods:  []scheduler.Guest{kubePod(1, "node1", 3, 0), kubePod(2, "node1", 3, 0), kubePod(3, "node2", 3, 0), kubePod(4, "node2", 3, 5000)},
		want:  map[string]float64{"node1": 30, "node2": 42.5},
	}, {
		// node1: cpu 6*100/10 = 60, memory 5000*100/20000 = 25, (60+25)/2 = 42.5
		// node2: cpu 60, memory 10000*100/20000 = 50, (60+50)/2 = 55
		name: "resources requested, pods scheduled with resources", req: kubeRequest(3, 5000),
		nodes: []scheduler.Node{kubeNode("node1", 10, 20000), kubeNode("node2", 10, 20000)},
		pods:  []scheduler.Guest{kubePod(1, "node1", 3, 0), kubePod(2, "node2", 3, 5000)},
		want:  map[string]float64{"node1": 42.5, "node2": 55},
	}, {
		// node1: cpu 5*100/5 = 100, memory 9000*100/10000 = 90, (100+90)/2 = 95
		// node2: cpu 5*100/10 = 50, memory 9000*100/9000 = 100, (50+100)/2 = 75
		name: "resources requested equal node capacity", req: kubeRequest(5, 9000),
		nodes: []scheduler.Node{kubeNode("node1", 5, 10000), kubeNode("node2", 10, 9000)},
		want:  map[string]float64{"node1": 95, "node2": 75},
	}, {
		// node1: (75*1 + 50*2)/(1+2) = 58.33 (kube 58); node2: (50*1 + 50*2)/3 = 50
		name: "different weight on cpu and memory", req: kubeRequest(3, 5000), args: map[string]string{"memory_weight": "2"},
		nodes: []scheduler.Node{kubeNode("node1", 4, 10000), kubeNode("node2", 6, 10000)},
		want:  map[string]float64{"node1": 58.33, "node2": 50},
	}, {
		// cpu 3+3 of 4 is capped at 4: 100; memory 600*100/1000 = 60; (100+60)/2 = 80
		name: "allocation above capacity counts as full", req: kubeRequest(3, 400),
		nodes: []scheduler.Node{kubeNode("node1", 4, 1000)},
		pods:  []scheduler.Guest{kubePod(1, "node1", 3, 200)},
		want:  map[string]float64{"node1": 80},
	}})
}

func TestBalancedAllocationKubeExamples(t *testing.T) {
	runKubeCases(t, newBalancedAllocation, []kubeCase{{
		// node1: cpu 3/4 = 0.75, memory 5000/10000 = 0.5, std (0.75-0.5)/2 = 0.125, (1-0.125)*100 = 87.5
		// node2: cpu 3/6 = 0.5, memory 0.5, std 0, 100
		name: "nothing scheduled, resources requested, differently sized nodes", req: kubeRequest(3, 5000),
		nodes: []scheduler.Node{kubeNode("node1", 4, 10000), kubeNode("node2", 6, 10000)},
		want:  map[string]float64{"node1": 87.5, "node2": 100},
	}, {
		// node1: cpu 6/10 = 0.6, memory 5000/20000 = 0.25, std 0.175, 82.5
		// node2: cpu 0.6, memory 10000/20000 = 0.5, std 0.05, 95
		name: "resources requested, pods scheduled with resources", req: kubeRequest(3, 5000),
		nodes: []scheduler.Node{kubeNode("node1", 10, 20000), kubeNode("node2", 10, 20000)},
		pods:  []scheduler.Guest{kubePod(1, "node1", 3, 0), kubePod(2, "node2", 3, 5000)},
		want:  map[string]float64{"node1": 82.5, "node2": 95},
	}, {
		// node1: as above, 82.5; node2: cpu 0.6, memory 10000/50000 = 0.2, std 0.2, 80
		name: "resources requested, pods scheduled with resources, differently sized nodes", req: kubeRequest(3, 5000),
		nodes: []scheduler.Node{kubeNode("node1", 10, 20000), kubeNode("node2", 10, 50000)},
		pods:  []scheduler.Guest{kubePod(1, "node1", 3, 0), kubePod(2, "node2", 3, 5000)},
		want:  map[string]float64{"node1": 82.5, "node2": 80},
	}, {
		// node1: cpu 6/6 = 1, memory 0, std 0.5, 50; node2: cpu 1, memory 5000/10000 = 0.5, std 0.25, 75
		name: "requested resources at node capacity", req: kubeRequest(3, 0),
		nodes: []scheduler.Node{kubeNode("node1", 6, 10000), kubeNode("node2", 6, 10000)},
		pods:  []scheduler.Guest{kubePod(1, "node1", 3, 0), kubePod(2, "node2", 3, 5000)},
		want:  map[string]float64{"node1": 50, "node2": 75},
	}})
}

// Args are whole numbers 1..100, as kube validates resource weights; unknown args list the
// valid ones; the three scores run only when enabled.
func TestAllocationScoreArgsAndDefaults(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"scores:\n  LeastAllocated: {config: {cpu_weight: 0}}\n", `score plugin LeastAllocated: arg cpu_weight must be a whole number from 1 to 100, got "0"`},
		{"scores:\n  MostAllocated: {config: {memory_weight: 101}}\n", `score plugin MostAllocated: arg memory_weight must be a whole number from 1 to 100, got "101"`},
		{"scores:\n  MostAllocated: {config: {memory_weight: 1.5}}\n", `arg memory_weight must be a whole number from 1 to 100, got "1.5"`},
		{"scores:\n  MostAllocated: {config: {cpu: 2}}\n", `unknown arg "cpu" for score plugin MostAllocated; valid args: cpu_weight, memory_weight`},
		{"scores:\n  BalancedAllocation: {config: {cpu_weight: 2}}\n", `unknown arg "cpu_weight" for score plugin BalancedAllocation; valid args: none`},
	} {
		cfg, err := scheduler.ParsePluginConfigYAML([]byte(tt.yaml))
		if err == nil {
			_, err = NewProfile(cfg)
		}
		var ie *scheduler.InputError
		if !errors.As(err, &ie) || !strings.HasSuffix(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want an InputError ending in %s", tt.yaml, err, tt.want)
		}
	}
	snap := scheduler.Snapshot{Nodes: []scheduler.Node{node("pve1", 8, 32)}}
	scoresOf := func(cfg scheduler.PluginConfig) string {
		d, err := mustProfile(cfg).Schedule(snap, []scheduler.Request{request("a")}, scheduler.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, name := range []string{NodeResourceName, LeastAllocatedName, MostAllocatedName, BalancedAllocationName} {
			if _, ok := d.Placements[0].Candidates[0].Scores[name]; ok {
				names = append(names, name)
			}
		}
		return strings.Join(names, ",")
	}
	if got := scoresOf(scheduler.PluginConfig{}); got != "NodeResource" {
		t.Errorf("default scores: %s, want NodeResource only", got)
	}
	cfg, err := scheduler.ParsePluginConfigYAML([]byte("scores: {LeastAllocated: {}, MostAllocated: {}, BalancedAllocation: {}}"))
	if err != nil {
		t.Fatal(err)
	}
	if got := scoresOf(cfg); got != "NodeResource,LeastAllocated,MostAllocated,BalancedAllocation" {
		t.Errorf("enabled scores: %s, want all four", got)
	}
}

package plugins

import (
	"fmt"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

const gib = 1 << 30

func node(name string, cpus int, memGiB uint64) scheduler.Node {
	return scheduler.Node{
		Name: name, Online: true, MaxCPU: cpus, MaxMem: memGiB * gib,
		Storages: []scheduler.Storage{{Name: "local-lvm", Content: []string{"images", "rootdir"}, Active: true, Total: 100 * gib}},
	}
}

func running(vmid int, nodeName string, cpus float64, memGiB uint64) scheduler.Guest {
	return scheduler.Guest{VMID: vmid, Node: nodeName, Name: fmt.Sprintf("vm%d", vmid), Type: scheduler.GuestQEMU, Status: "running", CPUs: cpus, MaxMem: memGiB * gib}
}

func request(name string) scheduler.Request {
	return scheduler.Request{Name: name, Cores: 1, Sockets: 1, MemoryMiB: 512, Annotations: map[string]string{}}
}

func mustProfile(cfg scheduler.PluginConfig) *scheduler.Profile {
	p, err := NewProfile(cfg)
	if err != nil {
		panic(err)
	}
	return p
}

// infos builds the nodes of a snapshot as a decision sees them.
func infos(nodes []scheduler.Node, guests ...scheduler.Guest) []*scheduler.NodeInfo {
	return scheduler.NodeInfos(&scheduler.Snapshot{Nodes: nodes, Guests: guests})
}

// filterVerdicts runs one filter plugin as the pipeline does: its PreFilter once over all
// nodes, then Filter per node. It returns each node's rejection reason ("" = passes), or the
// PreFilter's error.
func filterVerdicts(f scheduler.FilterPlugin, req *scheduler.Request, nodes []*scheduler.NodeInfo) (map[string]string, error) {
	state := scheduler.NewCycleState()
	if pf, ok := f.(scheduler.PreFilterPlugin); ok {
		if err := pf.PreFilter(state, req, nodes); err != nil {
			return nil, err
		}
	}
	out := make(map[string]string, len(nodes))
	for _, n := range nodes {
		out[n.Node.Name] = ""
		if rej := f.Filter(state, req, n); rej != nil {
			out[n.Node.Name] = rej.Reason
		}
	}
	return out, nil
}

// scoreNodes runs one score plugin as the pipeline does over nodes taken as the feasible
// ones: PreScore, Score per node, then NormalizeScores. It returns the final score per node.
func scoreNodes(s scheduler.ScorePlugin, req *scheduler.Request, nodes []*scheduler.NodeInfo) map[string]float64 {
	return scoreFeasible(s, req, scheduler.NewCycleState(), nodes)
}

// scoreFeasible is scoreNodes in a state that may hold more nodes than the feasible ones.
func scoreFeasible(s scheduler.ScorePlugin, req *scheduler.Request, state *scheduler.CycleState, nodes []*scheduler.NodeInfo) map[string]float64 {
	if ps, ok := s.(scheduler.PreScorePlugin); ok {
		ps.PreScore(state, req, nodes)
	}
	scores := make([]scheduler.NodeScore, len(nodes))
	for i, n := range nodes {
		scores[i] = scheduler.NodeScore{Node: n.Node.Name, Score: s.Score(state, req, n)}
	}
	if n, ok := s.(scheduler.ScoreNormalizer); ok {
		n.NormalizeScores(state, req, scores)
	}
	out := make(map[string]float64, len(scores))
	for _, sc := range scores {
		out[sc.Node] = sc.Score
	}
	return out
}

// newPlugin builds a registered plugin with args, failing the test on error.
func newPlugin[T any](t testing.TB, build func(map[string]string) (scheduler.Plugin, error), args map[string]string) T {
	t.Helper()
	p, err := build(args)
	if err != nil {
		t.Fatal(err)
	}
	return p.(T)
}

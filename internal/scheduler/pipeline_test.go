package scheduler

import (
	"errors"
	"strings"
	"testing"
)

// fixedScore scores nodes from a table, to test the pipeline without real plugins.
type fixedScore struct {
	name   string
	scores map[string]float64
}

func (f fixedScore) Name() string { return f.name }
func (f fixedScore) Score(_ *CycleState, _ *Request, n *NodeInfo) float64 {
	return f.scores[n.Node.Name]
}

func fakeRegistry(scores ...fixedScore) Registry {
	reg := Registry{}
	for _, s := range scores {
		s := s
		reg.Scores = append(reg.Scores, PluginSpec{Name: s.name, New: func(map[string]string) (Plugin, error) { return s, nil }})
	}
	return reg
}

// testProfile is NewProfile for a test, which fails on its error.
func testProfile(t *testing.T, reg Registry, cfg PluginConfig) *Profile {
	t.Helper()
	p, err := NewProfile(reg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// scheduleOne places one small VM on the named nodes with the profile of reg and cfg.
func scheduleOne(t *testing.T, reg Registry, cfg PluginConfig, nodes ...string) (Decision, error) {
	t.Helper()
	return testProfile(t, reg, cfg).Schedule(Snapshot{Nodes: testNodes(nodes...)}, []Request{{Name: "x", Cores: 1, Sockets: 1, MemoryMiB: 1}}, Options{})
}

func testNodes(names ...string) []Node {
	var out []Node
	for _, n := range names {
		out = append(out, Node{Name: n, Online: true, MaxCPU: 8, MaxMem: 8 << 30,
			Storages: []Storage{{Name: "local", Content: []string{"images"}, Active: true, Total: 1 << 40}}})
	}
	return out
}

func TestScoresAreWeightedAndSummed(t *testing.T) {
	reg := fakeRegistry(
		fixedScore{"A", map[string]float64{"n1": 100, "n2": 0}},
		fixedScore{"B", map[string]float64{"n1": 0, "n2": 60}},
	)
	three := int64(3)
	tests := []struct {
		cfg  PluginConfig
		want string
	}{
		{PluginConfig{}, "n1"}, // 100+0 beats 0+60
		{PluginConfig{Scores: map[string]PluginSetting{"B": {Weight: &three}}}, "n2"}, // 100 vs 180
	}
	for _, tt := range tests {
		d, err := scheduleOne(t, reg, tt.cfg, "n1", "n2")
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Placements[0].Node; got != tt.want {
			t.Errorf("weights %v: node %s, want %s", tt.cfg.Scores, got, tt.want)
		}
	}
}

// A node scoring 0 everywhere is still chosen over nothing: there is no sentinel to lose to.
func TestZeroScoreNodeIsChosen(t *testing.T) {
	d, err := scheduleOne(t, fakeRegistry(fixedScore{"A", nil}), PluginConfig{}, "only")
	if err != nil || d.Placements[0].Node != "only" {
		t.Fatalf("placement %+v, %v", d, err)
	}
}

func TestScoresAreClampedToRange(t *testing.T) {
	d, err := scheduleOne(t, fakeRegistry(fixedScore{"A", map[string]float64{"n1": 1e9, "n2": -5}}), PluginConfig{}, "n1", "n2")
	if err != nil {
		t.Fatal(err)
	}
	if c := d.Placements[0].Candidates; c[0].Score != 100 || c[1].Score != 0 {
		t.Fatalf("scores %v, %v; want clamped to 100 and 0", c[0].Score, c[1].Score)
	}
}

func TestRegistryMismatchIsReported(t *testing.T) {
	reg := Registry{Filters: []PluginSpec{{Name: "NotAFilter", New: func(map[string]string) (Plugin, error) { return fixedScoreOnly{}, nil }}}}
	if _, err := NewProfile(reg, PluginConfig{}); err == nil || !strings.Contains(err.Error(), "is not a FilterPlugin") {
		t.Fatalf("err = %v", err)
	}
}

type fixedScoreOnly struct{}

func (fixedScoreOnly) Name() string { return "NotAFilter" }

func TestMergeKeepsLowerLayersUnlessOverridden(t *testing.T) {
	off := false
	merged := MergePluginConfigs(
		PluginConfig{Filters: map[string]PluginSetting{"F": {Enable: &off, Args: map[string]string{"a": "1", "b": "2"}}}},
		PluginConfig{Filters: map[string]PluginSetting{"F": {Args: map[string]string{"b": "3"}}}},
	)
	f := merged.Filters["F"]
	if *f.Enable || f.Args["a"] != "1" || f.Args["b"] != "3" {
		t.Fatalf("merged = %+v %v", f, *f.Enable)
	}
}

// Sizes whose products would wrap (the cores = 2^62, sockets = 4 made 0 vCPUs) are
// refused before any arithmetic.
func TestValidateRequestRefusesWrappingSizes(t *testing.T) {
	p := testProfile(t, Registry{}, PluginConfig{})
	for _, tc := range []struct {
		r    Request
		attr string
	}{
		{Request{Name: "a", Cores: 1 << 62, Sockets: 4, MemoryMiB: 512}, "cores"},
		{Request{Name: "a", Cores: 1 << 10, Sockets: 1<<10 + 1, MemoryMiB: 512}, "cores"},
		{Request{Name: "a", Cores: 1, Sockets: 1, MemoryMiB: 17592186044416}, "memory"},
	} {
		var ie *InputError
		if err := p.ValidateRequest(&tc.r); !errors.As(err, &ie) || ie.Attribute != tc.attr {
			t.Errorf("ValidateRequest(%+v) = %v, want an error on %s", tc.r, err, tc.attr)
		}
	}
	ok := Request{Name: "a", Cores: 1 << 10, Sockets: 1 << 10, MemoryMiB: 1 << 32}
	if err := p.ValidateRequest(&ok); err != nil {
		t.Errorf("the largest sizes are refused: %v", err)
	}
}

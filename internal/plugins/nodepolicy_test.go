package plugins

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/nodelabels"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// labelled is a node with labels and taints.
func labelled(name string, labels map[string]string, taints ...string) scheduler.Node {
	n := node(name, 8, 32)
	n.Labels = labels
	for _, s := range taints {
		t, err := nodelabels.ParseTaint(s)
		if err != nil {
			panic(err)
		}
		n.Taints = append(n.Taints, t)
	}
	return n
}

func term(key, op string, weight int, values ...string) scheduler.NodeAffinityTerm {
	return scheduler.Expression(weight, key, op, values...)
}

func TestNodeSelectorFilter(t *testing.T) {
	nodes := infos([]scheduler.Node{
		labelled("a", map[string]string{"zone": "a", "cores": "16", "gpu": ""}),
		labelled("b", map[string]string{"zone": "b", "cores": "4"}),
		labelled("c", map[string]string{"cores": "many"}),
	})
	tests := []struct {
		name     string
		selector map[string]string
		terms    []scheduler.NodeAffinityTerm
		want     map[string]string // node -> reason, "" = passes
	}{
		{"nothing asked", nil, nil, map[string]string{"a": "", "b": "", "c": ""}},
		{"selector", map[string]string{"zone": "a"}, nil, map[string]string{"a": "",
			"b": "NodeSelector: label zone=b, node_selector zone=a", "c": "NodeSelector: no label zone, node_selector zone=a"}},
		{"selector with an empty value", map[string]string{"gpu": ""}, nil, map[string]string{"a": "",
			"b": "NodeSelector: no label gpu, node_selector gpu=", "c": "NodeSelector: no label gpu, node_selector gpu="}},
		{"In", nil, []scheduler.NodeAffinityTerm{term("zone", "In", 0, "a", "x")}, map[string]string{"a": "",
			"b": "NodeSelector: label zone=b, node_affinity zone In [a x]", "c": "NodeSelector: no label zone, node_affinity zone In [a x]"}},
		{"NotIn matches a missing key", nil, []scheduler.NodeAffinityTerm{term("zone", "NotIn", 0, "a")}, map[string]string{
			"a": "NodeSelector: label zone=a, node_affinity zone NotIn [a]", "b": "", "c": ""}},
		{"Exists", nil, []scheduler.NodeAffinityTerm{term("gpu", "Exists", 0)}, map[string]string{"a": "",
			"b": "NodeSelector: no label gpu, node_affinity gpu Exists", "c": "NodeSelector: no label gpu, node_affinity gpu Exists"}},
		{"DoesNotExist", nil, []scheduler.NodeAffinityTerm{term("gpu", "DoesNotExist", 0)}, map[string]string{
			"a": "NodeSelector: label gpu=, node_affinity gpu DoesNotExist", "b": "", "c": ""}},
		{"Gt, a non-integer label never matches", nil, []scheduler.NodeAffinityTerm{term("cores", "Gt", 0, "8")}, map[string]string{"a": "",
			"b": "NodeSelector: label cores=4, node_affinity cores Gt 8", "c": "NodeSelector: label cores=many, node_affinity cores Gt 8"}},
		{"Lt", nil, []scheduler.NodeAffinityTerm{term("cores", "Lt", 0, "8")}, map[string]string{"b": "",
			"a": "NodeSelector: label cores=16, node_affinity cores Lt 8", "c": "NodeSelector: label cores=many, node_affinity cores Lt 8"}},
		{"selector and terms are ANDed, every failure listed", map[string]string{"zone": "b"},
			[]scheduler.NodeAffinityTerm{term("cores", "Gt", 0, "8"), term("cores", "Lt", 100, "2")}, map[string]string{
				"a": "NodeSelector: label zone=a, node_selector zone=b",
				"b": "NodeSelector: label cores=4, node_affinity cores Gt 8",
				"c": "NodeSelector: no label zone, node_selector zone=b; label cores=many, node_affinity cores Gt 8"}},
		{"preferred terms do not filter", nil, []scheduler.NodeAffinityTerm{term("zone", "In", 50, "x")}, map[string]string{"a": "", "b": "", "c": ""}},
	}
	f := newPlugin[scheduler.FilterPlugin](t, newNodeSelector, nil)
	for _, tt := range tests {
		req := request("vm")
		req.NodeSelector, req.NodeAffinity = tt.selector, tt.terms
		got, err := filterVerdicts(f, &req, nodes)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %v, %v\nwant %v", tt.name, got, err, tt.want)
		}
	}
}

func TestNodeSelectorValidatesRequests(t *testing.T) {
	v := newPlugin[scheduler.RequestValidator](t, newNodeSelector, nil)
	for _, tt := range []struct {
		req  scheduler.Request
		want string
	}{
		{scheduler.Request{NodeSelector: map[string]string{"bad key": "a"}}, `node_selector["bad key"]: key "bad key"`},
		{scheduler.Request{NodeSelector: map[string]string{"zone": "a b"}}, `node_selector["zone"]: value "a b"`},
		{scheduler.Request{NodeAffinity: []scheduler.NodeAffinityTerm{term("zone", "In", 0, "a"), term("cores", "Gt", 0, "eight")}},
			`node_affinity: block 2: values: operator Gt needs an integer value, got "eight"`},
	} {
		var ie *scheduler.InputError
		if err := v.ValidateRequest(&tt.req); !errors.As(err, &ie) || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.req, err, tt.want)
		}
	}
}

func TestTaintTolerationFilter(t *testing.T) {
	nodes := infos([]scheduler.Node{
		labelled("clean", nil),
		labelled("db", nil, "dedicated=db:NoSchedule"),
		labelled("drain", nil, "node.qemu-scheduler/maintenance:NoSchedule", "old-hw:PreferNoSchedule"),
		labelled("evict", nil, "gpu:NoExecute", "dedicated=db:NoSchedule"),
	})
	all := func(db, drain, evict string) map[string]string {
		return map[string]string{"clean": "", "db": db, "drain": drain, "evict": evict}
	}
	const (
		dbReason    = "TaintToleration: untolerated taint dedicated=db:NoSchedule"
		drainReason = "TaintToleration: untolerated taint node.qemu-scheduler/maintenance:NoSchedule"
		evictReason = "TaintToleration: untolerated taint gpu:NoExecute, dedicated=db:NoSchedule"
	)
	tests := []struct {
		name string
		tols []scheduler.Toleration
		want map[string]string
	}{
		{"no tolerations: NoSchedule and NoExecute repel, PreferNoSchedule does not", nil, all(dbReason, drainReason, evictReason)},
		{"Equal with the value", []scheduler.Toleration{{Key: "dedicated", Operator: "Equal", Value: "db"}}, all("", drainReason, "TaintToleration: untolerated taint gpu:NoExecute")},
		{"empty operator is Equal; another value does not match", []scheduler.Toleration{{Key: "dedicated", Value: "web"}}, all(dbReason, drainReason, evictReason)},
		{"Exists on a key", []scheduler.Toleration{{Key: "dedicated", Operator: "Exists"}, {Key: "gpu", Operator: "Exists"}}, all("", drainReason, "")},
		{"effect must match when set", []scheduler.Toleration{{Key: "gpu", Operator: "Exists", Effect: "NoSchedule"}}, all(dbReason, drainReason, evictReason)},
		{"empty key with Exists tolerates everything", []scheduler.Toleration{{Operator: "Exists"}}, all("", "", "")},
		{"empty key with Exists and an effect", []scheduler.Toleration{{Operator: "Exists", Effect: "NoSchedule"}}, all("", "", "TaintToleration: untolerated taint gpu:NoExecute")},
		{"maintenance tolerated", []scheduler.Toleration{{Key: nodelabels.TaintMaintenance, Operator: "Exists"}}, all(dbReason, "", evictReason)},
	}
	f := newPlugin[scheduler.FilterPlugin](t, newTaintFilter, nil)
	for _, tt := range tests {
		req := request("vm")
		req.Tolerations = tt.tols
		got, err := filterVerdicts(f, &req, nodes)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %v, %v\nwant %v", tt.name, got, err, tt.want)
		}
	}
	req := request("vm")
	req.Tolerations = []scheduler.Toleration{{Key: "a", Operator: "Exists", Value: "x"}}
	if err := newPlugin[scheduler.RequestValidator](t, newTaintFilter, nil).ValidateRequest(&req); err == nil ||
		err.Error() != `toleration: block 1: value: operator "Exists" takes no value; remove value or use operator "Equal"` {
		t.Errorf("invalid toleration: %v", err)
	}
}

func TestTaintTolerationScore(t *testing.T) {
	nodes := infos([]scheduler.Node{
		labelled("none", nil, "dedicated=db:NoSchedule"),
		labelled("one", nil, "old-hw:PreferNoSchedule"),
		labelled("two", nil, "old-hw:PreferNoSchedule", "slow-disk=yes:PreferNoSchedule"),
	})
	s := newPlugin[scheduler.ScorePlugin](t, newTaintScore, nil)
	for _, tt := range []struct {
		name string
		tols []scheduler.Toleration
		want map[string]float64
	}{
		{"fewer untolerated PreferNoSchedule taints score higher", nil, map[string]float64{"none": 100, "one": 50, "two": 0}},
		{"a PreferNoSchedule toleration removes one", []scheduler.Toleration{{Key: "old-hw", Operator: "Exists", Effect: "PreferNoSchedule"}},
			map[string]float64{"none": 100, "one": 100, "two": 0}},
		{"a NoSchedule toleration does not count", []scheduler.Toleration{{Key: "old-hw", Operator: "Exists", Effect: "NoSchedule"}},
			map[string]float64{"none": 100, "one": 50, "two": 0}},
		{"nothing untolerated: every node scores 100, as in kube", []scheduler.Toleration{{Operator: "Exists"}}, map[string]float64{"none": 100, "one": 100, "two": 100}},
	} {
		req := request("vm")
		req.Tolerations = tt.tols
		if got := scoreNodes(s, &req, nodes); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestNodeAffinityScore(t *testing.T) {
	nodes := infos([]scheduler.Node{
		labelled("both", map[string]string{"disk": "nvme", "zone": "a"}),
		labelled("disk", map[string]string{"disk": "ssd", "zone": "b"}),
		labelled("zone", map[string]string{"disk": "hdd", "zone": "a"}),
		labelled("bare", nil),
	})
	s := newPlugin[scheduler.ScorePlugin](t, newNodeAffinity, nil)
	for _, tt := range []struct {
		name  string
		terms []scheduler.NodeAffinityTerm
		want  map[string]float64
	}{
		{"weights summed, normalised to the best", []scheduler.NodeAffinityTerm{term("disk", "In", 60, "nvme", "ssd"), term("zone", "In", 20, "a")},
			map[string]float64{"both": 100, "disk": 75, "zone": 25, "bare": 0}},
		{"required terms do not score", []scheduler.NodeAffinityTerm{term("zone", "In", 0, "a")}, map[string]float64{"both": 0, "disk": 0, "zone": 0, "bare": 0}},
		{"DoesNotExist prefers the bare node", []scheduler.NodeAffinityTerm{term("disk", "DoesNotExist", 10)}, map[string]float64{"both": 0, "disk": 0, "zone": 0, "bare": 100}},
		{"nothing matches: every node the same", []scheduler.NodeAffinityTerm{term("gpu", "Exists", 100)}, map[string]float64{"both": 0, "disk": 0, "zone": 0, "bare": 0}},
	} {
		req := request("vm")
		req.NodeAffinity = tt.terms
		if got := scoreNodes(s, &req, nodes); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Through the whole pipeline: the unschedulable summary groups nodes by their first failing
// requirement, and a preference decides between otherwise equal nodes.
func TestNodePolicyPipeline(t *testing.T) {
	p := mustProfile(scheduler.PluginConfig{})
	nodes := []scheduler.Node{
		labelled("pve1", map[string]string{"zone": "b"}), labelled("pve2", map[string]string{"zone": "b"}),
		labelled("pve3", map[string]string{"zone": "c"}),
		labelled("pve4", map[string]string{"zone": "a"}, "node.qemu-scheduler/maintenance:NoSchedule"),
	}
	req := request("web")
	req.NodeSelector = map[string]string{"zone": "a"}
	_, err := p.Schedule(scheduler.Snapshot{Nodes: nodes}, []scheduler.Request{req}, scheduler.Options{})
	want := "0/4 nodes are available: 3 node(s) didn't match node selector zone=a, 1 node(s) had untolerated taint node.qemu-scheduler/maintenance"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
	req.Tolerations = []scheduler.Toleration{{Key: nodelabels.TaintMaintenance, Operator: "Exists"}}
	d, err := p.Schedule(scheduler.Snapshot{Nodes: nodes}, []scheduler.Request{req}, scheduler.Options{})
	if err != nil || d.Placements[0].Node != "pve4" {
		t.Fatalf("with the toleration: %v %+v", err, d)
	}

	equal := []scheduler.Node{labelled("pve1", map[string]string{"disk": "hdd"}), labelled("pve2", map[string]string{"disk": "nvme"}), labelled("pve3", nil)}
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		r := request(name)
		r.NodeAffinity = []scheduler.NodeAffinityTerm{term("disk", "In", 40, "nvme")}
		d, err := p.Schedule(scheduler.Snapshot{Nodes: equal}, []scheduler.Request{r}, scheduler.Options{})
		if err != nil || d.Placements[0].Node != "pve2" {
			t.Errorf("%s: preferred affinity chose %+v, %v; want pve2", name, d.Placements, err)
		}
	}
}

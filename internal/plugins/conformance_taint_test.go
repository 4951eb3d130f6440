package plugins

import (
	"reflect"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Kube-scheduler's TaintToleration tables (pkg/scheduler/framework/plugins/tainttoleration,
// taint_toleration_test.go), replayed against our plugins, each case under kube's name. Left
// out are the cases of the Gt and Lt toleration operators (a feature gate of kube's; ours are
// Equal and Exists).

func tainted(name string, taints ...scheduler.Taint) scheduler.Node {
	n := node(name, 8, 32)
	n.Taints = taints
	return n
}

func TestKubeTaintTolerationScore(t *testing.T) {
	prefer := func(key, value string) scheduler.Taint {
		return scheduler.Taint{Key: key, Value: value, Effect: "PreferNoSchedule"}
	}
	for _, tc := range []struct {
		name  string
		tols  []scheduler.Toleration
		nodes []scheduler.Node
		want  map[string]float64
	}{
		{"node with taints tolerated by the pod, gets a higher score than those node with intolerable taints",
			[]scheduler.Toleration{{Key: "foo", Operator: "Equal", Value: "bar", Effect: "PreferNoSchedule"}},
			[]scheduler.Node{tainted("nodeA", prefer("foo", "bar")), tainted("nodeB", prefer("foo", "blah"))},
			map[string]float64{"nodeA": 100, "nodeB": 0}},
		{"the nodes that all of their taints are tolerated by the pod, get the same score, no matter how many tolerable taints a node has",
			[]scheduler.Toleration{{Key: "cpu-type", Operator: "Equal", Value: "arm64", Effect: "PreferNoSchedule"},
				{Key: "disk-type", Operator: "Equal", Value: "ssd", Effect: "PreferNoSchedule"}},
			[]scheduler.Node{tainted("nodeA"), tainted("nodeB", prefer("cpu-type", "arm64")), tainted("nodeC", prefer("cpu-type", "arm64"), prefer("disk-type", "ssd"))},
			map[string]float64{"nodeA": 100, "nodeB": 100, "nodeC": 100}},
		{"the more intolerable taints a node has, the lower score it gets.",
			[]scheduler.Toleration{{Key: "foo", Operator: "Equal", Value: "bar", Effect: "PreferNoSchedule"}},
			[]scheduler.Node{tainted("nodeA"), tainted("nodeB", prefer("cpu-type", "arm64")), tainted("nodeC", prefer("cpu-type", "arm64"), prefer("disk-type", "ssd"))},
			map[string]float64{"nodeA": 100, "nodeB": 50, "nodeC": 0}},
		{"only taints and tolerations that have effect PreferNoSchedule are checked by taints-tolerations priority function",
			[]scheduler.Toleration{{Key: "cpu-type", Operator: "Equal", Value: "arm64", Effect: "NoSchedule"},
				{Key: "disk-type", Operator: "Equal", Value: "ssd", Effect: "NoSchedule"}},
			[]scheduler.Node{tainted("nodeA"), tainted("nodeB", scheduler.Taint{Key: "cpu-type", Value: "arm64", Effect: "NoSchedule"}),
				tainted("nodeC", prefer("cpu-type", "arm64"), prefer("disk-type", "ssd"))},
			map[string]float64{"nodeA": 100, "nodeB": 100, "nodeC": 0}},
		{"Default behaviour No taints and tolerations, lands on node with no taints", nil,
			[]scheduler.Node{tainted("nodeA"), tainted("nodeB", prefer("cpu-type", "arm64"))},
			map[string]float64{"nodeA": 100, "nodeB": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := request("pod1")
			r.Tolerations = tc.tols
			if got := scoreNodes(taintScore{}, &r, infos(tc.nodes)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, kube %v", got, tc.want)
			}
		})
	}
}

func TestKubeTaintTolerationFilter(t *testing.T) {
	taint := func(key, value, effect string) scheduler.Taint {
		return scheduler.Taint{Key: key, Value: value, Effect: effect}
	}
	for _, tc := range []struct {
		name   string
		tols   []scheduler.Toleration
		taints []scheduler.Taint
		fits   bool
	}{
		{"A pod having no tolerations can't be scheduled onto a node with nonempty taints", nil,
			[]scheduler.Taint{taint("dedicated", "user1", "NoSchedule")}, false},
		{"A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
			[]scheduler.Toleration{{Key: "dedicated", Value: "user1", Effect: "NoSchedule"}}, []scheduler.Taint{taint("dedicated", "user1", "NoSchedule")}, true},
		{"A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
			[]scheduler.Toleration{{Key: "dedicated", Operator: "Equal", Value: "user2", Effect: "NoSchedule"}}, []scheduler.Taint{taint("dedicated", "user1", "NoSchedule")}, false},
		{"A pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates the taints on the node",
			[]scheduler.Toleration{{Key: "foo", Operator: "Exists", Effect: "NoSchedule"}}, []scheduler.Taint{taint("foo", "bar", "NoSchedule")}, true},
		{"A pod has multiple tolerations, node has multiple taints, all the taints are tolerated, pod can be scheduled onto the node",
			[]scheduler.Toleration{{Key: "dedicated", Operator: "Equal", Value: "user2", Effect: "NoSchedule"}, {Key: "foo", Operator: "Exists", Effect: "NoSchedule"}},
			[]scheduler.Taint{taint("dedicated", "user2", "NoSchedule"), taint("foo", "bar", "NoSchedule")}, true},
		{"A pod has a toleration that keys and values match the taint on the node, but (non-empty) effect doesn't match, can't be scheduled onto the node",
			[]scheduler.Toleration{{Key: "foo", Operator: "Equal", Value: "bar", Effect: "PreferNoSchedule"}}, []scheduler.Taint{taint("foo", "bar", "NoSchedule")}, false},
		{"The pod has a toleration that keys and values match the taint on the node, the effect of toleration is empty, and the effect of taint is NoSchedule. Pod can be scheduled onto the node",
			[]scheduler.Toleration{{Key: "foo", Operator: "Equal", Value: "bar"}}, []scheduler.Taint{taint("foo", "bar", "NoSchedule")}, true},
		{"The pod has a toleration that key and value don't match the taint on the node, but the effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
			[]scheduler.Toleration{{Key: "dedicated", Operator: "Equal", Value: "user2", Effect: "NoSchedule"}}, []scheduler.Taint{taint("dedicated", "user1", "PreferNoSchedule")}, true},
		{"The pod has no toleration, but the effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node", nil,
			[]scheduler.Taint{taint("dedicated", "user1", "PreferNoSchedule")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := request("pod1")
			r.Tolerations = tc.tols
			got := verdicts(t, taintFilter{}, &r, infos([]scheduler.Node{tainted("nodeA", tc.taints...)}))
			if (got["nodeA"] == "") != tc.fits {
				t.Errorf("verdict %q, kube fits %v", got["nodeA"], tc.fits)
			}
		})
	}
}

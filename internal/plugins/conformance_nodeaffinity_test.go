package plugins

import (
	"cmp"
	"maps"
	"reflect"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/nodelabels"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Kube-scheduler's NodeAffinity tables (pkg/scheduler/framework/plugins/nodeaffinity,
// node_affinity_test.go), replayed against our NodeSelector filter and NodeAffinity score,
// each case under kube's name. Kube's matchFields on metadata.name are expressions on the
// built-in label node.qemu-scheduler/name, which every node carries. Left out: the
// scheduler's added affinity (no such profile arg), and the empty or invalid terms kube
// matches against nothing, which are plan errors here.

// term1 is one term of expressions, kube's matchExpressions.
func term1(es ...scheduler.NodeExpression) []scheduler.NodeExpression { return es }

func expr(key, op string, values ...string) scheduler.NodeExpression {
	return scheduler.NodeExpression{Key: key, Operator: op, Values: values}
}

func TestKubeNodeAffinityFilter(t *testing.T) {
	required := func(terms ...[]scheduler.NodeExpression) []scheduler.NodeAffinityTerm {
		return []scheduler.NodeAffinityTerm{{Terms: terms}}
	}
	// name is kube's matchFields requirement metadata.name In values.
	name := func(values ...string) scheduler.NodeExpression { return expr(nodelabels.LabelName, "In", values...) }
	foo := map[string]string{"foo": "bar"}
	for _, tc := range []struct {
		name     string
		selector map[string]string
		affinity []scheduler.NodeAffinityTerm
		labels   map[string]string
		fits     bool
		// node is the node's name, node1 unless given.
		node string
	}{
		{"missing labels", map[string]string{"foo": "bar"}, nil, nil, false, ""},
		{"same labels", map[string]string{"foo": "bar"}, nil, map[string]string{"foo": "bar"}, true, ""},
		{"node labels are superset", map[string]string{"foo": "bar"}, nil, map[string]string{"foo": "bar", "baz": "blah"}, true, ""},
		{"node labels are subset", map[string]string{"foo": "bar", "baz": "blah"}, nil, map[string]string{"foo": "bar"}, false, ""},
		{"Pod with matchExpressions using In operator that matches the existing node", nil,
			required(term1(expr("foo", "In", "bar", "value2"))), map[string]string{"foo": "bar"}, true, ""},
		{"Pod with matchExpressions using Gt operator that matches the existing node", nil,
			required(term1(expr("kernel-version", "Gt", "0204"))), map[string]string{"kernel-version": "0206"}, true, ""},
		{"Pod with matchExpressions using NotIn operator that matches the existing node", nil,
			required(term1(expr("mem-type", "NotIn", "DDR", "DDR2"))), map[string]string{"mem-type": "DDR3"}, true, ""},
		{"Pod with matchExpressions using Exists operator that matches the existing node", nil,
			required(term1(expr("GPU", "Exists"))), map[string]string{"GPU": "NVIDIA-GRID-K1"}, true, ""},
		{"Pod with affinity that don't match node's labels won't schedule onto the node", nil,
			required(term1(expr("foo", "In", "value1", "value2"))), map[string]string{"foo": "bar"}, false, ""},
		{"Pod with no Affinity will schedule onto a node", nil, nil, map[string]string{"foo": "bar"}, true, ""},
		{"Pod with multiple matchExpressions ANDed that matches the existing node", nil,
			required(term1(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER"))), map[string]string{"GPU": "NVIDIA-GRID-K1"}, true, ""},
		{"Pod with multiple matchExpressions ANDed that doesn't match the existing node", nil,
			required(term1(expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER"))), map[string]string{"GPU": "NVIDIA-GRID-K1"}, false, ""},
		{"Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule onto the node", nil,
			required(term1(expr("foo", "In", "bar", "value2")), term1(expr("diffkey", "In", "wrong", "value2"))), map[string]string{"foo": "bar"}, true, ""},
		{"Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) both are satisfied, will schedule onto the node",
			map[string]string{"foo": "bar"}, required(term1(expr("foo", "Exists"))), map[string]string{"foo": "bar"}, true, ""},
		{"Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing that we are deprecating) is not satisfied, won't schedule onto the node",
			map[string]string{"foo": "bar"}, required(term1(expr("foo", "Exists"))), map[string]string{"foo": "barrrrrr"}, false, ""},
		{"Pod with matchFields using In operator that matches the existing node", nil, required(term1(name("node1"))), nil, true, "node1"},
		{"Pod with matchFields using In operator that does not match the existing node", nil, required(term1(name("node1"))), nil, false, "node2"},
		{"Pod with two terms: matchFields does not match, but matchExpressions matches", nil,
			required(term1(name("node1"), name("node2")), term1(expr("foo", "In", "bar"))), foo, true, "node2"},
		{"Pod with one term: matchFields does not match, but matchExpressions matches", nil,
			required(term1(name("node1"), expr("foo", "In", "bar"))), foo, false, "node2"},
		{"Pod with one term: both matchFields and matchExpressions match", nil,
			required(term1(name("node1"), expr("foo", "In", "bar"))), foo, true, "node1"},
		{"Pod with two terms: both matchFields and matchExpressions do not match", nil,
			required(term1(name("node1")), term1(expr("foo", "In", "not-match-to-bar"))), foo, false, "node2"},
		{"Pod with two terms of node.Name affinity", nil, required(term1(name("node1")), term1(name("node2"))), nil, true, "node2"},
		{"Pod with two conflicting mach field requirements", nil, required(term1(name("node1"), name("node2"))), foo, false, "node2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := request("p")
			r.NodeSelector, r.NodeAffinity = tc.selector, tc.affinity
			n := node(cmp.Or(tc.node, "node1"), 8, 32)
			n.Labels = maps.Clone(tc.labels)
			if tc.node != "" {
				// The built-in name label, as nodelabels gives every node.
				n.Labels = map[string]string{nodelabels.LabelName: tc.node}
				maps.Copy(n.Labels, tc.labels)
			}
			got := verdicts(t, nodeSelector{}, &r, infos([]scheduler.Node{n}))
			if (got[n.Name] == "") != tc.fits {
				t.Errorf("verdict %q, kube fits %v", got[n.Name], tc.fits)
			}
		})
	}
}

// Kube's NodeAffinity score normalises in integers (100*score/max truncated), as ours; the
// scores compare exactly.
func TestKubeNodeAffinityScore(t *testing.T) {
	label1 := map[string]string{"foo": "bar"}
	label2 := map[string]string{"key": "value"}
	label3 := map[string]string{"az": "az1"}
	label4 := map[string]string{"abc": "az11", "def": "az22"}
	label5 := map[string]string{"foo": "bar", "key": "value", "az": "az1"}
	affinity1 := []scheduler.NodeAffinityTerm{scheduler.Expression(2, "foo", "In", "bar")}
	affinity2 := []scheduler.NodeAffinityTerm{scheduler.Expression(2, "foo", "In", "bar"), scheduler.Expression(4, "key", "In", "value"),
		{Terms: [][]scheduler.NodeExpression{term1(expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1"))}, Weight: 5}}
	labelled := func(names []string, labels ...map[string]string) []scheduler.Node {
		out := make([]scheduler.Node, len(names))
		for i, name := range names {
			out[i] = node(name, 8, 32)
			out[i].Labels = labels[i]
		}
		return out
	}
	three := []string{"node1", "node2", "node3"}
	for _, tc := range []struct {
		name     string
		affinity []scheduler.NodeAffinityTerm
		nodes    []scheduler.Node
		want     map[string]float64
	}{
		{"all nodes are same priority as NodeAffinity is nil", nil, labelled(three, label1, label2, label3),
			map[string]float64{"node1": 0, "node2": 0, "node3": 0}},
		{"no node matches preferred scheduling requirements in NodeAffinity of pod so all nodes' priority is zero", affinity1,
			labelled(three, label4, label2, label3), map[string]float64{"node1": 0, "node2": 0, "node3": 0}},
		{"only node1 matches the preferred scheduling requirements of pod", affinity1, labelled(three, label1, label2, label3),
			map[string]float64{"node1": 100, "node2": 0, "node3": 0}},
		{"all nodes matches the preferred scheduling requirements of pod but with different priorities ", affinity2,
			labelled([]string{"node1", "node5", "node2"}, label1, label5, label2), map[string]float64{"node1": 18, "node5": 100, "node2": 36}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := request("p")
			r.NodeAffinity = tc.affinity
			got := scoreNodes(nodeAffinity{}, &r, infos(tc.nodes))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, kube %v", got, tc.want)
			}
		})
	}
}

package plugins

import (
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Kube-scheduler's PodTopologySpread tables (pkg/scheduler/framework/plugins/podtopologyspread,
// filtering_test.go and scoring_test.go), replayed against our plugins. Each case keeps kube's
// name; a pod label foo or bar is a VM tag, a selector "foo exists" the group of that tag, and
// kube's label "node" (equal to the node's name in every case ported) our topology key "node".
// Left out are the cases our model cannot express: namespaces, terminating pods, null
// selectors, services and owner refs. Our key "node" always exists, so a case with a node lacking
// kube's "node" label uses a plain label for it; matchLabelKeys become tags of the selector.

// kn is a node of a kube case: labels as "key=value"; "unschedulable" adds kube's
// node.kubernetes.io/unschedulable:NoSchedule taint.
func kn(name string, labels ...string) scheduler.Node {
	n := node(name, 64, 256)
	n.Labels = map[string]string{}
	for _, l := range labels {
		if l == "unschedulable" {
			n.Taints = append(n.Taints, scheduler.Taint{Key: "node.kubernetes.io/unschedulable", Effect: "NoSchedule"})
			continue
		}
		k, v, _ := strings.Cut(l, "=")
		n.Labels[k] = v
	}
	return n
}

// kp is an existing pod: a running guest on a node with tags; ids are given by kubeSnapshot.
func kp(nodeName string, tags ...string) scheduler.Guest { return tagged(0, nodeName, tags...) }

// kubeSnapshot numbers the pods from 100, as guests need distinct ids.
func kubeSnapshot(nodes []scheduler.Node, pods []scheduler.Guest) []*scheduler.NodeInfo {
	for i := range pods {
		pods[i].VMID = 100 + i
	}
	return infos(nodes, pods...)
}

// ks is one spread constraint with kube's defaults: node affinity Honor, node taints Ignore
// (ours defaults to Honor for both, so every ported case states kube's).
func ks(maxSkew int, key, when, tag string, opts ...func(*scheduler.SpreadConstraint)) scheduler.SpreadConstraint {
	c := scheduler.SpreadConstraint{Tags: []string{tag}, TopologyKey: key, MaxSkew: maxSkew, WhenUnsatisfiable: when,
		NodeAffinityPolicy: PolicyHonor, NodeTaintsPolicy: PolicyIgnore}
	for _, o := range opts {
		o(&c)
	}
	return c
}

func minDomains(n int) func(*scheduler.SpreadConstraint) {
	return func(c *scheduler.SpreadConstraint) { c.MinDomains = n }
}
func affinityPolicy(p string) func(*scheduler.SpreadConstraint) {
	return func(c *scheduler.SpreadConstraint) { c.NodeAffinityPolicy = p }
}
func taintsPolicy(p string) func(*scheduler.SpreadConstraint) {
	return func(c *scheduler.SpreadConstraint) { c.NodeTaintsPolicy = p }
}

// fourNodes are kube's node-a, node-b (zone1), node-x, node-y (zone2), extra labels appended.
func fourNodes(extra map[string][]string) []scheduler.Node {
	var out []scheduler.Node
	for _, n := range []struct{ name, zone string }{{"node-a", "zone1"}, {"node-b", "zone1"}, {"node-x", "zone2"}, {"node-y", "zone2"}} {
		out = append(out, kn(n.name, append([]string{"zone=" + n.zone, "node=" + n.name}, extra[n.name]...)...))
	}
	return out
}

// pods puts count pods with tags on each node: "node-a:2".
func pods(tags []string, perNode ...string) []scheduler.Guest {
	var out []scheduler.Guest
	for _, p := range perNode {
		name, count, _ := strings.Cut(p, ":")
		n := 1
		if count != "" {
			n = int(count[0] - '0')
		}
		for i := 0; i < n; i++ {
			out = append(out, kp(name, tags...))
		}
	}
	return out
}

var foo, bar, fooBar = []string{"foo"}, []string{"bar"}, []string{"foo", "bar"}

type kubeSpreadFilterCase struct {
	name     string
	tags     []string
	selector map[string]string
	affinity []scheduler.NodeAffinityTerm
	spreads  []scheduler.SpreadConstraint
	nodes    []scheduler.Node
	pods     []scheduler.Guest
	// fit are the nodes kube's Filter lets through (its Success).
	fit []string
}

func TestKubePodTopologySpreadFilter(t *testing.T) {
	dns := DoNotSchedule
	zone := func(maxSkew int, tag string, opts ...func(*scheduler.SpreadConstraint)) scheduler.SpreadConstraint {
		return ks(maxSkew, "zone", dns, tag, opts...)
	}
	byNode := func(maxSkew int, tag string, opts ...func(*scheduler.SpreadConstraint)) scheduler.SpreadConstraint {
		return ks(maxSkew, TopologyNode, dns, tag, opts...)
	}
	fooNodes := func(name string, labels ...string) scheduler.Node {
		return kn(name, append([]string{"node=" + name}, labels...)...)
	}
	inclusionNodes := []scheduler.Node{fooNodes("node-a", "foo="), fooNodes("node-b", "foo="), fooNodes("node-x", "foo="), fooNodes("node-y")}
	taintedNodes := []scheduler.Node{fooNodes("node-a", "foo="), fooNodes("node-b", "foo="), fooNodes("node-x", "foo="), fooNodes("node-y", "unschedulable")}
	threeNodes := []scheduler.Node{kn("node-a", "node=node-a"), kn("node-b", "node=node-b"), kn("node-c", "node=node-c")}
	fooSel := map[string]string{"foo": ""}
	cases := []kubeSpreadFilterCase{
		// TestSingleConstraint
		{name: "no existing pods", tags: foo, spreads: []scheduler.SpreadConstraint{zone(1, "foo")}, nodes: fourNodes(nil),
			fit: []string{"node-a", "node-b", "node-x", "node-y"}},
		{name: "no existing pods, incoming pod doesn't match itself", tags: foo, spreads: []scheduler.SpreadConstraint{zone(1, "bar")},
			nodes: fourNodes(nil), fit: []string{"node-a", "node-b", "node-x", "node-y"}},
		{name: "pods spread across zones as 3/3, all nodes fit", tags: foo, spreads: []scheduler.SpreadConstraint{zone(1, "foo")},
			nodes: fourNodes(nil), pods: pods(foo, "node-a:2", "node-b", "node-y:3"), fit: []string{"node-a", "node-b", "node-x", "node-y"}},
		{name: "pods spread across zones as 1/2 due to absence of label 'zone' on node-b", tags: foo,
			spreads: []scheduler.SpreadConstraint{zone(1, "foo")},
			nodes:   []scheduler.Node{kn("node-a", "zone=zone1"), kn("node-b", "zon=zone1"), kn("node-x", "zone=zone2"), kn("node-y", "zone=zone2")},
			pods:    pods(foo, "node-a", "node-b", "node-x", "node-y"), fit: []string{"node-a"}},
		{name: "pod cannot be scheduled as all nodes don't have label 'rack'", tags: foo, spreads: []scheduler.SpreadConstraint{ks(1, "rack", dns, "foo")},
			nodes: []scheduler.Node{kn("node-a", "zone=zone1"), kn("node-x", "zone=zone2")}},
		{name: "pods spread across nodes as 2/1/0/3, only node-x fits", tags: foo, spreads: []scheduler.SpreadConstraint{byNode(1, "foo")},
			nodes: fourNodes(nil), pods: pods(foo, "node-a:2", "node-b", "node-y:3"), fit: []string{"node-x"}},
		{name: "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit", tags: foo, spreads: []scheduler.SpreadConstraint{byNode(2, "foo")},
			nodes: fourNodes(nil), pods: pods(foo, "node-a:2", "node-b", "node-y:3"), fit: []string{"node-b", "node-x"}},
		{name: "pods spread across nodes as 2/1/0/3, but pod doesn't match itself", tags: bar, spreads: []scheduler.SpreadConstraint{byNode(1, "foo")},
			nodes: fourNodes(nil), pods: pods(foo, "node-a:2", "node-b", "node-y:3"), fit: []string{"node-b", "node-x"}},
		{name: "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits", tags: foo,
			affinity: []scheduler.NodeAffinityTerm{scheduler.Expression(0, "node", "In", "node-a", "node-y")},
			spreads:  []scheduler.SpreadConstraint{byNode(1, "foo")}, nodes: fourNodes(nil), pods: pods(foo, "node-a:2", "node-b", "node-y:3"),
			// As in kube's unit test, node-b and node-x fit the spread filter alone; the
			// node selector filter rejects them in the pipeline.
			fit: []string{"node-a", "node-b", "node-x"}},
		{name: "incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits", tags: foo,
			affinity: []scheduler.NodeAffinityTerm{scheduler.Expression(0, "node", "NotIn", "node-b")},
			spreads:  []scheduler.SpreadConstraint{zone(1, "foo")}, nodes: fourNodes(nil), pods: pods(foo, "node-b:2", "node-y"),
			fit: []string{"node-a", "node-b"}},
		{name: "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, then the third node fits", tags: foo,
			spreads: []scheduler.SpreadConstraint{byNode(2, "foo", minDomains(4))}, nodes: threeNodes,
			pods: pods(foo, "node-a:2", "node-b:2", "node-c"), fit: []string{"node-c"}},
		{name: "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, then the all nodes fit", tags: foo,
			spreads: []scheduler.SpreadConstraint{byNode(2, "foo", minDomains(2))}, nodes: threeNodes,
			pods: pods(foo, "node-a:2", "node-b:2", "node-c"), fit: []string{"node-a", "node-b", "node-c"}},
		{name: "pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, then the third and fourth nodes fit", tags: foo,
			spreads: []scheduler.SpreadConstraint{zone(2, "foo", minDomains(3))}, nodes: fourNodes(nil),
			pods: pods(foo, "node-a", "node-b", "node-y"), fit: []string{"node-x", "node-y"}},
		{name: "pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, then the all nodes fit", tags: foo,
			spreads: []scheduler.SpreadConstraint{zone(2, "foo", minDomains(1))}, nodes: fourNodes(nil),
			pods: pods(foo, "node-a", "node-b", "node-y"), fit: []string{"node-a", "node-b", "node-x", "node-y"}},
		{name: "NodeAffinityPolicy honored with labelSelectors", tags: foo, selector: fooSel,
			spreads: []scheduler.SpreadConstraint{byNode(1, "foo")}, nodes: inclusionNodes,
			pods: pods(foo, "node-a", "node-b", "node-y"), fit: []string{"node-x", "node-y"}},
		{name: "NodeAffinityPolicy ignored with labelSelectors", tags: foo, selector: fooSel,
			spreads: []scheduler.SpreadConstraint{byNode(1, "foo", affinityPolicy(PolicyIgnore))}, nodes: inclusionNodes,
			pods: pods(foo, "node-a", "node-b", "node-y"), fit: []string{"node-x"}},
		{name: "NodeAffinityPolicy honored with nodeAffinity", tags: foo,
			affinity: []scheduler.NodeAffinityTerm{scheduler.Expression(0, "foo", "In", "")},
			spreads:  []scheduler.SpreadConstraint{byNode(1, "foo")}, nodes: inclusionNodes,
			pods: pods(foo, "node-a", "node-b", "node-y"), fit: []string{"node-x", "node-y"}},
		{name: "NodeAffinityPolicy ignored with labelSelectors", tags: foo, // kube's second case of this name uses nodeAffinity
			affinity: []scheduler.NodeAffinityTerm{scheduler.Expression(0, "foo", "In", "")},
			spreads:  []scheduler.SpreadConstraint{byNode(1, "foo", affinityPolicy(PolicyIgnore))}, nodes: inclusionNodes,
			pods: pods(foo, "node-a", "node-b", "node-y"), fit: []string{"node-x"}},
		{name: "NodeTaintsPolicy honored", tags: foo, spreads: []scheduler.SpreadConstraint{byNode(1, "foo", taintsPolicy(PolicyHonor))},
			nodes: taintedNodes, pods: pods(foo, "node-a", "node-b", "node-y"), fit: []string{"node-x", "node-y"}},
		{name: "NodeTaintsPolicy ignored", tags: foo, spreads: []scheduler.SpreadConstraint{byNode(1, "foo")},
			nodes: taintedNodes, pods: pods(foo, "node-a", "node-b", "node-y"), fit: []string{"node-x"}},

		// TestMultipleConstraints
		{name: "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]", tags: foo,
			spreads: []scheduler.SpreadConstraint{zone(1, "foo"), byNode(1, "foo")}, nodes: fourNodes(nil),
			pods: pods(foo, "node-a:2", "node-b", "node-y:3"), fit: []string{"node-x"}},
		{name: "two Constraints on zone and node, spreads = [3/4, 2/1/0/4]", tags: foo,
			spreads: []scheduler.SpreadConstraint{zone(1, "foo"), byNode(1, "foo")}, nodes: fourNodes(nil),
			pods: pods(foo, "node-a:2", "node-b", "node-y:4")},
		{name: "Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]", tags: fooBar,
			spreads: []scheduler.SpreadConstraint{zone(1, "foo"), byNode(1, "bar")}, nodes: fourNodes(nil),
			pods: slices.Concat(pods(foo, "node-a"), pods(bar, "node-y")), fit: []string{"node-x"}},
		{name: "Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]", tags: fooBar,
			spreads: []scheduler.SpreadConstraint{zone(1, "foo"), byNode(1, "bar")}, nodes: fourNodes(nil),
			pods: slices.Concat(pods(foo, "node-a"), pods(bar, "node-x", "node-y"))},
		{name: "Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]", tags: fooBar,
			spreads: []scheduler.SpreadConstraint{zone(1, "foo"), byNode(1, "bar")}, nodes: fourNodes(nil),
			pods: slices.Concat(pods(foo, "node-a"), pods(fooBar, "node-a"), pods(foo, "node-y"), pods(fooBar, "node-y"), pods(foo, "node-y")),
			fit:  []string{"node-b"}},
		{name: "Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint", tags: bar,
			spreads: []scheduler.SpreadConstraint{zone(1, "foo"), byNode(1, "bar")}, nodes: fourNodes(nil),
			pods: slices.Concat(pods(foo, "node-a"), pods(bar, "node-x", "node-y")), fit: []string{"node-a", "node-b"}},
		// Kube's label "node" is our plain label "host" here, which node-x lacks (our key "node"
		// always exists).
		{name: "two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]", tags: foo,
			spreads: []scheduler.SpreadConstraint{zone(1, "foo"), ks(1, "host", dns, "foo")},
			nodes: []scheduler.Node{kn("node-a", "zone=zone1", "host=node-a"), kn("node-b", "zone=zone1", "host=node-b"),
				kn("node-x", "zone=zone2"), kn("node-y", "zone=zone2", "host=node-y")},
			pods: pods(foo, "node-a", "node-y"), fit: []string{"node-b"}},
		{name: "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore", tags: foo, selector: fooSel,
			spreads: []scheduler.SpreadConstraint{zone(1, "foo"), byNode(1, "foo", affinityPolicy(PolicyIgnore))},
			nodes:   fourNodes(map[string][]string{"node-a": {"foo="}, "node-b": {"foo="}, "node-x": {"foo="}}),
			pods:    pods(foo, "node-a", "node-b", "node-y"), fit: []string{"node-x"}},
		{name: "two node inclusion Constraints, zone: honor/honor, node: honor/ignore", tags: foo,
			spreads: []scheduler.SpreadConstraint{zone(1, "foo", taintsPolicy(PolicyHonor)), byNode(1, "foo")},
			nodes:   fourNodes(map[string][]string{"node-a": {"foo="}, "node-b": {"foo="}, "node-x": {"foo="}, "node-y": {"unschedulable"}}),
			pods:    pods(foo, "node-a", "node-b", "node-y"), fit: []string{"node-x"}},
		{name: "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore", tags: foo, selector: fooSel,
			spreads: []scheduler.SpreadConstraint{zone(1, "foo"), byNode(1, "foo")},
			nodes:   fourNodes(map[string][]string{"node-a": {"foo="}, "node-x": {"foo="}, "node-y": {"foo=", "unschedulable"}}),
			pods:    pods(foo, "node-a", "node-b", "node-y"), fit: []string{"node-b", "node-x"}},
		{name: "two node inclusion Constraints, zone: honor/honor, node: ignore/ignore", tags: foo, selector: fooSel,
			spreads: []scheduler.SpreadConstraint{zone(1, "foo", taintsPolicy(PolicyHonor)), byNode(1, "foo", affinityPolicy(PolicyIgnore))},
			nodes:   fourNodes(map[string][]string{"node-a": {"foo="}, "node-x": {"foo="}, "node-y": {"foo=", "unschedulable"}}),
			pods:    pods(foo, "node-a", "node-b", "node-y"), fit: []string{"node-x"}},
		{name: "two Constraints on zone, spreads = [3/3, 2/1]", tags: fooBar,
			spreads: []scheduler.SpreadConstraint{zone(1, "bar"), zone(1, "foo")}, nodes: fourNodes(nil),
			pods: slices.Concat(pods(fooBar, "node-a"), pods(foo, "node-a"), pods(fooBar, "node-b"), pods(foo, "node-y"), pods(fooBar, "node-y"), pods(foo, "node-y")),
			fit:  []string{"node-x", "node-y"}},
		{name: "two Constraints on zone, spreads = [3/4, 2/1]", tags: fooBar,
			spreads: []scheduler.SpreadConstraint{zone(1, "bar"), zone(1, "foo")}, nodes: fourNodes(nil),
			pods: slices.Concat(pods(fooBar, "node-a"), pods(foo, "node-a"), pods(fooBar, "node-b"), pods(foo, "node-y"), pods(fooBar, "node-y"), pods(foo, "node-y:2"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := request("p")
			r.Tags, r.NodeSelector, r.NodeAffinity, r.TopologySpread = tc.tags, tc.selector, tc.affinity, tc.spreads
			got := verdicts(t, topologySpreadFilter{}, &r, kubeSnapshot(tc.nodes, tc.pods))
			var fit []string
			for n, reason := range got {
				if reason == "" {
					fit = append(fit, n)
				}
			}
			sort.Strings(fit)
			if !reflect.DeepEqual(fit, tc.fit) {
				t.Errorf("fit %v, kube fits %v\n%v", fit, tc.fit, got)
			}
		})
	}
}

type kubeSpreadScoreCase struct {
	name     string
	tags     []string
	selector map[string]string
	affinity []scheduler.NodeAffinityTerm
	spreads  []scheduler.SpreadConstraint
	// nodes are the feasible ones, failed the others of the snapshot (kube's failedNodes).
	nodes, failed []scheduler.Node
	pods          []scheduler.Guest
	// want is kube's normalised score per feasible node.
	want map[string]float64
}

func TestKubePodTopologySpreadScore(t *testing.T) {
	sa := ScheduleAnyway
	host := func(maxSkew int, tag string, opts ...func(*scheduler.SpreadConstraint)) scheduler.SpreadConstraint {
		return ks(maxSkew, TopologyNode, sa, tag, opts...)
	}
	zone := func(tag string) scheduler.SpreadConstraint { return ks(1, "zone", sa, tag) }
	hosts := func(names ...string) []scheduler.Node {
		var out []scheduler.Node
		for _, n := range names {
			out = append(out, kn(n, "node="+n))
		}
		return out
	}
	zoned := func(zone string, names ...string) []scheduler.Node {
		var out []scheduler.Node
		for _, n := range names {
			out = append(out, kn(n, "zone="+zone, "node="+n))
		}
		return out
	}
	const hostname = "kubernetes.io/hostname"
	fooSel := map[string]string{"foo": ""}
	fooAffinity := []scheduler.NodeAffinityTerm{scheduler.Expression(0, "foo", "In", "")}
	inclusion := []scheduler.Node{kn("node-a", "node=node-a", "foo="), kn("node-b", "node=node-b", "foo="), kn("node-c", "node=node-c")}
	tainted := []scheduler.Node{kn("node-a", "node=node-a"), kn("node-b", "node=node-b"), kn("node-c", "node=node-c", "unschedulable")}
	inclusionPods := pods(foo, "node-a:2", "node-b", "node-c")
	cases := []kubeSpreadScoreCase{
		{name: "one constraint on node, no existing pods", tags: foo, spreads: []scheduler.SpreadConstraint{host(1, "foo")},
			nodes: hosts("node-a", "node-b"), want: map[string]float64{"node-a": 100, "node-b": 100}},
		{name: "one constraint on node, only one node is candidate", tags: foo, spreads: []scheduler.SpreadConstraint{host(1, "foo")},
			nodes: hosts("node-a"), failed: hosts("node-b"), pods: pods(foo, "node-a:2", "node-b"), want: map[string]float64{"node-a": 100}},
		{name: "one constraint on node, all nodes have the same number of matching pods", tags: foo, spreads: []scheduler.SpreadConstraint{host(1, "foo")},
			nodes: hosts("node-a", "node-b"), pods: pods(foo, "node-a", "node-b"), want: map[string]float64{"node-a": 100, "node-b": 100}},
		{name: "one constraint on node, all 4 nodes are candidates", tags: foo, spreads: []scheduler.SpreadConstraint{host(1, "foo")},
			nodes: hosts("node-a", "node-b", "node-c", "node-d"), pods: pods(foo, "node-a:2", "node-b", "node-d:3"),
			want: map[string]float64{"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0}},
		{name: "one constraint on node, all 4 nodes are candidates, maxSkew=2", tags: foo, spreads: []scheduler.SpreadConstraint{host(2, "foo")},
			nodes: hosts("node-a", "node-b", "node-c", "node-d"), pods: pods(foo, "node-a:2", "node-b", "node-d:3"),
			want: map[string]float64{"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16}},
		{name: "one constraint on node, all 4 nodes are candidates, maxSkew=3", tags: foo, spreads: []scheduler.SpreadConstraint{host(3, "foo")},
			nodes: hosts("node-a", "node-b", "node-c", "node-d"), pods: pods(foo, "node-a:4", "node-b:3", "node-c:2", "node-d"),
			want: map[string]float64{"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100}},
		{name: "one constraint on node, 3 out of 4 nodes are candidates", tags: foo, spreads: []scheduler.SpreadConstraint{host(1, "foo")},
			nodes: hosts("node-a", "node-b", "node-x"), failed: hosts("node-y"), pods: pods(foo, "node-a:4", "node-b:2", "node-x", "node-y:3"),
			want: map[string]float64{"node-a": 33, "node-b": 83, "node-x": 100}},
		// Our key "node" always exists: kube's hostname label is a plain label here.
		{name: "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key", tags: foo,
			spreads: []scheduler.SpreadConstraint{ks(1, hostname, sa, "foo")},
			nodes:   []scheduler.Node{kn("node-a", hostname+"=node-a"), kn("node-b", "n=node-b"), kn("node-x", hostname+"=node-x")},
			failed:  []scheduler.Node{kn("node-y", hostname+"=node-y")}, pods: pods(foo, "node-a:4", "node-b:2", "node-x", "node-y:3"),
			want: map[string]float64{"node-a": 16, "node-b": 0, "node-x": 100}},
		{name: "one constraint on zone, 3 out of 4 nodes are candidates", tags: foo, spreads: []scheduler.SpreadConstraint{zone("foo")},
			nodes: slices.Concat(zoned("zone1", "node-a", "node-b"), zoned("zone2", "node-x")), failed: zoned("zone2", "node-y"),
			pods: pods(foo, "node-a:4", "node-b:2", "node-x", "node-y:3"), want: map[string]float64{"node-a": 75, "node-b": 75, "node-x": 100}},
		{name: "two Constraints on zone and node, 2 out of 4 nodes are candidates", tags: foo,
			spreads: []scheduler.SpreadConstraint{zone("foo"), host(1, "foo")},
			nodes:   slices.Concat(zoned("zone1", "node-a"), zoned("zone2", "node-x")), failed: slices.Concat(zoned("zone1", "node-b"), zoned("zone2", "node-y")),
			pods: pods(foo, "node-a:2", "node-b", "node-x:2", "node-y:4"), want: map[string]float64{"node-a": 100, "node-x": 63}},
		{name: "two Constraints on zone, 2 out of 4 nodes are candidates", tags: fooBar,
			spreads: []scheduler.SpreadConstraint{zone("foo"), zone("bar")},
			nodes:   slices.Concat(zoned("zone1", "node-a"), zoned("zone2", "node-x")), failed: slices.Concat(zoned("zone1", "node-b"), zoned("zone2", "node-y")),
			pods: slices.Concat(pods(fooBar, "node-a"), pods(foo, "node-a"), pods(fooBar, "node-b"), pods(foo, "node-y"), pods(fooBar, "node-y"), pods(foo, "node-y")),
			want: map[string]float64{"node-a": 85, "node-x": 100}},
		{name: "two Constraints on zone and node, with different labelSelectors", tags: fooBar,
			spreads: []scheduler.SpreadConstraint{zone("foo"), host(1, "bar")},
			nodes:   slices.Concat(zoned("zone1", "node-a", "node-b"), zoned("zone2", "node-x", "node-y")),
			pods:    slices.Concat(pods(foo, "node-a"), pods(fooBar, "node-b"), pods(foo, "node-y"), pods(bar, "node-y")),
			want:    map[string]float64{"node-a": 60, "node-b": 20, "node-x": 100, "node-y": 60}},
		{name: "two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods", tags: fooBar,
			spreads: []scheduler.SpreadConstraint{zone("foo"), host(1, "bar")},
			nodes:   slices.Concat(zoned("zone1", "node-a", "node-b"), zoned("zone2", "node-x", "node-y")),
			pods:    slices.Concat(pods(bar, "node-b"), pods(foo, "node-x"), pods(fooBar, "node-y")),
			want:    map[string]float64{"node-a": 100, "node-b": 60, "node-x": 40, "node-y": 0}},
		{name: "two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates", tags: fooBar,
			spreads: []scheduler.SpreadConstraint{zone("foo"), host(1, "bar")},
			nodes:   slices.Concat(zoned("zone1", "node-a", "node-b"), zoned("zone2", "node-x")), failed: zoned("zone2", "node-y"),
			pods: slices.Concat(pods(foo, "node-a"), pods(fooBar, "node-b"), pods(foo, "node-y"), pods(bar, "node-y")),
			want: map[string]float64{"node-a": 50, "node-b": 25, "node-x": 100}},
		{name: "minDomains has no effect when ScheduleAnyway", tags: foo, spreads: []scheduler.SpreadConstraint{host(2, "foo", minDomains(10))},
			nodes: hosts("node-a", "node-b", "node-c"), pods: pods(foo, "node-a:2", "node-b:2", "node-c"),
			want: map[string]float64{"node-a": 75, "node-b": 75, "node-c": 100}},
		{name: "NodeAffinityPolicy honoed with labelSelectors", tags: foo, selector: fooSel, spreads: []scheduler.SpreadConstraint{host(1, "foo")},
			nodes: inclusion, pods: inclusionPods, want: map[string]float64{"node-a": 0, "node-b": 33, "node-c": 100}},
		{name: "NodeAffinityPolicy ignored with labelSelectors", tags: foo, selector: fooSel,
			spreads: []scheduler.SpreadConstraint{host(1, "foo", affinityPolicy(PolicyIgnore))},
			nodes:   inclusion, pods: inclusionPods, want: map[string]float64{"node-a": 66, "node-b": 100, "node-c": 100}},
		{name: "NodeAffinityPolicy honoed with nodeAffinity", tags: foo, affinity: fooAffinity, spreads: []scheduler.SpreadConstraint{host(1, "foo")},
			nodes: inclusion, pods: inclusionPods, want: map[string]float64{"node-a": 0, "node-b": 33, "node-c": 100}},
		{name: "NodeAffinityPolicy ignored with nodeAffinity", tags: foo, affinity: fooAffinity,
			spreads: []scheduler.SpreadConstraint{host(1, "foo", affinityPolicy(PolicyIgnore))},
			nodes:   inclusion, pods: inclusionPods, want: map[string]float64{"node-a": 66, "node-b": 100, "node-c": 100}},
		{name: "NodeTaintsPolicy honored", tags: foo, spreads: []scheduler.SpreadConstraint{host(1, "foo", taintsPolicy(PolicyHonor))},
			nodes: tainted, pods: inclusionPods, want: map[string]float64{"node-a": 0, "node-b": 33, "node-c": 100}},
		{name: "NodeTaintsPolicy ignored", tags: foo, spreads: []scheduler.SpreadConstraint{host(1, "foo")},
			nodes: tainted, pods: inclusionPods, want: map[string]float64{"node-a": 66, "node-b": 100, "node-c": 100}},
		{name: "matchLabelKeys ignored when feature gate disabled", tags: fooBar,
			spreads: []scheduler.SpreadConstraint{zone("foo"), host(1, "bar")},
			nodes:   slices.Concat(zoned("zone1", "node-a", "node-b"), zoned("zone2", "node-c", "node-d")),
			pods:    slices.Concat(pods(foo, "node-a"), pods(fooBar, "node-b"), pods(foo, "node-c"), pods(bar, "node-c")),
			want:    map[string]float64{"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100}},
		// matchLabelKeys adds the incoming pod's own value of the key to the selector: an empty
		// selector with matchLabelKeys [foo] is the group of foo, a selector bar with [baz] the
		// VMs that carry both.
		{name: "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty", tags: fooBar,
			spreads: []scheduler.SpreadConstraint{zone("foo"), host(1, "bar")},
			nodes:   slices.Concat(zoned("zone1", "node-a", "node-b"), zoned("zone2", "node-c", "node-d")),
			pods:    slices.Concat(pods(foo, "node-a"), pods(fooBar, "node-b"), pods(foo, "node-c"), pods(bar, "node-c")),
			want:    map[string]float64{"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100}},
		{name: "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty", tags: []string{"foo", "bar", "baz"},
			spreads: []scheduler.SpreadConstraint{zone("foo"), host(1, "bar", func(c *scheduler.SpreadConstraint) { c.Tags = []string{"bar", "baz"} })},
			nodes:   slices.Concat(zoned("zone1", "node-a", "node-b"), zoned("zone2", "node-c", "node-d")),
			pods: slices.Concat(pods(foo, "node-a"), pods([]string{"foo", "bar", "baz"}, "node-b"), pods(foo, "node-c"), pods(bar, "node-c"),
				pods([]string{"bar", "baz"}, "node-c")),
			want: map[string]float64{"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := request("p")
			r.Tags, r.NodeSelector, r.NodeAffinity, r.TopologySpread = tc.tags, tc.selector, tc.affinity, tc.spreads
			all := kubeSnapshot(append(append([]scheduler.Node{}, tc.nodes...), tc.failed...), tc.pods)
			got := scoreFeasible(topologySpreadScore{}, &r, scheduler.NewCycleStateOver(all), all[:len(tc.nodes)])
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, kube %v", got, tc.want)
			}
		})
	}
}

// Kube's "incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits" through
// the whole pipeline: node-b's members do not count, so zone1 is the emptier zone and the VM
// lands on node-a, the only node there it may use.
func TestKubeSpreadSkipsMembersOnUnselectedNodes(t *testing.T) {
	r := request("p")
	r.Tags = foo
	r.NodeAffinity = []scheduler.NodeAffinityTerm{scheduler.Expression(0, "node", "NotIn", "node-b")}
	r.TopologySpread = []scheduler.SpreadConstraint{{Tags: foo, TopologyKey: "zone", MaxSkew: 1, WhenUnsatisfiable: DoNotSchedule}}
	snap := scheduler.Snapshot{Nodes: fourNodes(nil), Guests: pods(foo, "node-b:2", "node-y")}
	for i := range snap.Guests {
		snap.Guests[i].VMID = 100 + i
	}
	d, err := mustProfile(scheduler.PluginConfig{}).Schedule(snap, []scheduler.Request{r}, scheduler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Placements[0].Node; got != "node-a" {
		t.Errorf("placed on %s, want node-a\n%s", got, d.Placements[0].Summary)
	}
}

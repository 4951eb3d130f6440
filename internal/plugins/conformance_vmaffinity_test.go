package plugins

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Kube-scheduler's InterPodAffinity filter table for one node
// (pkg/scheduler/framework/plugins/interpodaffinity, filtering_test.go,
// TestRequiredAffinitySingleNode), replayed against our VMAffinity filter under kube's case
// names. A pod label k=v is two guest tags, "k" and "k-v", so that a selector maps onto ours:
// Exists k is tags [k], DoesNotExist k and NotIn are tags_none_of, In is tags_any_of. An
// existing pod's anti-affinity is the guest's placement record. Left out: namespaces.

// podTags is the tags of a pod with labels "k=v".
func podTags(labels ...string) []string {
	var tags []string
	for _, l := range labels {
		k, v, _ := strings.Cut(l, "=")
		tags = append(tags, strings.ToLower(k), strings.ToLower(k+"-"+v))
	}
	return tags
}

func TestKubeInterPodAffinitySingleNode(t *testing.T) {
	podLabel, podLabel2 := podTags("service=securityscan"), podTags("security=S1")
	term := func(key string, sel scheduler.TagSelector) scheduler.VMGroupTerm {
		return scheduler.VMGroupTerm{Tags: sel.Tags, TagsAnyOf: sel.TagsAnyOf, TagsNoneOf: sel.TagsNoneOf, TopologyKey: key}
	}
	in := func(values ...string) scheduler.TagSelector {
		var any []string
		for _, v := range values {
			any = append(any, "service-"+v)
		}
		return scheduler.TagSelector{TagsAnyOf: any}
	}
	notIn := func(values ...string) scheduler.TagSelector {
		s := in(values...)
		return scheduler.TagSelector{TagsNoneOf: s.TagsAnyOf}
	}
	existing := func(tags []string, anti ...scheduler.VMGroupTerm) scheduler.Guest {
		return recordedGuest(100, "machine1", tags, nil, anti)
	}
	for _, tc := range []struct {
		name           string
		tags           []string
		affinity, anti []scheduler.VMGroupTerm
		pods           []scheduler.Guest
		fits           bool
	}{
		{name: "A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods", fits: true},
		{name: "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches the existing pod",
			tags: podLabel2, affinity: []scheduler.VMGroupTerm{term("region", in("securityscan", "value2"))}, pods: []scheduler.Guest{existing(podLabel)}, fits: true},
		{name: "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in operator in labelSelector that matches the existing pod",
			tags: podLabel2, affinity: []scheduler.VMGroupTerm{term("region", notIn("securityscan3", "value3"))}, pods: []scheduler.Guest{existing(podLabel)}, fits: true},
		{name: "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
			tags: podLabel, affinity: []scheduler.VMGroupTerm{term(TopologyNode, in("antivirusscan", "value2"))}, pods: []scheduler.Guest{existing(podLabel)}},
		{name: "satisfies the PodAffinity with different label Operators in multiple RequiredDuringSchedulingIgnoredDuringExecution ",
			tags: podLabel2, affinity: []scheduler.VMGroupTerm{
				term("region", scheduler.TagSelector{Tags: []string{"service"}, TagsNoneOf: []string{"wrongkey"}}),
				term("region", scheduler.TagSelector{TagsAnyOf: []string{"service-securityscan"}, TagsNoneOf: []string{"service-wrongvalue"}})},
			pods: []scheduler.Guest{existing(podLabel)}, fits: true},
		{name: "The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the node because one of the matchExpression item don't match.",
			tags: podLabel2, affinity: []scheduler.VMGroupTerm{
				term("region", scheduler.TagSelector{Tags: []string{"service"}, TagsNoneOf: []string{"wrongkey"}}),
				term("region", scheduler.TagSelector{TagsAnyOf: []string{"service-securityscan2"}, TagsNoneOf: []string{"service-wrongvalue"}})},
			pods: []scheduler.Guest{existing(podLabel)}},
		{name: "satisfies the PodAffinity and PodAntiAffinity with the existing pod", tags: podLabel2,
			affinity: []scheduler.VMGroupTerm{term("region", in("securityscan", "value2"))}, anti: []scheduler.VMGroupTerm{term("node", in("antivirusscan", "value2"))},
			pods: []scheduler.Guest{existing(podLabel)}, fits: true},
		{name: "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod", tags: podLabel2,
			affinity: []scheduler.VMGroupTerm{term("region", in("securityscan", "value2"))}, anti: []scheduler.VMGroupTerm{term("node", in("antivirusscan", "value2"))},
			pods: []scheduler.Guest{existing(podLabel, term("node", in("antivirusscan", "value2")))}, fits: true},
		{name: "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod", tags: podLabel2,
			affinity: []scheduler.VMGroupTerm{term("region", in("securityscan", "value2"))}, anti: []scheduler.VMGroupTerm{term("zone", in("securityscan", "value2"))},
			pods: []scheduler.Guest{existing(podLabel)}},
		{name: "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the existing pod", tags: podLabel,
			affinity: []scheduler.VMGroupTerm{term("region", in("securityscan", "value2"))}, anti: []scheduler.VMGroupTerm{term("node", in("antivirusscan", "value2"))},
			pods: []scheduler.Guest{existing(podLabel, term("zone", in("securityscan", "value2")))}},
		{name: "pod matches its own Label in PodAffinity and that matches the existing pod Labels", tags: podLabel,
			affinity: []scheduler.VMGroupTerm{term("region", notIn("securityscan", "value2"))}},
		{name: "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",
			tags: podLabel, pods: []scheduler.Guest{existing(podLabel, term("zone", in("securityscan", "value2")))}},
		{name: "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. satisfy PodAntiAffinity symmetry with the existing pod",
			tags: podLabel, pods: []scheduler.Guest{existing(podLabel, term("zone", notIn("securityscan", "value2")))}, fits: true},
		{name: "satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with incoming pod", tags: podLabel,
			anti: []scheduler.VMGroupTerm{exists("service", "region"), exists("security", "region")},
			pods: []scheduler.Guest{existing(podLabel2, exists("security", "zone"))}},
		{name: "PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on AffinityTerms", tags: podLabel,
			anti: []scheduler.VMGroupTerm{exists("service", "zone"), exists("security", "zone")},
			pods: []scheduler.Guest{existing(podLabel2, exists("security", "zone"))}},
		{name: "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on AffinityTerms", tags: podLabel2,
			anti: []scheduler.VMGroupTerm{exists("security", "zone")},
			pods: []scheduler.Guest{existing(podLabel, exists("service", "zone"), exists("security", "zone"))}},
		{name: "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on AffinityTerms", tags: podTags("abc=", "xyz="),
			anti: []scheduler.VMGroupTerm{exists("abc", "zone"), exists("def", "zone")},
			pods: []scheduler.Guest{existing(podTags("def=", "xyz="), exists("abc", "zone"), exists("def", "zone"))}},
		{name: "PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on AffinityTerms", tags: podTags("def=", "xyz="),
			anti: []scheduler.VMGroupTerm{exists("abc", "zone"), exists("def", "zone")},
			pods: []scheduler.Guest{existing(podTags("abc=", "xyz="), exists("abc", "zone"), exists("def", "zone"))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := request("p")
			r.Tags, r.VMAffinity, r.VMAntiAffinity = tc.tags, tc.affinity, tc.anti
			n := node("machine1", 8, 32)
			n.Labels = map[string]string{"region": "r1", "zone": "z11"}
			got := verdicts(t, vmAffinityFilter{}, &r, infos([]scheduler.Node{n}, tc.pods...))
			if (got["machine1"] == "") != tc.fits {
				t.Errorf("verdict %q, kube fits %v", got["machine1"], tc.fits)
			}
		})
	}
}

// recordedGuest is an existing pod: a guest with tags on a node, its affinity and
// anti-affinity in its placement record.
func recordedGuest(vmid int, node string, tags []string, affinity, anti []scheduler.VMGroupTerm) scheduler.Guest {
	g := tagged(vmid, node, tags...)
	if len(affinity) > 0 || len(anti) > 0 {
		g.Recorded = &scheduler.Recorded{Policy: scheduler.Request{VMAffinity: affinity, VMAntiAffinity: anti}}
	}
	return g
}

// kubeGuest is an existing pod with required anti-affinity only.
func kubeGuest(vmid int, node string, tags []string, anti ...scheduler.VMGroupTerm) scheduler.Guest {
	return recordedGuest(vmid, node, tags, nil, anti)
}

// exists is kube's PodAffinityExists / PodAntiAffinityExists term on label key over topology
// key: the group of guests tagged key.
func exists(key, topologyKey string) scheduler.VMGroupTerm {
	return scheduler.VMGroupTerm{Tags: []string{key}, TopologyKey: topologyKey}
}

// inValues is kube's PodAffinityIn term: label key in values over topology key.
func inValues(key, topologyKey string, values ...string) scheduler.VMGroupTerm {
	t := scheduler.VMGroupTerm{TopologyKey: topologyKey}
	for _, v := range values {
		t.TagsAnyOf = append(t.TagsAnyOf, key+"-"+v)
	}
	return t
}

// Kube's InterPodAffinity filter table across nodes (filtering_test.go,
// TestRequiredAffinityMultipleNodes), under kube's case names; pod labels as above (a label
// "foo" with an empty value is the tag foo). want lists the nodes that pass; ours differs from
// kube's only where the README says why (differs): several required vm_affinity blocks are
// each their own group, where kube wants one existing pod that matches every term. Left out:
// the case of pods in other namespaces.
func TestKubeInterPodAffinityMultipleNodes(t *testing.T) {
	rgChina, rgChinaAz1, rgIndia := map[string]string{"region": "China"}, map[string]string{"region": "China", "az": "az1"}, map[string]string{"region": "India"}
	rzh := func(region, zone, host string) map[string]string {
		return map[string]string{"region": region, "zone": zone, "hostname": host}
	}
	twoZones := []scheduler.Node{labelled("nodeA", rzh("r1", "z1", "nodeA")), labelled("nodeB", rzh("r1", "z2", "nodeB"))}
	oneZone := []scheduler.Node{labelled("nodeA", rzh("r1", "z1", "nodeA")), labelled("nodeB", rzh("r1", "z1", "nodeB"))}
	chinaIndia := func(a, b, c string) []scheduler.Node {
		return []scheduler.Node{labelled(a, rgChina), labelled(b, rgChinaAz1), labelled(c, rgIndia)}
	}
	for _, tc := range []struct {
		name           string
		tags           []string
		affinity, anti []scheduler.VMGroupTerm
		pods           []scheduler.Guest
		nodes          []scheduler.Node
		want           []string
		// differs is why ours passes other nodes than kube, which passes kube.
		differs string
		kube    []string
	}{
		{name: "A pod can be scheduled onto all the nodes that have the same topology key & label value with one of them has an existing pod that matches the affinity rules",
			affinity: []scheduler.VMGroupTerm{inValues("foo", "region", "bar")}, pods: []scheduler.Guest{kubeGuest(101, "node1", []string{"foo", "foo-bar"})},
			nodes: chinaIndia("node1", "node2", "node3"), want: []string{"node1", "node2"}},
		{name: "The affinity rule is to schedule all of the pods of this collection to the same zone. The first pod of the collection " +
			"should not be blocked from being scheduled onto any node, even there's no existing pod that matches the rule anywhere.",
			tags: []string{"foo", "foo-bar", "service", "service-securityscan"}, affinity: []scheduler.VMGroupTerm{inValues("foo", "zone", "bar"), inValues("service", "zone", "securityscan")},
			pods:  []scheduler.Guest{kubeGuest(101, "nodeA", []string{"foo", "foo-bar"})},
			nodes: []scheduler.Node{labelled("nodeA", map[string]string{"zone": "az1", "hostname": "h1"}), labelled("nodeB", map[string]string{"zone": "az2", "hostname": "h2"})},
			want:  []string{"nodeA"}, kube: []string{"nodeA", "nodeB"},
			differs: "no guest carries both groups, so kube lets the first pod go anywhere; ours has a member of the foo group, in zone az1"},
		{name: "The first pod of the collection can only be scheduled on nodes labelled with the requested topology keys",
			tags: []string{"foo", "foo-bar", "service", "service-securityscan"}, affinity: []scheduler.VMGroupTerm{inValues("foo", "zone", "bar"), inValues("service", "zone", "securityscan")},
			pods:  []scheduler.Guest{kubeGuest(101, "nodeA", []string{"foo", "foo-bar"})},
			nodes: []scheduler.Node{labelled("nodeA", map[string]string{"zoneLabel": "az1", "hostname": "h1"}), labelled("nodeB", map[string]string{"zoneLabel": "az2", "hostname": "h2"})}},
		{name: "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
			anti: []scheduler.VMGroupTerm{inValues("foo", "region", "abc")}, pods: []scheduler.Guest{kubeGuest(101, "nodeA", []string{"foo", "foo-abc"})},
			nodes: []scheduler.Node{labelled("nodeA", map[string]string{"region": "r1", "hostname": "nodeA"}), labelled("nodeB", map[string]string{"region": "r1", "hostname": "nodeB"})}},
		{name: "This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches a pod.",
			anti: []scheduler.VMGroupTerm{inValues("foo", "region", "abc"), inValues("service", "zone", "securityscan")},
			pods: []scheduler.Guest{kubeGuest(101, "nodeA", []string{"foo", "foo-abc", "service", "service-securityscan"})}, nodes: twoZones},
		{name: "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto nodeC",
			anti: []scheduler.VMGroupTerm{inValues("foo", "region", "abc")}, pods: []scheduler.Guest{kubeGuest(101, "nodeA", []string{"foo", "foo-abc"})},
			nodes: chinaIndia("nodeA", "nodeB", "nodeC"), want: []string{"nodeC"}},
		{name: "Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, labelSelector of the term is firstly checked, and then topologyKey of the term is also checked",
			tags: []string{"foo"}, pods: []scheduler.Guest{kubeGuest(101, "nodeA", nil, exists("foo", "invalid-node-label"))}, nodes: oneZone, want: []string{"nodeA", "nodeB"}},
		{name: "Test incoming pod's anti-affinity: even if labelSelector matches, we still check if topologyKey matches",
			anti: []scheduler.VMGroupTerm{exists("foo", "invalid-node-label")}, pods: []scheduler.Guest{kubeGuest(101, "nodeA", []string{"foo"})}, nodes: oneZone, want: []string{"nodeA", "nodeB"}},
		{name: "Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each existingPod's terms on all nodes",
			tags: []string{"foo", "bar"}, pods: []scheduler.Guest{kubeGuest(101, "nodeA", nil, exists("foo", "zone")), kubeGuest(102, "nodeA", nil, exists("bar", "region"))}, nodes: twoZones},
		{name: "Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least violates one anti-affinity rule of existingPod",
			anti: []scheduler.VMGroupTerm{exists("foo", "zone"), exists("bar", "region")},
			pods: []scheduler.Guest{kubeGuest(101, "nodeA", []string{"foo"}), kubeGuest(102, "nodeB", []string{"bar"})}, nodes: twoZones},
		{name: "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when one term has invalid topologyKey",
			tags: []string{"foo", "bar"}, pods: []scheduler.Guest{kubeGuest(101, "nodeA", nil, exists("foo", "invalid-node-label"), exists("bar", "zone"))}, nodes: twoZones, want: []string{"nodeB"}},
		{name: "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when one term has invalid topologyKey",
			anti: []scheduler.VMGroupTerm{exists("foo", "invalid-node-label"), exists("bar", "zone")},
			pods: []scheduler.Guest{kubeGuest(101, "nodeA", []string{"foo", "bar"})}, nodes: twoZones, want: []string{"nodeB"}},
		{name: "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when all terms have valid topologyKey",
			tags: []string{"foo", "bar"}, pods: []scheduler.Guest{kubeGuest(101, "nodeA", nil, exists("foo", "region"), exists("bar", "zone"))}, nodes: twoZones},
		{name: "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when all terms have valid topologyKey",
			anti: []scheduler.VMGroupTerm{exists("foo", "region"), exists("bar", "zone")}, pods: []scheduler.Guest{kubeGuest(101, "nodeA", []string{"foo", "bar"})}, nodes: twoZones},
		{name: "Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity term matches incoming pod, so incoming pod can only be scheduled to nodeC",
			tags: []string{"foo", "bar"}, pods: []scheduler.Guest{kubeGuest(101, "nodeA", nil, exists("foo", "zone"), exists("labela", "zone")),
				kubeGuest(102, "nodeB", nil, exists("bar", "zone"), exists("labelb", "zone"))},
			nodes: append(twoZones, labelled("nodeC", rzh("r1", "z3", "nodeC"))), want: []string{"nodeC"}},
		{name: "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys match",
			affinity: []scheduler.VMGroupTerm{exists("foo", "region"), exists("bar", "zone")}, pods: []scheduler.Guest{kubeGuest(101, "nodeA", []string{"foo", "bar"})},
			nodes: oneZone, want: []string{"nodeA", "nodeB"}},
		{name: "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys match, and the match logic should be satisfied on the same pod",
			affinity: []scheduler.VMGroupTerm{exists("foo", "region"), exists("bar", "zone")},
			pods:     []scheduler.Guest{kubeGuest(101, "nodeA", []string{"foo"}), kubeGuest(102, "nodeB", []string{"bar"})}, nodes: twoZones,
			want: []string{"nodeB"}, kube: []string{},
			differs: "kube wants one pod carrying foo and bar; ours finds a foo guest in region r1 and a bar guest in nodeB's zone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := request("p")
			r.Tags, r.VMAffinity, r.VMAntiAffinity = tc.tags, tc.affinity, tc.anti
			got := verdicts(t, vmAffinityFilter{}, &r, infos(tc.nodes, tc.pods...))
			passed := []string{}
			for _, n := range tc.nodes {
				if got[n.Name] == "" {
					passed = append(passed, n.Name)
				}
			}
			want := tc.want
			if want == nil {
				want = []string{}
			}
			if !reflect.DeepEqual(passed, want) {
				t.Errorf("passed %v, want %v (verdicts %v)", passed, want, got)
			}
			if tc.differs != "" && reflect.DeepEqual(tc.kube, want) {
				t.Errorf("a case marked as differing from kube must differ")
			}
		})
	}
}

// Kube's InterPodAffinity score table (scoring_test.go, TestPreferredAffinity, with kube's
// default hardPodAffinityWeight 1), under kube's case names: an existing pod's affinity is its
// guest's placement record, preferred terms with their weight and required ones without.
// All agree, scores exactly.
// Left out: namespaces and namespace selectors, invalid label values (config errors here) and
// IgnorePreferredTermsOfExistingPods (no such arg).
func TestKubeInterPodAffinityScore(t *testing.T) {
	s1, s2 := []string{"security", "security-s1"}, []string{"security", "security-s2"}
	china, india := map[string]string{"region": "China"}, map[string]string{"region": "India"}
	az1, az2, chinaAz1 := map[string]string{"az": "az1"}, map[string]string{"az": "az2"}, map[string]string{"region": "China", "az": "az1"}
	weighted := func(w int, t scheduler.VMGroupTerm) scheduler.VMGroupTerm { t.Weight = w; return t }
	stayWithS1InRegion := weighted(5, inValues("security", "region", "s1"))
	stayWithS2InRegion := weighted(6, inValues("security", "region", "s2"))
	awayFromS1InAz, awayFromS2InAz := weighted(5, inValues("security", "az", "s1")), weighted(5, inValues("security", "az", "s2"))
	stayWithS1 := weighted(8, inValues("security", "region", "s1"))
	// kube's affinity3: NotIn S1 and In S2 weight 8, Exists security and DoesNotExist wrongkey weight 2.
	affinity3 := []scheduler.VMGroupTerm{
		{TagsAnyOf: []string{"security-s2"}, TagsNoneOf: []string{"security-s1"}, TopologyKey: "region", Weight: 8},
		{Tags: []string{"security"}, TagsNoneOf: []string{"wrongkey"}, TopologyKey: "region", Weight: 2}}
	// kube's hardAffinity: In S1, value2 and Exists security with DoesNotExist wrongkey, required.
	hardAffinity := []scheduler.VMGroupTerm{inValues("security", "region", "s1", "value2"),
		{Tags: []string{"security"}, TagsNoneOf: []string{"wrongkey"}, TopologyKey: "region"}}
	pod, plain := recordedGuest, func(vmid int, node string, tags []string) scheduler.Guest { return tagged(vmid, node, tags...) }
	nodes := func(labels ...map[string]string) []scheduler.Node {
		out := make([]scheduler.Node, len(labels))
		for i, l := range labels {
			out[i] = labelled(fmt.Sprintf("node%d", i+1), l)
		}
		return out
	}
	for _, tc := range []struct {
		name           string
		tags           []string
		affinity, anti []scheduler.VMGroupTerm
		pods           []scheduler.Guest
		nodes          []scheduler.Node
		want           []float64
	}{
		{name: "all nodes are same priority as Affinity is nil", tags: s1, nodes: nodes(china, india, az1), want: []float64{0, 0, 0}},
		{name: "Affinity: pod that matches topology key & pods in nodes will get high score comparing to others" +
			"which doesn't match either pods in nodes or in topology key", tags: s1, affinity: []scheduler.VMGroupTerm{stayWithS1InRegion},
			pods: []scheduler.Guest{plain(101, "node1", s1), plain(102, "node2", s2), plain(103, "node3", s1)}, nodes: nodes(china, india, az1), want: []float64{100, 0, 0}},
		{name: "All the nodes that have the same topology key & label value with one of them has an existing pod that match the affinity rules, have the same score",
			affinity: []scheduler.VMGroupTerm{stayWithS1InRegion}, pods: []scheduler.Guest{plain(101, "node1", s1)}, nodes: nodes(china, chinaAz1, india), want: []float64{100, 100, 0}},
		{name: "Affinity: nodes in one region has more matching pods comparing to other region, so the region which has more matches will get high score",
			tags: s1, affinity: []scheduler.VMGroupTerm{stayWithS2InRegion},
			pods:  []scheduler.Guest{plain(101, "node1", s2), plain(102, "node1", s2), plain(103, "node2", s2), plain(104, "node3", s2), plain(105, "node4", s2), plain(106, "node5", s2)},
			nodes: nodes(china, india, china, china, india), want: []float64{100, 0, 100, 100, 0}},
		{name: "Affinity: different Label operators and values for pod affinity scheduling preference, including some match failures ",
			tags: s1, affinity: affinity3, pods: []scheduler.Guest{plain(101, "node1", s1), plain(102, "node2", s2), plain(103, "node3", s1)},
			nodes: nodes(china, india, az1), want: []float64{20, 100, 0}},
		{name: "Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry", tags: s2,
			pods:  []scheduler.Guest{pod(101, "node1", s1, []scheduler.VMGroupTerm{stayWithS1InRegion}, nil), pod(102, "node2", s2, []scheduler.VMGroupTerm{stayWithS2InRegion}, nil)},
			nodes: nodes(china, india, az1), want: []float64{0, 100, 0}},
		{name: "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry", tags: s1,
			pods: []scheduler.Guest{pod(101, "node1", s1, hardAffinity, nil), pod(102, "node2", s2, hardAffinity, nil)}, nodes: nodes(china, india, az1), want: []float64{100, 100, 0}},
		{name: "Anti Affinity: pod that does not match existing pods in node will get high score ", tags: s1, anti: []scheduler.VMGroupTerm{awayFromS1InAz},
			pods: []scheduler.Guest{plain(101, "node1", s1), plain(102, "node2", s2)}, nodes: nodes(az1, china), want: []float64{0, 100}},
		{name: "Anti Affinity: pod that does not match topology key & match the pods in nodes will get higher score comparing to others ", tags: s1,
			anti: []scheduler.VMGroupTerm{awayFromS1InAz}, pods: []scheduler.Guest{plain(101, "node1", s1), plain(102, "node2", s1)}, nodes: nodes(az1, china), want: []float64{0, 100}},
		{name: "Anti Affinity: one node has more matching pods comparing to other node, so the node which has more unmatches will get high score", tags: s1,
			anti: []scheduler.VMGroupTerm{awayFromS1InAz}, pods: []scheduler.Guest{plain(101, "node1", s1), plain(102, "node1", s1), plain(103, "node2", s2)},
			nodes: nodes(az1, india), want: []float64{0, 100}},
		{name: "Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score", tags: s2,
			pods:  []scheduler.Guest{pod(101, "node1", s1, nil, []scheduler.VMGroupTerm{awayFromS2InAz}), pod(102, "node2", s2, nil, []scheduler.VMGroupTerm{awayFromS1InAz})},
			nodes: nodes(az1, az2), want: []float64{0, 100}},
		{name: "Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity", tags: s1,
			affinity: []scheduler.VMGroupTerm{stayWithS1}, anti: []scheduler.VMGroupTerm{awayFromS2InAz},
			pods: []scheduler.Guest{plain(101, "node1", s1), plain(102, "node2", s1)}, nodes: nodes(china, az1), want: []float64{100, 0}},
		{name: "Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and existing pods have the same labels", tags: s1,
			affinity: []scheduler.VMGroupTerm{stayWithS1}, anti: []scheduler.VMGroupTerm{awayFromS2InAz},
			pods: []scheduler.Guest{plain(101, "node1", s1), plain(102, "node1", s1), plain(103, "node2", s1), plain(104, "node3", s1), plain(105, "node3", s1),
				plain(106, "node4", s1), plain(107, "node5", s1)},
			nodes: nodes(chinaAz1, india, china, china, india), want: []float64{100, 0, 100, 100, 0}},
		{name: "Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity & symmetry", tags: s1,
			affinity: []scheduler.VMGroupTerm{stayWithS1}, anti: []scheduler.VMGroupTerm{awayFromS2InAz},
			pods: []scheduler.Guest{plain(101, "node1", s1), plain(102, "node2", s2),
				pod(103, "node3", nil, []scheduler.VMGroupTerm{stayWithS1}, []scheduler.VMGroupTerm{awayFromS2InAz}), pod(104, "node4", nil, nil, []scheduler.VMGroupTerm{awayFromS1InAz})},
			nodes: nodes(china, az1, india, az2), want: []float64{100, 0, 100, 0}},
		{name: "Avoid panic when partial nodes in a topology don't have pods with affinity", tags: s1,
			pods:  []scheduler.Guest{plain(101, "node1", s1), pod(102, "node2", nil, []scheduler.VMGroupTerm{stayWithS1}, []scheduler.VMGroupTerm{awayFromS2InAz})},
			nodes: nodes(china, china), want: []float64{0, 0}},
		{name: "Do not ignore preferred terms of existing pods", tags: s2,
			pods:  []scheduler.Guest{pod(101, "node1", s1, []scheduler.VMGroupTerm{stayWithS1}, []scheduler.VMGroupTerm{awayFromS2InAz}), pod(102, "node2", s2, []scheduler.VMGroupTerm{stayWithS2InRegion}, nil)},
			nodes: nodes(china, india), want: []float64{0, 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := request("p")
			r.Tags, r.VMAffinity, r.VMAntiAffinity = tc.tags, tc.affinity, tc.anti
			s := newPlugin[scheduler.ScorePlugin](t, newVMAffinityScore, nil)
			got := scoreNodes(s, &r, infos(tc.nodes, tc.pods...))
			want := map[string]float64{}
			for i, n := range tc.nodes {
				want[n.Name] = tc.want[i]
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, kube %v", got, want)
			}
		})
	}
}

package plugins

import (
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
		g := tagged(100, "machine1", tags...)
		if len(anti) > 0 {
			g.Recorded = &scheduler.Recorded{Policy: scheduler.Request{VMAntiAffinity: anti}}
		}
		return g
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

// kubeGuest is an existing pod: a guest with tags on a node, its required anti-affinity in its
// placement record.
func kubeGuest(vmid int, node string, tags []string, anti ...scheduler.VMGroupTerm) scheduler.Guest {
	g := tagged(vmid, node, tags...)
	if len(anti) > 0 {
		g.Recorded = &scheduler.Recorded{Policy: scheduler.Request{VMAntiAffinity: anti}}
	}
	return g
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

package plugins

import (
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

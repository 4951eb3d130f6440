package plugins

import (
	"fmt"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// recordedTerm is an existing guest's recorded vm_affinity or vm_anti_affinity term that the
// request is a member of: kube's symmetry of inter-pod (anti-)affinity, where an existing
// pod's anti-affinity keeps out the pods it selects, whatever their own rules, and its
// affinity draws them in the score. Guests carry their terms in their placement records
// (Guest.Recorded), so a VM from another configuration, or one that declares no rule, still
// keeps out and draws in.
type recordedTerm struct {
	guest  *scheduler.Guest
	term   scheduler.VMGroupTerm
	domain string
	// weight is what the term adds to the score of a node in its domain.
	weight int
}

// hardAffinityWeight is what an existing guest's recorded required vm_affinity adds to the
// score of its domain for a request it selects: kube's hardPodAffinityWeight, default 1.
const hardAffinityWeight = 1

// recordedAntiAffinity lists the required anti-affinity terms recorded by the guests of nodes
// whose group the request belongs to, each with the domain the guest is in. A guest on a node
// without the term's key is in no domain and keeps no one out.
func recordedAntiAffinity(r *scheduler.Request, nodes []*scheduler.NodeInfo) []recordedTerm {
	return recordedTerms(r, nodes, func(p *scheduler.Request, add func(scheduler.VMGroupTerm, int)) {
		for _, t := range p.VMAntiAffinity {
			if t.Weight == 0 {
				add(t, 0)
			}
		}
	})
}

// recordedScoreTerms lists the recorded terms that weigh on the score, as kube's: a preferred
// anti-affinity takes its weight, a preferred affinity adds its weight and a required
// affinity adds hardAffinityWeight.
func recordedScoreTerms(r *scheduler.Request, nodes []*scheduler.NodeInfo) []recordedTerm {
	return recordedTerms(r, nodes, func(p *scheduler.Request, add func(scheduler.VMGroupTerm, int)) {
		for _, t := range p.VMAntiAffinity {
			if t.Weight > 0 {
				add(t, -t.Weight)
			}
		}
		for _, t := range p.VMAffinity {
			add(t, max(t.Weight, hardAffinityWeight))
		}
	})
}

// recordedTerms collects, from each guest's record, the terms pick adds (with their weights)
// whose group the request belongs to and whose key the guest's node carries.
func recordedTerms(r *scheduler.Request, nodes []*scheduler.NodeInfo, pick func(*scheduler.Request, func(scheduler.VMGroupTerm, int))) []recordedTerm {
	var out []recordedTerm
	for _, ni := range nodes {
		for _, g := range ni.Recorded {
			if g.Template {
				continue
			}
			pick(&g.Recorded.Policy, func(t scheduler.VMGroupTerm, weight int) {
				if !t.Group().Selects(r.Tags) {
					return
				}
				if d, ok := domainOf(ni.Node, t.TopologyKey); ok {
					out = append(out, recordedTerm{guest: g, term: t, domain: d, weight: weight})
				}
			})
		}
	}
	return out
}

// check rejects a node in the domain the guest's term keeps the request out of.
func (t *recordedTerm) check(n *scheduler.Node) *scheduler.Rejection {
	if d, ok := domainOf(n, t.term.TopologyKey); !ok || d != t.domain {
		return nil
	}
	return &scheduler.Rejection{
		Reason: fmt.Sprintf("VMAntiAffinity: %s runs guest %d (%s), whose recorded required vm_anti_affinity keeps guests tagged %s out of its %s",
			domainName(t.term.TopologyKey, t.domain), t.guest.VMID, t.guest.Name, DescribeGroup(t.term.Group()), topologyWord(t.term.TopologyKey)),
		Group: fmt.Sprintf("run a guest whose recorded required vm_anti_affinity keeps guests tagged %s out (by %s)", DescribeGroup(t.term.Group()), t.term.TopologyKey),
	}
}

// topologyWord names a domain kind in a reason: "node", or "zone domain".
func topologyWord(key string) string {
	if key == TopologyNode {
		return "node"
	}
	return key + " domain"
}

// recordedWeight is what the recorded terms add to a node: each term of an existing guest in
// the node's domain adds its weight, as the request's own preferred terms do.
func recordedWeight(terms []recordedTerm, n *scheduler.Node) float64 {
	var sum float64
	for _, t := range terms {
		if d, ok := domainOf(n, t.term.TopologyKey); ok && d == t.domain {
			sum += float64(t.weight)
		}
	}
	return sum
}

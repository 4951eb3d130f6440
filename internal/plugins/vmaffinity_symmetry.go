package plugins

import (
	"fmt"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// recordedTerm is an existing guest's recorded vm_anti_affinity term that the request is a
// member of: kube's symmetry of inter-pod anti-affinity, where an existing pod's
// anti-affinity keeps out the pods it selects, whatever their own rules. Guests carry their
// terms in their placement records (Guest.Recorded), so a VM from another configuration, or
// one that declares no rule, still keeps out.
type recordedTerm struct {
	guest  *scheduler.Guest
	term   scheduler.VMGroupTerm
	domain string
}

// recordedAntiAffinity lists the anti-affinity terms, required (preferred false) or preferred,
// recorded by the guests of nodes whose group the request belongs to, each with the domain
// the guest is in. A guest on a node without the term's key is in no domain and keeps no one
// out.
func recordedAntiAffinity(r *scheduler.Request, nodes []*scheduler.NodeInfo, preferred bool) []recordedTerm {
	var out []recordedTerm
	for _, ni := range nodes {
		for _, g := range ni.Guests {
			if g.Recorded == nil || g.Template {
				continue
			}
			for _, t := range g.Recorded.Policy.VMAntiAffinity {
				if (t.Weight > 0) != preferred || !t.Group().Selects(r.Tags) {
					continue
				}
				if d, ok := domainOf(ni.Node, t.TopologyKey); ok {
					out = append(out, recordedTerm{guest: g, term: t, domain: d})
				}
			}
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

// recordedPenalty is the preferred recorded anti-affinity weight against a node: each term of
// an existing guest in the node's domain takes its weight, as the request's own preferred
// terms do.
func recordedPenalty(terms []recordedTerm, n *scheduler.Node) float64 {
	var sum float64
	for _, t := range terms {
		if d, ok := domainOf(n, t.term.TopologyKey); ok && d == t.domain {
			sum -= float64(t.term.Weight)
		}
	}
	return sum
}

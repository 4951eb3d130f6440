package scheduler

import (
	"fmt"
	"slices"
)

// cause names a smallest cause of the set's refusal that holds whatever else the set holds:
// a required vm_anti_affinity group of r with more members (the set's new VMs of r's class
// and the guests already in the group) than domains they may use (those of the nodes that
// take r but for the group's rule, and those its guests are in). It is "" when there is no
// such group. The search must be unwound: r is checked on the cluster without the set.
func (s *search) cause(r *Request) string {
	for _, t := range r.VMAntiAffinity {
		g := t.Group()
		if t.Weight != 0 || !g.Selects(r.Tags) {
			continue
		}
		// Every new member must be of r's class, so that r's nodes are theirs.
		members := 0
		for i := range s.reqs {
			if _, isNew := s.vmids[i]; isNew && g.Selects(s.reqs[i].Tags) {
				if classKey(&s.reqs[i]) != classKey(r) {
					members = -1
					break
				}
				members++
			}
		}
		if members < 0 {
			continue
		}
		free := *r
		free.VMAntiAffinity = slices.DeleteFunc(slices.Clone(r.VMAntiAffinity), func(u VMGroupTerm) bool { return u.Weight == 0 })
		ev, err := s.p.evaluate(&free, s.infos)
		if err != nil {
			continue
		}
		domains := map[string]bool{}
		for n, ni := range s.infos {
			d, ok := domainOfKey(ni.Node, t.TopologyKey)
			if !ok {
				continue
			}
			if ev.cands[n].Feasible {
				domains[d] = true
			}
			for _, guest := range ni.Guests {
				if !guest.Template && g.Selects(guest.Tags) {
					domains[d] = true
					members++
				}
			}
		}
		if members > len(domains) {
			what := "nodes"
			if t.TopologyKey != "node" {
				what = "domains of " + t.TopologyKey
			}
			return fmt.Sprintf("cause: %s with vm_anti_affinity %v by %s: %d members, %d eligible %s", r.Name, t.Tags, t.TopologyKey, members, len(domains), what)
		}
	}
	return ""
}

// domainOfKey is the node's domain under a topology key: its name for "node", else the label.
func domainOfKey(n *Node, key string) (string, bool) {
	if key == "node" {
		return n.Name, true
	}
	v, ok := n.Labels[key]
	return v, ok
}

package rebalance

import (
	"fmt"
	"sort"
	"strings"
)

// UnknownNodeError is a DrainNodes name that is no node of the cluster.
type UnknownNodeError struct {
	Node  string
	Nodes []string
}

func (e *UnknownNodeError) Error() string {
	return fmt.Sprintf("drain_nodes names %q, which is not a node of the cluster (%s)", e.Node, strings.Join(e.Nodes, ", "))
}

// drain empties the DrainNodes, in their order, for maintenance: every guest of theirs that
// may move leaves under its own rules and the caps, to the node its profile ranks best, and no
// move of any strategy goes onto them. What stays is kept with why.
func (p *planner) drain() error {
	online := map[string]bool{}
	var names []string
	for _, n := range p.snap.Nodes {
		online[n.Name] = n.Online
		names = append(names, n.Name)
	}
	for _, n := range p.in.DrainNodes {
		if _, ok := online[n]; !ok {
			return &UnknownNodeError{Node: n, Nodes: names}
		}
		p.draining[n] = true
	}
	for _, node := range p.in.DrainNodes {
		why := "drain_nodes: " + node + " is drained"
		var guests []int
		for i, g := range p.snap.Guests {
			if g.Node == node {
				guests = append(guests, i)
			}
		}
		sort.Slice(guests, func(i, j int) bool { return p.snap.Guests[guests[i]].VMID < p.snap.Guests[guests[j]].VMID })
		for _, i := range guests {
			g := &p.snap.Guests[i]
			if p.moved[g.VMID] {
				continue
			}
			if r := p.notMovable(g); !online[node] || r != "" {
				if !online[node] {
					r = "the node is offline: its HA guests are the HA manager's to recover"
				}
				p.keep(g, why+"; "+r)
				continue
			}
			n, err := p.relocate(g, p.request(g), why, nil, false, "no node takes it")
			if err != nil {
				return err
			}
			p.drained += n
		}
	}
	return nil
}

package rebalance

import (
	"fmt"
	"sort"
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
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
		n, err := p.leave(node, "drain_nodes: "+node+" is drained", nil, false, true)
		if err != nil {
			return err
		}
		p.drained += n
	}
	return nil
}

// leave relocates the guests of src that may move, by VMID, for why (relocate's accept and
// pack); with report, the guests there that may not move are kept with why they stay.
func (p *planner) leave(src, why string, accept func(string) string, pack, report bool) (int, error) {
	online := false
	for _, n := range p.snap.Nodes {
		online = online || n.Name == src && n.Online
	}
	var guests []*scheduler.Guest
	for i := range p.snap.Guests {
		if g := &p.snap.Guests[i]; g.Node == src {
			guests = append(guests, g)
		}
	}
	sort.Slice(guests, func(i, j int) bool { return guests[i].VMID < guests[j].VMID })
	moved := 0
	for _, g := range guests {
		r := p.notMovable(g)
		if !online {
			r = "the node is offline: its HA guests are the HA manager's to recover"
		}
		switch {
		case p.moved[g.VMID]:
		case r != "":
			if report {
				p.keep(g, why+"; "+r)
			}
		default:
			n, err := p.relocate(g, p.request(g), why, accept, pack, "no node takes it")
			if err != nil {
				return moved, err
			}
			moved += n
		}
	}
	return moved, nil
}

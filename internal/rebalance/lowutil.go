package rebalance

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Utilization holds the LowNodeUtilization bounds, in percent of configured allocation. A
// resource is balanced when its band is set: a node above a balanced resource's target
// gives guests to the nodes under every balanced resource's threshold.
type Utilization struct {
	CPU, Memory *Band
	// Balanciness, when above 0, replaces the bands' numbers (only which are set counts) with
	// ProxLB's spread bound: a node more than this many points above the emptiest node gives
	// guests to the nodes more than this many points below the fullest, so that the user
	// needs no thresholds computed from the cluster's mean.
	Balanciness float64
}

// Band is one resource's threshold and target.
type Band struct{ Threshold, Target float64 }

// resources are the balanced resources by name, with their band and the value of a usage.
func (u Utilization) resources() []resource {
	var out []resource
	if u.CPU != nil {
		out = append(out, resource{"cpu", *u.CPU, func(x NodeUsage) float64 { return x.CPUPercent }})
	}
	if u.Memory != nil {
		out = append(out, resource{"memory", *u.Memory, func(x NodeUsage) float64 { return x.MemoryPercent }})
	}
	return out
}

type resource struct {
	name  string
	band  Band
	value func(NodeUsage) float64
}

// balancer is one LowNodeUtilization run: the balanced resources and the bounds.
type balancer struct {
	*planner
	u   Utilization
	res []resource
}

// level is a node's fullness on the balanced resources alone, so that a memory-only balance
// neither gains nor loses by CPU.
func (b *balancer) level(x NodeUsage) float64 {
	l := 0.0
	for _, r := range b.res {
		l = max(l, r.value(x))
	}
	return l
}

func (b *balancer) usage(node string) NodeUsage { return b.alloc[node].usage() }

// bounds are the emptiest and fullest online node's value of a resource.
func (b *balancer) bounds(r resource) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, n := range b.snap.Nodes {
		if n.Online && !b.draining[n.Name] {
			v := r.value(b.usage(n.Name))
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	return lo, hi
}

// over says why a node should give guests, "" when it should not.
func (b *balancer) over(node string) string {
	x := b.usage(node)
	for _, r := range b.res {
		v := r.value(x)
		if b.u.Balanciness > 0 {
			if lo, _ := b.bounds(r); v-lo > b.u.Balanciness {
				return fmt.Sprintf("%s is %s points above the emptiest node in %s (%s%% vs %s%%) > balanciness %s",
					node, pct(v-lo), r.name, pct(v), pct(lo), pct(b.u.Balanciness))
			}
		} else if v > r.band.Target {
			return fmt.Sprintf("%s is above target (%s)", node, b.describe(x))
		}
	}
	return ""
}

// under says why a node may not receive, "" when it may.
func (b *balancer) under(node string) string {
	x := b.usage(node)
	for _, r := range b.res {
		v := r.value(x)
		if b.u.Balanciness > 0 {
			if _, hi := b.bounds(r); hi-v <= b.u.Balanciness {
				return fmt.Sprintf("not more than balanciness %s points below the fullest node in %s (%s%% vs %s%%)",
					pct(b.u.Balanciness), r.name, pct(v), pct(hi))
			}
		} else if v >= r.band.Threshold {
			return "not under the utilization threshold"
		}
	}
	return ""
}

// describe writes a node's balanced resources.
func (b *balancer) describe(x NodeUsage) string {
	var parts []string
	for _, r := range b.res {
		parts = append(parts, fmt.Sprintf("%s %s%%", r.name, pct(r.value(x))))
	}
	return strings.Join(parts, ", ")
}

// accept says why moving the guests from src to node does not narrow the spread enough, "" when it
// does: the receiver is under threshold and ends at or under target, or above it yet below
// the donor as the donor ends (the spread still narrows and the move is never undone by the
// next plan), and the gap between the two shrinks by at least MinGain.
func (b *balancer) accept(src, node string, gs ...*scheduler.Guest) string {
	if r := b.under(node); r != "" {
		return r
	}
	s, d := b.usageAfter(src, node, gs...)
	ls, ld := b.level(s), b.level(d)
	if ld >= ls && (b.u.Balanciness > 0 || b.aboveTarget(d)) {
		return fmt.Sprintf("would end at %s, not below %s at %s", b.describe(d), src, b.describe(s))
	}
	if gain := b.gain(src, node, gs...); gain < b.in.MinGain {
		return fmt.Sprintf("gain %s points < min_gain %s", pct(gain), pct(b.in.MinGain))
	}
	return ""
}

func (b *balancer) aboveTarget(x NodeUsage) bool {
	for _, r := range b.res {
		if r.value(x) > r.band.Target {
			return true
		}
	}
	return false
}

// gain is how many points moving the guests narrows the gap between their two nodes.
func (b *balancer) gain(src, dst string, gs ...*scheduler.Guest) float64 {
	s, d := b.usageAfter(src, dst, gs...)
	return round2(b.level(b.usage(src)) - b.level(b.usage(dst)) - math.Abs(b.level(s)-b.level(d)))
}

// balance is LowNodeUtilization: the nodes to give, fullest first, each give their running
// guests one move at a time, the move that gains most first (on equal gain the one moving less
// memory and disk), until the node is no longer over or no move is accepted.
func (p *planner) balance(u Utilization) error {
	b := &balancer{planner: p, u: u, res: u.resources()}
	var over []string
	for _, n := range p.snap.Nodes {
		if n.Online && !p.draining[n.Name] && b.over(n.Name) != "" {
			over = append(over, n.Name)
		}
	}
	sort.SliceStable(over, func(i, j int) bool { return b.level(b.usage(over[i])) > b.level(b.usage(over[j])) })
	for _, src := range over {
		refused, err := b.give(src)
		if err != nil {
			return err
		}
		if why := b.over(src); why != "" {
			for _, k := range refused {
				k.Reason = "LowNodeUtilization: " + strings.Replace(why, " is above", " stays above", 1) + "; " + k.Reason
				p.addKept(k)
			}
		}
	}
	return nil
}

// give moves guests off src while it is over and returns the guests the last round refused.
func (b *balancer) give(src string) ([]Kept, error) {
	for {
		why := b.over(src)
		if why == "" {
			return nil, nil
		}
		var refused []Kept
		var best *scheduler.Guest
		var bestReq scheduler.Request
		bestTo, bestGain, bestCost := "", 0.0, uint64(0)
		guests, bound, receivers := b.byBound(src)
		for _, g := range guests {
			if best != nil && bound[g.VMID] < bestGain {
				break // no later guest can gain more: spare their ranking and disk reads
			}
			req := b.request(g)
			if limit := b.capped(g, req); limit != "" {
				refused = append(refused, Kept{VMID: g.VMID, Name: g.Name, Node: g.Node, Reason: limit})
				continue
			}
			if receivers == 0 {
				refused = append(refused, Kept{VMID: g.VMID, Name: g.Name, Node: g.Node, Reason: "no node takes it: " + b.noReceiver()})
				continue
			}
			to, refusal, err := b.target(g, req, func(to string) string { return b.accept(src, to, g) }, false)
			if err != nil {
				return nil, err
			}
			if to == "" {
				refused = append(refused, Kept{VMID: g.VMID, Name: g.Name, Node: g.Node, Reason: "no node takes it: " + refusal})
				continue
			}
			gain := b.gain(src, to, g)
			cost, err := b.cost(g)
			if err != nil {
				return nil, err
			}
			if best == nil || gain > bestGain || gain == bestGain && cost < bestCost {
				best, bestReq, bestTo, bestGain, bestCost = g, req, to, gain, cost
			}
		}
		if best == nil {
			moved, err := b.giveGroup(src, refused, why)
			if moved == 0 || err != nil {
				return refused, err
			}
			continue
		}
		b.move(best, bestReq, bestTo, "LowNodeUtilization: "+why)
		b.utilization++
	}
}

// byBound lists the movable running guests of src by the most each could gain on the receivers
// of now with no rule asked, highest first, then by VMID: an upper bound of what its move
// gains. It counts the receivers too.
func (b *balancer) byBound(src string) ([]*scheduler.Guest, map[int]float64, int) {
	var receivers []string
	for _, n := range b.snap.Nodes {
		if n.Online && n.Name != src && !b.draining[n.Name] && b.under(n.Name) == "" {
			receivers = append(receivers, n.Name)
		}
	}
	var guests []*scheduler.Guest
	for _, g := range b.candidates() {
		if g.Node == src && g.Status == "running" && !b.moved[g.VMID] {
			guests = append(guests, g)
		}
	}
	bound := make(map[int]float64, len(guests))
	for _, g := range guests {
		bound[g.VMID] = math.Inf(-1)
		for _, to := range receivers {
			bound[g.VMID] = max(bound[g.VMID], b.gain(src, to, g))
		}
	}
	sort.SliceStable(guests, func(i, j int) bool { return bound[guests[i].VMID] > bound[guests[j].VMID] })
	return guests, bound, len(receivers)
}

// noReceiver says why no node receives, without ranking a guest.
func (b *balancer) noReceiver() string {
	if b.u.Balanciness > 0 {
		return fmt.Sprintf("no other node is more than balanciness %s points below the fullest", pct(b.u.Balanciness))
	}
	return "no other node is under every threshold"
}

// giveGroup moves, when no guest of src can move alone, the first group of the refused guests
// that must stay together (moveGroup) to a node that accepts all of them as one move; the
// reason it fails is added to each member's refusal.
func (b *balancer) giveGroup(src string, refused []Kept, why string) (int, error) {
	tried := map[int]bool{}
	for i := range refused {
		g := &b.snap.Guests[b.byVMID[refused[i].VMID]]
		if tried[g.VMID] || b.capped(g, b.request(g)) != "" {
			continue
		}
		members := b.group(g)
		for _, m := range members {
			tried[m.VMID] = true
		}
		if len(members) < 2 {
			continue
		}
		n, r, err := b.moveGroup(g, members, "LowNodeUtilization: "+why, func(to string) string { return b.accept(src, to, members...) })
		if n > 0 || err != nil {
			b.utilization += n
			return n, err
		}
		refused[i].Reason += "; " + r
	}
	return 0, nil
}

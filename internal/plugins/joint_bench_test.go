package plugins

import (
	"errors"
	"fmt"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/nodelabels"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// packing is 12 VMs on 8 nodes, CPUs and memory at ratio 1. The benchmark's instances are the
// slowest (best of three runs each) of those drawn, seeded, in two ways: "fits" and "refused"
// have no room to spare (the sizes of each node's VMs drawn first and each node made to hold
// exactly them; 2,000 drawn, half of them with a GiB moved from one node to another, which
// leaves most without a packing); "policies" has random nodes and sizes and a random mix of
// spread, affinity and anti-affinity (400 drawn). The greedy pass fails in all three, so the
// joint search decides.
func packing(nodeCPU, nodeGiB, vmCPU, vmGiB []int) (scheduler.Snapshot, []scheduler.Request) {
	var snap scheduler.Snapshot
	for i := range nodeCPU {
		snap.Nodes = append(snap.Nodes, node(fmt.Sprintf("pve%d", i+1), nodeCPU[i], uint64(nodeGiB[i])))
	}
	reqs := make([]scheduler.Request, len(vmCPU))
	for i := range reqs {
		reqs[i] = sized(fmt.Sprintf("vm-%02d", i), vmCPU[i], vmGiB[i])
	}
	return snap, reqs
}

// withPolicies gives request i the policy of kinds[i]: 0 a DoNotSchedule spread by node of the
// group s it is in, 1 a required anti-affinity by node to the group a it is in, 2 a required
// affinity by node to group s, 3 none.
func withPolicies(reqs []scheduler.Request, kinds string) {
	for i := range reqs {
		switch kinds[i] {
		case '0':
			reqs[i].Tags = []string{"s"}
			reqs[i].TopologySpread = spreadOf(TopologyNode, 1, DoNotSchedule, "s")
		case '1':
			reqs[i].Tags = []string{"a"}
			reqs[i].VMAntiAffinity = antiTerm(TopologyNode, 0, "a")
		case '2':
			reqs[i].VMAffinity = antiTerm(TopologyNode, 0, "s")
		}
	}
}

func BenchmarkScheduleSet12VMs8Nodes(b *testing.B) {
	cases := []struct {
		name string
		fits bool
		snap scheduler.Snapshot
		reqs []scheduler.Request
	}{
		{name: "fits", fits: true},
		{name: "refused"},
		{name: "policies"},
	}
	cases[0].snap, cases[0].reqs = packing([]int{1, 9, 3, 5, 6, 9, 6, 9}, []int{12, 8, 12, 6, 13, 14, 8, 15},
		[]int{1, 4, 3, 5, 3, 5, 6, 4, 3, 5, 5, 4}, []int{12, 3, 12, 6, 7, 6, 8, 5, 6, 5, 10, 8})
	cases[1].snap, cases[1].reqs = packing([]int{7, 9, 5, 6, 2, 10, 3, 3}, []int{11, 16, 4, 8, 5, 15, 10, 6},
		[]int{2, 6, 5, 1, 2, 4, 3, 3, 5, 3, 5, 6}, []int{8, 11, 4, 5, 4, 9, 10, 7, 3, 5, 3, 6})
	cases[2].snap, cases[2].reqs = packing([]int{5, 3, 9, 6, 4, 4, 3, 2}, []int{5, 15, 8, 12, 3, 14, 15, 3},
		[]int{1, 3, 2, 4, 3, 3, 3, 2, 4, 4, 4, 3}, []int{2, 2, 3, 6, 6, 4, 1, 2, 5, 4, 2, 4})
	withPolicies(cases[2].reqs, "003031100133")
	p := mustProfile(ratioOne())
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			if _, err := p.Schedule(c.snap, c.reqs, scheduler.Options{}); err == nil {
				b.Fatal("the greedy pass places the set: the benchmark does not time the search")
			}
			for b.Loop() {
				if _, err := p.ScheduleSet(c.snap, c.reqs, scheduler.Options{}); (err == nil) != c.fits {
					b.Fatalf("fits %v, err %v", c.fits, err)
				}
			}
		})
	}
}

// everyPlugin enables every registered plugin, the strategy scores off by default included.
func everyPlugin() scheduler.PluginConfig {
	on := true
	cfg := scheduler.PluginConfig{Filters: map[string]scheduler.PluginSetting{}, Scores: map[string]scheduler.PluginSetting{}, VMIDs: map[string]scheduler.PluginSetting{}}
	for _, s := range Registry.Filters {
		cfg.Filters[s.Name] = scheduler.PluginSetting{Enable: &on}
	}
	for _, s := range Registry.Scores {
		cfg.Scores[s.Name] = scheduler.PluginSetting{Enable: &on}
	}
	for _, s := range Registry.VMIDs {
		cfg.VMIDs[s.Name] = scheduler.PluginSetting{Enable: &on}
	}
	return cfg
}

// planSnapshot is groupSnapshot (64 nodes, 10,000 guests, eight zones, a web group of 2,000)
// with every fifth node tainted and every seventh marked as old hardware.
func planSnapshot() scheduler.Snapshot {
	snap := groupSnapshot()
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		n.Labels[nodelabels.LabelName] = n.Name
		n.Labels["disk"] = []string{"nvme", "ssd", "hdd"}[i%3]
		if i%5 == 0 {
			n.Taints = []scheduler.Taint{{Key: "dedicated", Value: "db", Effect: nodelabels.NoSchedule}}
		}
		if i%7 == 0 {
			n.Taints = append(n.Taints, scheduler.Taint{Key: "old-hw", Effect: nodelabels.PreferNoSchedule})
		}
	}
	return snap
}

// planRequest is groupRequest (the web group's tags, a DoNotSchedule spread by node, a
// preferred anti-affinity by zone, a node regex and a VMID range) with a preferred node
// affinity and a toleration.
func planRequest(name string) scheduler.Request {
	r := groupRequest(name)
	r.NodeAffinity = []scheduler.NodeAffinityTerm{scheduler.Expression(60, "disk", nodelabels.OpIn, "nvme", "ssd")}
	r.Tolerations = []scheduler.Toleration{{Key: "old-hw", Operator: nodelabels.TolExists}}
	return r
}

// BenchmarkScheduleSetPlan50 is the plan-time check of 50 new VMs on 64 nodes x 10,000 guests
// with every plugin on:
//   - ledger: as a plan checks them, each VM in turn with the ones before it as reservations
//     (50 calls of one request);
//   - set: the 50 in one call, which the greedy pass places;
//   - joint: the 50 in one call that the greedy pass cannot place (the first 49 require the
//     company of the last, a database, in its zone), so the joint search places them all;
//   - refused: the 50 in one call with a required anti-affinity by zone among them, of which
//     there are 8: the search runs out of its budget, the repair finds nothing, and the error
//     counts what fits.
func BenchmarkScheduleSetPlan50(b *testing.B) {
	snap := planSnapshot()
	p := mustProfile(everyPlugin())
	reqs := make([]scheduler.Request, 50)
	for i := range reqs {
		reqs[i] = planRequest(fmt.Sprintf("web-%d", i))
	}
	b.Run("ledger", func(b *testing.B) {
		for b.Loop() {
			ledger := snap
			ledger.Reservations = nil
			for i := range reqs {
				d, err := p.ScheduleSet(ledger, reqs[i:i+1], scheduler.Options{Sticky: true})
				if err != nil {
					b.Fatal(err)
				}
				pl := d.Placements[0]
				ledger.Reservations = append(ledger.Reservations, scheduler.Reservation{VMID: pl.VMID, Node: pl.Node, Name: pl.Name,
					VCPUs: reqs[i].VCPUs(), MemoryMiB: reqs[i].MemoryMiB, Tags: reqs[i].Tags})
			}
		}
	})
	b.Run("set", func(b *testing.B) {
		for b.Loop() {
			if _, err := p.ScheduleSet(snap, reqs, scheduler.Options{Sticky: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("joint", func(b *testing.B) {
		joint := make([]scheduler.Request, len(reqs))
		for i := range reqs[:49] {
			joint[i] = planRequest(fmt.Sprintf("app-%d", i))
			joint[i].Tags, joint[i].TopologySpread = []string{"app"}, nil
			joint[i].VMAffinity = antiTerm("zone", 0, "db")
		}
		joint[49] = planRequest("db")
		joint[49].Tags = []string{"db"}
		if _, err := p.Schedule(snap, joint, scheduler.Options{Sticky: true}); err == nil {
			b.Fatal("the greedy pass places the set: the benchmark does not time the search")
		}
		for b.Loop() {
			if _, err := p.ScheduleSet(snap, joint, scheduler.Options{Sticky: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("refused", func(b *testing.B) {
		apart := make([]scheduler.Request, len(reqs))
		for i := range apart {
			apart[i] = planRequest(fmt.Sprintf("x-%d", i))
			apart[i].Tags, apart[i].TopologySpread = []string{"x"}, nil
			apart[i].VMAntiAffinity = antiTerm("zone", 0, "x")
		}
		for b.Loop() {
			var se *scheduler.SetError
			if _, err := p.ScheduleSet(snap, apart, scheduler.Options{Sticky: true}); !errors.As(err, &se) || se.Placed != 8 {
				b.Fatalf("err = %v, want 8 placed", err)
			}
		}
	})
}

package rebalance

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Applying the moves step by step never breaks a hard rule nor overfills a node: after each
// step every guest it moved passes its own rules where it landed (a parked guest aside, which
// broke them before), on small random clusters with pinned guests, a positive HA pair, a
// tainted node and a drained one.
func TestMovesApplyInOrder(t *testing.T) {
	for seed := int64(1); seed <= 150; seed++ {
		r := rand.New(rand.NewSource(seed))
		ns := nodes("pve1", "pve2", "pve3", "pve4")
		ns[r.Intn(4)].Taints = []scheduler.Taint{{Key: "node.qemu-scheduler/maintenance", Effect: "NoSchedule"}}
		var guests []scheduler.Guest
		for i := 0; i < 12; i++ {
			g := vm(100+i, ns[r.Intn(4)].Name, float64(1+r.Intn(4)), uint64(5+r.Intn(30)), "web")
			if r.Intn(4) == 0 {
				g = pinnedTo(g, "pve["+string(rune('1'+r.Intn(4)))+string(rune('1'+r.Intn(4)))+"]")
			}
			guests = append(guests, g)
		}
		in := input(t, ns, guests...)
		in.Snapshot.HARules = []scheduler.HARule{{Name: "pair", Type: scheduler.HAResourceAffinity, Affinity: scheduler.HAPositive, VMIDs: []int{100, 101}}}
		in.DrainNodes = []string{ns[r.Intn(4)].Name}
		in.MaxMovesPerNode = 4
		in.LowNodeUtilization = &Utilization{Memory: &Band{}, CPU: &Band{}, Balanciness: 20}
		plan := mustPlan(t, in)
		snap := in.Snapshot
		snap.Guests = append([]scheduler.Guest(nil), snap.Guests...)
		index := map[int]int{}
		for i, g := range snap.Guests {
			index[g.VMID] = i
		}
		for i := 0; i < len(plan.Moves); {
			j := i
			for j < len(plan.Moves) && plan.Moves[j].Step == plan.Moves[i].Step {
				snap.Guests[index[plan.Moves[j].VMID]].Node = plan.Moves[j].To
				j++
			}
			check := in.Profile.NewChecker(&snap)
			for _, m := range plan.Moves[i:j] {
				g := &snap.Guests[index[m.VMID]]
				policy := in.Policy
				if g.Recorded != nil {
					policy = g.Recorded.Policy
				}
				if reasons := check.Check(sized(g, policy), m.To, m.VMID); len(reasons) > 0 && !strings.HasPrefix(m.Reason, "parked on") {
					t.Fatalf("seed %d: step %d moves vm %d to %s, which it fails: %v\nplan %+v", seed, m.Step, m.VMID, m.To, reasons, plan.Moves)
				}
				if why := scheduler.HARefusal(&snap, in.Snapshot.HARules, m.VMID, m.To, func(vmid int) (string, string, bool) {
					return snap.Guests[index[vmid]].Node, "", true
				}); why != "" {
					t.Fatalf("seed %d: step %d: vm %d on %s: %s", seed, m.Step, m.VMID, m.To, why)
				}
			}
			i = j
		}
	}
}

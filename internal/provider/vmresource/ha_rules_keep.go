// The wanted rules kept from the cluster's: the positive pairs that hold a VM, and the
// nodes and rules of a node that is down (its labels cannot be read).

package vmresource

import (
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/harules"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// pairedBy are the peers that hold the VM vmid in the positive pairs held.
func pairedBy(vmid int, held []harules.Rule) []int {
	var out []int
	for _, r := range held {
		if r.Affinity == scheduler.HAPositive {
			out = append(out, slices.DeleteFunc(slices.Clone(r.VMIDs), func(m int) bool { return m == vmid })...)
		}
	}
	return out
}

// keepDownNodes keeps in a wanted node rule the nodes of its current version that are down:
// their labels cannot be read (PVE does not answer for an offline node), and a failover must
// not rewrite the rule without them, nor their return rewrite it again. When home, the VM
// vmid's home node (harules.Home), is down, its domain cannot be read either: the VM's current
// node rules are kept whole, not widened to every node or dropped, whether the VM is down with
// it or recovered elsewhere.
func keepDownNodes(want []harules.Rule, cur []scheduler.HARule, snap scheduler.Snapshot, vmid int, home string) []harules.Rule {
	down := map[string]bool{}
	for _, n := range snap.Nodes {
		down[n.Name] = !n.Online
	}
	for _, c := range cur {
		if c.Type != scheduler.HANodeAffinity {
			continue
		}
		i := slices.IndexFunc(want, func(w harules.Rule) bool { return w.Name == c.Name })
		switch {
		case down[home] && strings.HasPrefix(c.Name, harules.Prefix) && slices.Contains(c.VMIDs, vmid) && i < 0:
			want = append(want, harules.Rule{HARule: c})
			continue
		case i < 0:
			continue
		case down[home]:
			want[i].Nodes, want[i].Priorities = slices.Clone(c.Nodes), maps.Clone(c.Priorities)
		}
		for _, n := range c.Nodes {
			if down[n] && !slices.Contains(want[i].Nodes, n) {
				want[i].Nodes = append(want[i].Nodes, n)
				if p := c.Priorities[n]; p != 0 && len(want[i].Priorities) > 0 {
					want[i].Priorities[n] = p
				}
			}
		}
		sort.Strings(want[i].Nodes)
	}
	return want
}

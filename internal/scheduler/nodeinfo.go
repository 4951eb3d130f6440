package scheduler

// NodeInfo is a node plus the allocation figures the plugins need, computed once per decision
// and debited by every placement made earlier in the same decision.
type NodeInfo struct {
	Node *Node
	// AllocCPU is the vCPUs of running guests, reservations and earlier placements.
	AllocCPU float64
	// AllocMem is the configured memory in bytes of the same set.
	AllocMem uint64
	// CPU is the live CPU fraction, raised by earlier placements (capped at 1).
	CPU float64
	// Mem is the live used memory in bytes, raised by earlier placements.
	Mem uint64
}

const mib = 1 << 20

// debit accounts for a guest of the given size placed on the node.
func (n *NodeInfo) debit(vcpus float64, memBytes uint64) {
	n.AllocCPU += vcpus
	n.AllocMem += memBytes
	n.Mem += memBytes
	if n.Node.MaxCPU > 0 {
		n.CPU += vcpus / float64(n.Node.MaxCPU)
	}
	if n.CPU > 1 {
		n.CPU = 1
	}
}

// buildNodeInfos sums running guests per node in one pass over the guests, then applies the
// reservations. The guest with id exclude (0 = none) is left out, so that an existing guest can
// be checked against its own node.
func buildNodeInfos(snap *Snapshot, exclude int) ([]*NodeInfo, map[string]*NodeInfo) {
	infos := make([]*NodeInfo, len(snap.Nodes))
	byName := make(map[string]*NodeInfo, len(snap.Nodes))
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		infos[i] = &NodeInfo{Node: n, CPU: n.CPU, Mem: n.Mem}
		byName[n.Name] = infos[i]
	}
	for i := range snap.Guests {
		g := &snap.Guests[i]
		if g.VMID == exclude || g.Template || g.Status != "running" {
			continue
		}
		if ni, ok := byName[g.Node]; ok {
			ni.AllocCPU += g.CPUs
			ni.AllocMem += g.MaxMem
		}
	}
	for _, r := range snap.Reservations {
		if r.VMID == exclude {
			continue
		}
		if ni, ok := byName[r.Node]; ok {
			ni.debit(float64(r.VCPUs), uint64(r.MemoryMiB)*mib)
		}
	}
	return infos, byName
}

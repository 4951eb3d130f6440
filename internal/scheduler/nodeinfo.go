package scheduler

// NodeInfo is a node as one request sees it: its guests and the allocation figures the
// plugins need, computed once per decision and updated by every placement made earlier in
// the same decision (kube-scheduler's NodeInfo with its Pods).
type NodeInfo struct {
	Node *Node
	// Guests are every non-template guest on the node, any status, plus the assumed ones
	// (earlier placements of the decision, in-flight reservations) and those migrating to it
	// (Guest.Arriving). A guest being checked in place is left out.
	Guests []*Guest
	// Recorded are the guests of Guests that carry a placement record (Guest.Recorded): the
	// symmetry of VM (anti-)affinity reads them for every request, so they are listed once per
	// view, as kube's NodeInfo lists its pods with affinity, not sought among every guest.
	Recorded []*Guest
	// AllocCPU is the vCPUs of the guests that count for capacity (CountsForCapacity).
	AllocCPU float64
	// AllocMem is the configured memory in bytes of the same set.
	AllocMem uint64
	// CPU is the live CPU fraction, raised by assumed guests (capped at 1).
	CPU float64
	// Mem is the live used memory in bytes, raised by assumed guests.
	Mem uint64
	// storageDebits are the disks of the view's assumed guests per storage, one map shared
	// by every node of the view (see StorageFree).
	storageDebits map[storageKey]uint64
}

// add lists a guest on the node and debits its size when it counts for capacity. A guest
// about to run also raises the live figures, which cannot include it yet; an assumed one
// takes its disks' space too.
func (n *NodeInfo) add(g *Guest) {
	n.list(g)
	n.tally(g)
	n.chargeDisks(g, true)
}

// list adds a guest to Guests, and to Recorded when it carries a record.
func (n *NodeInfo) list(g *Guest) {
	n.Guests = append(n.Guests, g)
	if g.Recorded != nil {
		n.Recorded = append(n.Recorded, g)
	}
}

// chargeDisks debits (or credits back) an assumed guest's disks to the view's storage.
func (n *NodeInfo) chargeDisks(g *Guest, debit bool) {
	if !g.Assumed || g.DiskBytes == 0 || g.Storage == "" || n.storageDebits == nil {
		return
	}
	k := keyOfGuest(n.Node, g)
	if debit {
		n.storageDebits[k] += g.DiskBytes
	} else {
		n.storageDebits[k] -= g.DiskBytes
	}
}

// tally adds a guest's size to the node's figures.
func (n *NodeInfo) tally(g *Guest) {
	if !g.CountsForCapacity() {
		return
	}
	n.AllocCPU += g.CPUs
	n.AllocMem += g.MaxMem
	// The live figures include running guests only; a guest about to run (assumed, or
	// pending: being created, or created and not started yet) is added as if it ran, so
	// that live-load scores see it before PVE does.
	if g.Status == "running" && !g.Assumed {
		return
	}
	n.Mem += g.MaxMem
	if n.Node.MaxCPU > 0 {
		n.CPU += g.CPUs / float64(n.Node.MaxCPU)
	}
	if n.CPU > 1 {
		n.CPU = 1
	}
}

// buildNodeInfos lists the guests per node in one pass, then the reservations as assumed
// guests. A guest checked in place is then left out with view.without.
func buildNodeInfos(snap *Snapshot) ([]*NodeInfo, map[string]*NodeInfo) {
	infos := make([]*NodeInfo, len(snap.Nodes))
	byName := make(map[string]*NodeInfo, len(snap.Nodes))
	index := make(map[string]int, len(snap.Nodes))
	debits := map[storageKey]uint64{}
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		infos[i] = &NodeInfo{Node: n, CPU: n.CPU, Mem: n.Mem, storageDebits: debits}
		byName[n.Name] = infos[i]
		index[n.Name] = i
	}
	// A reservation whose guest the snapshot lists already (created or cloned, its setup still
	// running) and that guest are one: listed once, with the tags it is being given (a clone
	// carries its source's until its setup), its size counted once.
	var reserved map[int]*Reservation
	if len(snap.Reservations) > 0 {
		reserved = make(map[int]*Reservation, len(snap.Reservations))
		for i := range snap.Reservations {
			if r := &snap.Reservations[i]; r.Node != "" {
				reserved[r.VMID] = r
			}
		}
	}
	// Two passes over the guests, so that every node's list is a slice of one allocation.
	at := make([]int32, len(snap.Guests))
	counts := make([]int, len(snap.Nodes))
	for i := range snap.Guests {
		g := &snap.Guests[i]
		at[i] = -1
		if g.Template {
			continue
		}
		if n, ok := index[g.Node]; ok {
			at[i] = int32(n)
			counts[n]++
		}
	}
	backing := make([]*Guest, 0, len(snap.Guests))
	for i, c := range counts {
		infos[i].Guests = backing[len(backing) : len(backing) : len(backing)+c]
		backing = backing[:len(backing)+c]
	}
	for i := range snap.Guests {
		if at[i] < 0 {
			continue
		}
		g := &snap.Guests[i]
		if r := reserved[g.VMID]; r != nil {
			delete(reserved, g.VMID)
			if !g.CountsForCapacity() {
				// Not counted yet (stopped, unsized): the reservation is the guest, assumed.
				infos[at[i]].add(r.guest())
				continue
			}
			member := *g
			member.Tags = r.Tags
			g = &member
		}
		infos[at[i]].add(g)
		// A guest being migrated weighs on its target too, as a copy marked arriving.
		if g.MigratingTo == "" || g.MigratingTo == g.Node {
			continue
		}
		if to, ok := byName[g.MigratingTo]; ok {
			arriving := *g
			arriving.Node = g.MigratingTo
			to.add(&arriving)
		}
	}
	for _, r := range snap.Reservations {
		if ni, ok := byName[r.Node]; ok && reserved[r.VMID] != nil {
			ni.add(r.guest())
		}
	}
	return infos, byName
}

// guest is the reservation as an assumed guest.
func (r Reservation) guest() *Guest {
	return &Guest{VMID: r.VMID, Node: r.Node, Name: r.Name, Type: GuestQEMU, Status: "running",
		CPUs: float64(r.VCPUs), MaxMem: uint64(r.MemoryMiB) * MiB, Tags: r.Tags, Assumed: true, Creating: r.Creating,
		Storage: r.Storage, DiskBytes: r.DiskBytes, Recorded: antiAffinityRecord(r.AntiAffinity)}
}

// NodeInfos returns every node of the snapshot as a decision starts from it: guests listed,
// reservations assumed. Plugin tests and read-only views (the nodes data source) use it.
func NodeInfos(snap *Snapshot) []*NodeInfo {
	infos, _ := buildNodeInfos(snap)
	return infos
}

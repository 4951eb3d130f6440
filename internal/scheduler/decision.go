package scheduler

// Decision is the answer to one Schedule call: one placement per request, in request order.
type Decision struct {
	Placements []Placement
}

// Placement is where one request goes, and why.
type Placement struct {
	Name    string
	Node    string
	VMID    int
	Storage string
	// Existing is true when a guest with this name already existed and was kept in place
	// (sticky lookup).
	Existing bool
	// Candidates holds every node of the cluster, feasible or not, in snapshot node order.
	Candidates []Candidate
	// Summary is one human line, e.g. `pve2 (score 81.5; 3/4 nodes feasible), vmid 105 from
	// range 100-199, storage local-lvm`.
	Summary string
}

// Candidate is one node's verdict for one request.
type Candidate struct {
	Node     string
	Feasible bool
	// Reasons names every failing filter with its numbers, e.g.
	// "CPUOvercommit: (30+4)/8 = 4.25 > 4".
	Reasons []string
	// Score is the weighted sum of Scores; zero for infeasible nodes.
	Score float64
	// Scores maps score plugin name to its raw 0..100 score.
	Scores map[string]float64
}

// Reservation is the placement of r held until PVE lists its guest: the id, node, size, tags,
// disks and anti-affinity later decisions must see.
func (p Placement) Reservation(r *Request) Reservation {
	return Reservation{VMID: p.VMID, Node: p.Node, Name: r.Name, VCPUs: r.VCPUs(), MemoryMiB: r.MemoryMiB, Tags: r.Tags,
		Storage: p.Storage, DiskBytes: r.DiskBytes, AntiAffinity: r.VMAntiAffinity}
}

package rebalance

import (
	"fmt"
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// disks are the guest's disks, read once per plan.
func (p *planner) disks(g *scheduler.Guest) ([]Disk, error) {
	if p.in.Disks == nil {
		return nil, nil
	}
	if d, ok := p.diskCache[g.VMID]; ok {
		return d, nil
	}
	d, err := p.in.Disks(g)
	if err != nil {
		return nil, err
	}
	p.diskCache[g.VMID] = d
	return d, nil
}

// storage is the named storage of a node on the working snapshot, nil when the node has none.
func (p *planner) storage(node, name string) *scheduler.Storage {
	for i := range p.snap.Nodes {
		if p.snap.Nodes[i].Name != node {
			continue
		}
		for j := range p.snap.Nodes[i].Storages {
			if s := &p.snap.Nodes[i].Storages[j]; s.Name == name {
				return s
			}
		}
	}
	return nil
}

// localBytes sums the guest's disks by storage that is local to its node: what a migration
// copies and the target must have room for. Shared storage moves nothing.
func (p *planner) localBytes(g *scheduler.Guest) (map[string]uint64, error) {
	disks, err := p.disks(g)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for _, d := range disks {
		if s := p.storage(g.Node, d.Storage); s == nil || !s.Shared {
			out[d.Storage] += d.Bytes
		}
	}
	return out, nil
}

// storageRefusal says why node cannot hold the guest's disks, "" when it can: every storage of
// its disks must be active there, and a local one must have free space for them.
func (p *planner) storageRefusal(g *scheduler.Guest, node string) (string, error) {
	disks, err := p.disks(g)
	if err != nil {
		return "", err
	}
	local, err := p.localBytes(g)
	if err != nil {
		return "", err
	}
	var missing, full []string
	seen := map[string]bool{}
	for _, d := range disks {
		if seen[d.Storage] {
			continue
		}
		seen[d.Storage] = true
		s := p.storage(node, d.Storage)
		switch need, isLocal := local[d.Storage]; {
		case s == nil || !s.Active:
			missing = append(missing, d.Storage)
		case isLocal && need > s.Total-min(s.Total, s.Used):
			full = append(full, fmt.Sprintf("%s needs %s GiB free, has %s GiB", d.Storage, inGiB(need), inGiB(s.Total-min(s.Total, s.Used))))
		}
	}
	var why []string
	if len(missing) > 0 {
		why = append(why, fmt.Sprintf("disk storage %s not on %s", strings.Join(missing, ", "), node))
	}
	return strings.Join(append(why, full...), "; "), nil
}

// cost is what a move carries: the guest's memory and its local disks, in bytes.
func (p *planner) cost(g *scheduler.Guest) (uint64, error) {
	local, err := p.localBytes(g)
	if err != nil {
		return 0, err
	}
	c := g.MaxMem
	for _, b := range local {
		c += b
	}
	return c, nil
}

// shiftDisks moves the guest's local disks between the nodes' storages on the working
// snapshot, so that a later move sees the room this one took.
func (p *planner) shiftDisks(g *scheduler.Guest, from, to string) {
	local, _ := p.localBytes(g) // read by target before any move
	for name, b := range local {
		if s := p.storage(from, name); s != nil {
			s.Used -= min(s.Used, b)
		}
		if s := p.storage(to, name); s != nil {
			s.Used += b
		}
	}
}

func inGiB(b uint64) string { return scheduler.FormatNumber(round2(float64(b) / (1 << 30))) }

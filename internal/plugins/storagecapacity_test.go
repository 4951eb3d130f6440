package plugins

import (
	"errors"
	"reflect"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// withDisk is a request whose disks total diskGiB.
func withDisk(name string, diskGiB uint64) scheduler.Request {
	r := request(name)
	r.DiskBytes = diskGiB * gib
	return r
}

// usedGiB fills a node's local-lvm (100 GiB) up to used GiB.
func usedGiB(n scheduler.Node, used uint64) scheduler.Node {
	n.Storages = []scheduler.Storage{n.Storages[0]}
	n.Storages[0].Used = used * gib
	return n
}

func TestStorageCapacityFilter(t *testing.T) {
	f := newPlugin[scheduler.FilterPlugin](t, newStorageCapacity, nil)
	nodes := infos([]scheduler.Node{usedGiB(node("pve1", 8, 32), 88), usedGiB(node("pve2", 8, 32), 60)})
	for _, tt := range []struct {
		name string
		req  scheduler.Request
		want map[string]string
	}{
		{"fits one node", withDisk("a", 40), map[string]string{"pve1": "StorageCapacity: local-lvm has 12 GiB free, needs 40", "pve2": ""}},
		{"exactly the free space fits", withDisk("a", 12), map[string]string{"pve1": "", "pve2": ""}},
		{"unknown size passes", withDisk("a", 0), map[string]string{"pve1": "", "pve2": ""}},
		{"one byte too many shows it", scheduler.Request{Name: "a", DiskBytes: 40*gib + 1}, map[string]string{"pve1": "StorageCapacity: local-lvm has 12 GiB free, needs 40", "pve2": "StorageCapacity: local-lvm has 40 GiB free, needs 40.00001"}},
	} {
		got, err := filterVerdicts(f, &tt.req, nodes)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %v %v, want %v", tt.name, got, err, tt.want)
		}
	}
}

// A decision debits the storage it fills: local storage per node, shared storage once for
// the cluster; the unschedulable message counts the nodes short of space.
func TestStorageCapacityAcrossOneDecision(t *testing.T) {
	p := mustProfile(scheduler.PluginConfig{})
	local := scheduler.Snapshot{Nodes: []scheduler.Node{usedGiB(node("pve1", 8, 32), 20), usedGiB(node("pve2", 8, 32), 60)}}
	d, err := p.Schedule(local, []scheduler.Request{withDisk("a", 40), withDisk("b", 40), withDisk("c", 40)}, scheduler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 80 and 40 GiB free: pve1 is the only node that fits 40 twice, then pve2 takes the
	// third; which node goes first is the score's business, the totals are not.
	perNode := map[string]int{}
	for _, pl := range d.Placements {
		perNode[pl.Node]++
	}
	if perNode["pve1"] != 2 || perNode["pve2"] != 1 {
		t.Errorf("placements per node %v, want pve1 2, pve2 1", perNode)
	}
	_, err = p.Schedule(local, []scheduler.Request{withDisk("a", 40), withDisk("b", 40), withDisk("c", 40), withDisk("d", 40)}, scheduler.Options{})
	var ue *scheduler.UnschedulableError
	if !errors.As(err, &ue) || ue.Message != "0/2 nodes are available: 2 node(s) had too little free storage for 40 GiB of disks" {
		t.Errorf("fourth 40 GiB VM: %v", err)
	}

	shared := scheduler.Snapshot{}
	for _, name := range []string{"pve1", "pve2"} {
		n := node(name, 8, 32)
		n.Storages = []scheduler.Storage{{Name: "ceph", Content: []string{"images"}, Active: true, Shared: true, Total: 1000 * gib, Used: 900 * gib}}
		shared.Nodes = append(shared.Nodes, n)
	}
	_, err = p.Schedule(shared, []scheduler.Request{withDisk("a", 60), withDisk("b", 60)}, scheduler.Options{})
	if !errors.As(err, &ue) || ue.Candidates[0].Reasons[0] != "StorageCapacity: ceph has 40 GiB free, needs 60" || ue.Candidates[1].Reasons[0] != ue.Candidates[0].Reasons[0] {
		t.Errorf("second 60 GiB VM on a shared 100 GiB: %v %+v", err, ue)
	}
}

package scheduler

import (
	"strings"
	"testing"
)

const gib = 1 << 30

// storageNodes: n1 and n2 each have a local storage with 100 GiB free and share "ceph" with
// 150 GiB free.
func storageNodes() []Node {
	nodes := testNodes("n1", "n2")
	for i := range nodes {
		nodes[i].Storages = []Storage{
			{Name: "local", Content: []string{"images"}, Active: true, Total: 200 * gib, Used: 100 * gib},
			{Name: "ceph", Content: []string{"images"}, Active: true, Shared: true, Total: 1000 * gib, Used: 850 * gib},
		}
	}
	return nodes
}

// Placements of one decision debit their storage: a local one on its node only, a shared one
// once for the whole cluster; the choice follows the free space that is left.
func TestPlacementsDebitStorage(t *testing.T) {
	prof := testProfile(t, fakeRegistry(fixedScore{"Pin", map[string]float64{"n1": 100}}), PluginConfig{})
	reqs := make([]Request, 4)
	for i := range reqs {
		reqs[i] = Request{Name: "vm" + itoa(i), Cores: 1, Sockets: 1, MemoryMiB: 512, DiskBytes: 60 * gib}
	}
	d, err := prof.Schedule(Snapshot{Nodes: storageNodes()}, reqs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// ceph 150 free > local 100: ceph (90 left), then local 100 > 90: local (40 left), then
	// ceph 90 > 40: ceph (30 left), then 40 > 30: local.
	want := []string{"ceph", "local", "ceph", "local"}
	for i, p := range d.Placements {
		if p.Node != "n1" || p.Storage != want[i] {
			t.Errorf("placement %d: %s on %s, want %s on n1", i, p.Storage, p.Node, want[i])
		}
	}
	infos := NodeInfos(&Snapshot{Nodes: storageNodes(), Reservations: []Reservation{
		{VMID: 500, Node: "n1", VCPUs: 1, MemoryMiB: 512, Storage: "ceph", DiskBytes: 100 * gib},
		{VMID: 501, Node: "n1", VCPUs: 1, MemoryMiB: 512, Storage: "local", DiskBytes: 30 * gib},
	}})
	for _, tt := range []struct {
		node    int
		storage int
		want    uint64
	}{
		{0, 0, 70 * gib}, {1, 0, 100 * gib}, // local: n1 only
		{0, 1, 50 * gib}, {1, 1, 50 * gib}, // ceph: seen from both nodes, debited once
	} {
		n := infos[tt.node]
		if got := n.StorageFree(n.Node.Storages[tt.storage]); got != tt.want {
			t.Errorf("%s %s: %d GiB free, want %d", n.Node.Name, n.Node.Storages[tt.storage].Name, got/gib, tt.want/gib)
		}
	}
}

// A guest kept in place already has its disks: it needs no new space on its storage.
func TestExistingGuestNeedsNoNewSpace(t *testing.T) {
	var seen []uint64
	reg := Registry{Filters: []PluginSpec{{Name: "Disk", New: func(map[string]string) (Plugin, error) {
		return diskProbe{&seen}, nil
	}}}}
	prof := testProfile(t, reg, PluginConfig{})
	snap := Snapshot{Nodes: storageNodes(), Guests: []Guest{{VMID: 100, Node: "n2", Name: "db", Status: "running", CPUs: 1, MaxMem: 1 << 30}}}
	r := Request{Name: "db", Cores: 1, Sockets: 1, MemoryMiB: 1024, DiskBytes: 40 * gib}
	d, err := prof.Schedule(snap, []Request{r}, Options{Sticky: true})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Placements[0].Existing {
		t.Fatalf("want the guest kept, got %+v", d.Placements[0])
	}
	prof.CheckNode(snap, r, "n2", 100)
	for _, b := range seen {
		if b != 0 {
			t.Fatalf("filters saw DiskBytes %v for the kept guest, want 0", seen)
		}
	}
	if len(seen) != 3 { // two nodes when kept, one node checked
		t.Fatalf("filter ran %d times, want 3", len(seen))
	}
}

type diskProbe struct{ seen *[]uint64 }

func (diskProbe) Name() string { return "Disk" }
func (p diskProbe) Filter(_ *CycleState, r *Request, _ *NodeInfo) *Rejection {
	*p.seen = append(*p.seen, r.DiskBytes)
	return nil
}

// A DefaultOff plugin runs only when a layer enables it; an entry without enable does.
func TestDefaultOffPlugins(t *testing.T) {
	reg := fakeRegistry(fixedScore{"On", nil}, fixedScore{"Off", nil})
	reg.Scores[1].DefaultOff = true
	yes, no := true, false
	for _, tt := range []struct {
		name string
		cfg  map[string]PluginSetting
		want []string
	}{
		{"nothing said", nil, []string{"On"}},
		{"enabled", map[string]PluginSetting{"Off": {Enable: &yes}}, []string{"On", "Off"}},
		{"disabled both", map[string]PluginSetting{"Off": {Enable: &no}, "On": {Enable: &no}}, nil},
	} {
		prof := testProfile(t, reg, PluginConfig{Scores: tt.cfg})
		var got []string
		for _, s := range prof.scores {
			got = append(got, s.plugin.Name())
		}
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%s: enabled %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A full clone from another node may only use a shared storage (PVE refuses to clone onto a
// local one of another node); on the source's own node every storage serves.
func TestCloneFromAnotherNodeNeedsSharedStorage(t *testing.T) {
	nodes := storageNodes()
	nodes[0].Storages[0].Total = 400 * gib // n1's local storage has the most free space
	nodes[1].Storages[1].Active = false    // n2 has no active shared storage
	infos := NodeInfos(&Snapshot{Nodes: nodes})
	tests := []struct {
		name       string
		node       int
		r          Request
		want, fail string
	}{
		{"no clone: most free", 0, Request{}, "local", ""},
		{"clone on the source's node: most free", 0, Request{CloneFrom: "n1"}, "local", ""},
		{"clone from another node: shared only", 0, Request{CloneFrom: "n2"}, "ceph", ""},
		{"clone from another node, local pinned", 0, Request{CloneFrom: "n2", Storage: "local"}, "",
			`storage "local" is local to n1, and a clone from n2 onto another node needs a shared storage`},
		{"clone from another node, no shared storage", 1, Request{CloneFrom: "n1"}, "",
			"no active shared storage on n2 holds VM images, and a clone from n1 onto another node needs one"},
		{"clone on the source's node, local pinned", 1, Request{CloneFrom: "n2", Storage: "local"}, "local", ""},
	}
	for _, tt := range tests {
		got, _, reason := ChooseStorage(infos[tt.node], &tt.r)
		if got != tt.want || reason != tt.fail {
			t.Errorf("%s: %q (%q), want %q (%q)", tt.name, got, reason, tt.want, tt.fail)
		}
	}
}

// A request naming an existing guest answers the storage the guest's disks are on
// (PreferStorage), kept in place or moved, not the one a new VM would get (ceph, with more free
// space); a pinned storage still wins, and a preferred one the disks do not fit is passed over
// by a guest that moves, not by one kept in place, whose disks are there already.
func TestPreferredStorageOfAnExistingGuest(t *testing.T) {
	prof := testProfile(t, fakeRegistry(), PluginConfig{})
	for _, tc := range []struct {
		name, guestNode, pinned string
		diskGiB                 uint64
		want                    string
		existing                bool
	}{
		{"kept", "n2", "", 0, "local", true},
		{"kept, storage pinned", "n2", "ceph", 0, "ceph", true},
		{"kept, its disks already filling the preferred storage", "n2", "", 120, "local", true},
		{"moved (its node is gone)", "n9", "", 40, "local", false},
		{"moved, its disks do not fit the preferred storage", "n9", "", 120, "ceph", false},
	} {
		snap := Snapshot{Nodes: storageNodes(), Guests: []Guest{{VMID: 100, Node: tc.guestNode, Name: "db", Status: "running", CPUs: 1, MaxMem: 1 << 30}}}
		r := Request{Name: "db", Cores: 1, Sockets: 1, MemoryMiB: 1024, Storage: tc.pinned, PreferStorage: "local", DiskBytes: tc.diskGiB * gib}
		d, err := prof.Schedule(snap, []Request{r}, Options{Sticky: true})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if p := d.Placements[0]; p.Existing != tc.existing || p.VMID != 100 || p.Storage != tc.want || !strings.HasSuffix(p.Summary, "storage "+tc.want) {
			t.Errorf("%s: %+v, want existing %v, vmid 100, storage %s", tc.name, p, tc.existing, tc.want)
		}
	}
}

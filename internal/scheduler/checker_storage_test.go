package scheduler

import "testing"

// An existing guest is answered the storage its disks are on (PreferStorage), the pin when
// there is one, else what a new VM would get; an unknown node answers none.
func TestCheckerStorage(t *testing.T) {
	prof := testProfile(t, fakeRegistry(fixedScore{"Pin", map[string]float64{"n1": 100}}), PluginConfig{})
	snap := Snapshot{Nodes: storageNodes(), Guests: []Guest{{VMID: 100, Node: "n1", Name: "db", Type: GuestQEMU, Status: "running", CPUs: 1, MaxMem: gib}}}
	c := prof.NewChecker(&snap)
	for _, tc := range []struct {
		name, node, pin, prefer, want string
	}{
		{"its disks' storage", "n1", "", "local", "local"},
		{"the pin beats its disks", "n1", "ceph", "local", "ceph"},
		{"no disks: the most free space", "n1", "", "", "ceph"},
		{"a node not in the cluster", "n9", "", "local", ""},
	} {
		r := Request{Name: "db", Cores: 1, Sockets: 1, MemoryMiB: 1024, Storage: tc.pin, PreferStorage: tc.prefer}
		if got := c.Storage(r, tc.node, 100); got != tc.want {
			t.Errorf("%s: storage %q, want %q", tc.name, got, tc.want)
		}
	}
}

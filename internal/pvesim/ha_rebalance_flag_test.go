package pvesim

import "testing"

// TestCRSAutoRebalanceFlag: a resource whose auto-rebalance option is 0 takes part in no
// rebalancing migration, nor does the positive-affinity bundle it belongs to (pve-docs
// ha-manager, Automatic Rebalance); unset or 1, it does. The option is written into the
// resources directly, as the HA resources API stores it.
func TestCRSAutoRebalanceFlag(t *testing.T) {
	c := Cluster{CRS: "ha=static,ha-auto-rebalance=1",
		HARules: []HARuleSpec{{Rule: "pair", Type: "resource-affinity", Affinity: "positive", Resources: []string{"vm:103", "vm:104"}}}}
	for _, n := range []string{"node1", "node2", "node3"} {
		c.Nodes = append(c.Nodes, NodeSpec{Name: n, CPUs: 24, MemoryGiB: 32})
	}
	for vmid := 101; vmid <= 104; vmid++ {
		c.Guests = append(c.Guests, GuestSpec{VMID: vmid, Node: "node1", Status: "running", Cores: 2, MemoryMiB: 8192})
	}
	s := NewTestServer(t, c)
	for vmid := 101; vmid <= 104; vmid++ {
		res := &haResource{sid: guestSID(s.guests[vmid]), typ: "vm", vmid: vmid, opts: map[string]string{}}
		s.haResources[res.sid] = res
	}
	s.haResources["vm:101"].opts["auto-rebalance"] = "0"
	s.haResources["vm:104"].opts["auto-rebalance"] = "0"
	moves := s.RunHARounds(20)
	if len(moves) != 1 || moves[0].SID != "vm:102" {
		t.Errorf("rebalanced %v, want vm:102 only: vm:101 and the bundle of vm:103 and vm:104 have auto-rebalance off", moves)
	}
	s.haResources["vm:101"].opts["auto-rebalance"] = "1"
	if moves := s.RunHARounds(20); len(moves) == 0 || moves[0].SID != "vm:101" {
		t.Errorf("with vm:101's auto-rebalance on: %v, want vm:101 moved", moves)
	}
	if g := s.guests[104]; g.node != "node1" || s.guests[103].node != "node1" {
		t.Errorf("vm:103 on %s, vm:104 on %s; want both left on node1", s.guests[103].node, g.node)
	}
}

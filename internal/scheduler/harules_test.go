package scheduler

import (
	"strings"
	"testing"
)

// HARefusal follows pve-ha-manager's node choice for a service in a node-affinity rule
// (Manager.pm select_service_node, Rules/NodeAffinity.pm get_node_affinity): it runs on the
// highest priority class of the rule's nodes the HA manager may use (online, not in
// maintenance; a non-strict rule adds every other node at -1), and with failback (on by
// default in PVE 9) it is moved back there from a lower class, unless negative peers leave no
// node of that class. A move the HA manager would undo is refused, with the priorities.
func TestHARefusalPriorities(t *testing.T) {
	prio := HARule{Name: "prio", Type: HANodeAffinity, Strict: true, VMIDs: []int{100},
		Nodes: []string{"pve1", "pve2", "pve3"}, Priorities: map[string]int{"pve1": 2, "pve2": 1}}
	loose := prio
	loose.Name, loose.Strict = "loose", false
	apart := HARule{Name: "apart", Type: HAResourceAffinity, Affinity: HANegative, VMIDs: []int{100, 101}}
	twoTop := prio
	twoTop.Priorities = map[string]int{"pve1": 2, "pve2": 1, "pve3": 2}
	tests := []struct {
		name        string
		rules       []HARule
		node        string
		offline     []string
		maintenance []string
		failbackOff bool
		peer        string // where vm 101 runs
		peerTarget  string // where the HA manager moves it
		want        string
	}{
		{name: "highest class", rules: []HARule{prio}, node: "pve1"},
		{name: "lower class, higher online", rules: []HARule{prio}, node: "pve2",
			want: "HA rule prio (node-affinity): pve2 has priority 1, the HA manager moves the VM back to pve1 (priority 2) unless its HA resource's failback is off"},
		{name: "failback off keeps a lower class", rules: []HARule{prio}, node: "pve2", failbackOff: true},
		{name: "higher class offline", rules: []HARule{prio}, node: "pve2", offline: []string{"pve1"}},
		{name: "higher class in maintenance", rules: []HARule{prio}, node: "pve2", maintenance: []string{"pve1"}},
		{name: "two classes up, the top one gone", rules: []HARule{prio}, node: "pve3", offline: []string{"pve1"},
			want: "pve3 has priority 0, the HA manager moves the VM back to pve2 (priority 1)"},
		{name: "two nodes in the top class", rules: []HARule{twoTop}, node: "pve2", want: "back to pve1 or pve3 (priority 2)"},
		{name: "outside a strict rule", rules: []HARule{prio}, node: "pve4", want: "HA rule prio (node-affinity) allows only pve1, pve2, pve3"},
		{name: "outside a strict rule, failback off", rules: []HARule{prio}, node: "pve4", failbackOff: true, want: "allows only pve1, pve2, pve3"},
		{name: "outside a non-strict rule", rules: []HARule{loose}, node: "pve4",
			want: "HA rule loose (node-affinity): pve4 is not one of its nodes (priority -1), the HA manager moves the VM back to pve1 (priority 2)"},
		{name: "outside a non-strict rule, its nodes gone", rules: []HARule{loose}, node: "pve4", offline: []string{"pve1", "pve2", "pve3"}},
		{name: "outside a non-strict rule, failback off", rules: []HARule{loose}, node: "pve4", failbackOff: true},
		// select_service_node keeps the top class only, then drops nodes of negative peers:
		// with none left the service stays where it is.
		{name: "a negative peer on the top class", rules: []HARule{prio, apart}, node: "pve2", peer: "pve1"},
		{name: "a negative peer moved to the top class", rules: []HARule{prio, apart}, node: "pve2", peer: "pve4", peerTarget: "pve1"},
		{name: "a negative peer elsewhere", rules: []HARule{prio, apart}, node: "pve2", peer: "pve3", want: "back to pve1 (priority 2)"},
		{name: "a disabled rule", rules: []HARule{{Name: "off", Type: HANodeAffinity, VMIDs: []int{100}, Nodes: []string{"pve1"}, Disabled: true}}, node: "pve4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := &Snapshot{}
			for _, n := range []string{"pve1", "pve2", "pve3", "pve4"} {
				node := Node{Name: n, Online: true, HAState: "online"}
				for _, off := range tt.offline {
					node.Online = node.Online && off != n
				}
				for _, m := range tt.maintenance {
					if m == n {
						node.HAState = "maintenance"
					}
				}
				snap.Nodes = append(snap.Nodes, node)
			}
			if tt.failbackOff {
				snap.HAFailbackOff = map[int]bool{100: true}
			}
			where := func(vmid int) (string, string, bool) {
				if vmid == 101 && tt.peer != "" {
					return tt.peer, tt.peerTarget, true
				}
				return "", "", false
			}
			got := HARefusal(snap, tt.rules, 100, tt.node, where)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("move to %s: %q, want %q", tt.node, got, tt.want)
			}
		})
	}
}

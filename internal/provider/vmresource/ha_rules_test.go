package vmresource

import (
	"reflect"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/harules"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// An offline node keeps its place in the VM's node rule; when it is the VM's own node, whose
// domain cannot be read, the current rule is kept whole rather than widened or dropped.
func TestKeepDownNodes(t *testing.T) {
	snap := scheduler.Snapshot{Nodes: []scheduler.Node{{Name: "pve1", Online: true}, {Name: "pve2"}, {Name: "pve3", Online: true}}}
	cur := []scheduler.HARule{{Name: harules.Prefix + "vm-100", Type: scheduler.HANodeAffinity, VMIDs: []int{100}, Nodes: []string{"pve1", "pve2"}}}
	want := []harules.Rule{{HARule: scheduler.HARule{Name: harules.Prefix + "vm-100", Type: scheduler.HANodeAffinity, VMIDs: []int{100}, Nodes: []string{"pve1"}}}}
	if got := keepDownNodes(want, cur, snap, 100, "pve1"); !reflect.DeepEqual(got[0].Nodes, []string{"pve1", "pve2"}) {
		t.Errorf("nodes %v, want the offline pve2 kept", got[0].Nodes)
	}
	wide := []harules.Rule{{HARule: scheduler.HARule{Name: harules.Prefix + "vm-100", Type: scheduler.HANodeAffinity, VMIDs: []int{100}, Nodes: []string{"pve1", "pve2", "pve3"}}}}
	if got := keepDownNodes(wide, cur, snap, 100, "pve2"); !reflect.DeepEqual(got[0].Nodes, []string{"pve1", "pve2"}) {
		t.Errorf("nodes %v, want the current rule whole (the VM's node pve2 is offline)", got[0].Nodes)
	}
	if got := keepDownNodes(nil, cur, snap, 100, "pve2"); len(got) != 1 || !reflect.DeepEqual(got[0].HARule, cur[0]) {
		t.Errorf("rules %+v, want the current rule kept, not dropped", got)
	}
	if got := keepDownNodes(nil, cur, snap, 100, "pve1"); len(got) != 0 {
		t.Errorf("rules %+v, want none: the VM's node is online and its rules want no node rule", got)
	}
}

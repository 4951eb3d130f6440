package proxmox_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

func TestHARules(t *testing.T) {
	c := pvesim.Cluster{
		Nodes:  []pvesim.NodeSpec{{Name: "pve1", CPUs: 4, MemoryGiB: 8}, {Name: "pve2", CPUs: 4, MemoryGiB: 8}},
		Guests: []pvesim.GuestSpec{{VMID: 100, Node: "pve1"}, {VMID: 101, Node: "pve2"}},
		HARules: []pvesim.HARuleSpec{
			{Rule: "pin", Type: "node-affinity", Resources: []string{"vm:100"}, Nodes: []string{"pve2:2", "pve1"}, Strict: true},
			{Rule: "apart", Type: "resource-affinity", Affinity: "negative", Resources: []string{"vm:100", "ct:101"}, Disable: true},
		},
	}
	rules, err := newClient(t, pvesim.NewTestServer(t, c)).HARules(context.Background())
	want := []scheduler.HARule{
		{Name: "pin", Type: "node-affinity", VMIDs: []int{100}, Nodes: []string{"pve1", "pve2"}, Strict: true},
		{Name: "apart", Type: "resource-affinity", VMIDs: []int{101, 100}, Affinity: "negative", Disabled: true},
	}
	if err != nil || !reflect.DeepEqual(rules, want) {
		t.Fatalf("rules %+v, %v\nwant %+v", rules, err, want)
	}
	c.HARules = nil // PVE 8: no such method, no rules
	if rules, err := newClient(t, pvesim.NewTestServer(t, c)).HARules(context.Background()); err != nil || len(rules) != 0 {
		t.Fatalf("PVE 8: rules %v, %v; want none", rules, err)
	}
}

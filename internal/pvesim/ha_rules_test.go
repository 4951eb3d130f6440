package pvesim_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

func TestHARulesAnswerAsPVE9(t *testing.T) {
	c := pvesim.Cluster{
		Nodes:  []pvesim.NodeSpec{{Name: "pve1", CPUs: 4, MemoryGiB: 8}, {Name: "pve2", CPUs: 4, MemoryGiB: 8}},
		Guests: []pvesim.GuestSpec{{VMID: 100, Node: "pve1"}, {VMID: 101, Node: "pve2"}},
		HARules: []pvesim.HARuleSpec{
			{Rule: "pin", Type: "node-affinity", Resources: []string{"vm:101", "vm:100"}, Nodes: []string{"pve2:2", "pve1:0"}, Strict: true},
			{Rule: "apart", Type: "resource-affinity", Affinity: "negative", Resources: []string{"vm:100", "vm:101"}, Disable: true},
		},
	}
	a := newAPI(t, pvesim.NewTestServer(t, c))
	rows := a.get("/cluster/ha/rules").list()
	if len(rows) != 2 {
		t.Fatalf("rows %v", rows)
	}
	pin, apart := rows[0], rows[1]
	if pin["resources"] != "vm:100,vm:101" || pin["nodes"] != "pve1,pve2:2" || pin["strict"] != float64(1) || pin["order"] != float64(1) {
		t.Fatalf("node-affinity row %v: resources and nodes sorted, priority 0 bare, strict 1, order 1", pin)
	}
	if _, ok := apart["strict"]; ok || apart["disable"] != float64(1) || apart["affinity"] != "negative" || apart["digest"] != pin["digest"] {
		t.Fatalf("resource-affinity row %v: no strict, disable 1, the file's digest", apart)
	}
	if rows := a.get("/cluster/ha/rules?type=resource-affinity").list(); len(rows) != 1 || rows[0]["rule"] != "apart" {
		t.Fatalf("type filter: %v", rows)
	}
}

func TestHARulesAbsentOnPVE8(t *testing.T) {
	a := newAPI(t, pvesim.NewTestServer(t, pvesim.Cluster{Nodes: []pvesim.NodeSpec{{Name: "pve1", CPUs: 4, MemoryGiB: 8}}}))
	if r := a.get("/cluster/ha/rules"); r.code != http.StatusNotImplemented || !strings.Contains(r.status, "not implemented") {
		t.Fatalf("PVE 8 answers %d %q, want 501 not implemented", r.code, r.status)
	}
}

func TestHARulesValidated(t *testing.T) {
	base := pvesim.Cluster{Nodes: []pvesim.NodeSpec{{Name: "pve1", CPUs: 4, MemoryGiB: 8}}, Guests: []pvesim.GuestSpec{{VMID: 100, Node: "pve1"}}}
	tests := map[string]pvesim.HARuleSpec{
		"non-existent node":    {Rule: "ab", Type: "node-affinity", Resources: []string{"vm:100"}, Nodes: []string{"pve9"}},
		"less than two":        {Rule: "ab", Type: "resource-affinity", Affinity: "negative", Resources: []string{"vm:100"}},
		"not vm:<vmid> or ct:": {Rule: "ab", Type: "node-affinity", Resources: []string{"vm:999"}, Nodes: []string{"pve1"}},
		"ids match":            {Rule: "1a", Type: "node-affinity", Resources: []string{"vm:100"}, Nodes: []string{"pve1"}},
		"type must be":         {Rule: "ab", Type: "group", Resources: []string{"vm:100"}},
		"positive or negative": {Rule: "ab", Type: "resource-affinity", Resources: []string{"vm:100", "vm:100"}},
	}
	for want, rule := range tests {
		c := base
		c.HARules = []pvesim.HARuleSpec{rule}
		if _, err := pvesim.New(c); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: err = %v, want %q", rule, err, want)
		}
	}
}

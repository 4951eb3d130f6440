package pvesim_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

func TestParseCluster(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		wantErr string
	}{
		{"yaml", "nodes: [{name: pve1, cpus: 4, memory_gib: 8}]\nguests: [{vmid: 100, node: pve1}]\n", ""},
		{"json", `{"nodes":[{"name":"pve1","cpus":4,"memory_gib":8}],"next_id":{"lower":500,"upper":600}}`, ""},
		{"unknown key", "nodes: [{name: pve1, cpus: 4, memory_gib: 8, ram: 3}]\n", "field ram not found"},
		{"node without cpus", "nodes: [{name: pve1, memory_gib: 8}]\n", `node "pve1" needs a name, cpus > 0 and memory_gib > 0`},
		{"duplicate vmid", "nodes: [{name: pve1, cpus: 4, memory_gib: 8}]\nguests: [{vmid: 100, node: pve1}, {vmid: 100, node: pve1}]\n", "guest vmid 100 is invalid or duplicated"},
		{"vmid out of range", "nodes: [{name: pve1, cpus: 4, memory_gib: 8}]\nguests: [{vmid: 99, node: pve1}]\n", "guest vmid 99 is invalid or duplicated"},
		{"guest on an unknown node", "nodes: [{name: pve1, cpus: 4, memory_gib: 8}]\nguests: [{vmid: 100, node: pve2}]\n", `guest 100 is on unknown node "pve2"`},
		{"not a cluster file", "- just\n- a list\n", "cannot unmarshal"},
		{"node twice", "nodes: [{name: pve1, cpus: 4, memory_gib: 8}, {name: pve1, cpus: 4, memory_gib: 8}]\n", `node "pve1" is listed twice`},
		{"storage on an unknown node", "nodes: [{name: pve1, cpus: 4, memory_gib: 8}]\nstorages: [{name: local, size_gib: 10, nodes: [pve2]}]\n", `storage "local" is enabled on unknown node "pve2"`},
		{"storage overfull", "storages: [{name: local, size_gib: 10, used_gib: 11}]\n", `storage "local" needs a name and 0 <= used_gib <= size_gib`},
		{"guest type", "nodes: [{name: pve1, cpus: 4, memory_gib: 8}]\nguests: [{vmid: 100, node: pve1, type: vm}]\n", `guest 100 has type "vm"; use qemu or lxc`},
		{"guest status", "nodes: [{name: pve1, cpus: 4, memory_gib: 8}]\nguests: [{vmid: 100, node: pve1, status: paused}]\n", `guest 100 has status "paused"; use running or stopped`},
		{"unknown pool", "nodes: [{name: pve1, cpus: 4, memory_gib: 8}]\nguests: [{vmid: 100, node: pve1, pool: prod}]\n", `guest 100 is in pool "prod", which is not in pools`},
		{"running template", "nodes: [{name: pve1, cpus: 4, memory_gib: 8}]\nguests: [{vmid: 100, node: pve1, template: true, status: running}]\n", "guest 100 is a template and cannot be running"},
		{"next_id bounds", "next_id: {lower: 500, upper: 400}\n", "next_id needs 100 <= lower < upper, got lower 500, upper 400"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := pvesim.ParseCluster([]byte(tt.file))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	if _, err := pvesim.New(pvesim.Cluster{Guests: []pvesim.GuestSpec{{VMID: 100, Node: "x"}}}); err == nil {
		t.Error("New accepted a guest on an unknown node")
	}
}

// The lab file is what the demo and the standalone binary serve: 5 nodes, one offline, a
// clonable template on shared storage, an lxc, a pool and no next-id bounds.
func TestLabCluster(t *testing.T) {
	s, a := lab(t)
	nodes := a.ok(a.get("/nodes")).list()
	offline := 0
	for _, n := range nodes {
		if n["status"] == "offline" {
			offline++
		}
	}
	if len(nodes) != 5 || offline != 1 {
		t.Errorf("%d nodes, %d offline; want 5 and 1", len(nodes), offline)
	}
	tmpl := s.MustGuest(t, 9000)
	if tmpl.Config["template"] != "1" || !strings.HasPrefix(tmpl.Config["scsi0"], "ceph:") {
		t.Errorf("template 9000: %v", tmpl.Config)
	}
	if ct := s.MustGuest(t, 200); ct.Type != "lxc" {
		t.Errorf("guest 200 is %q, want lxc", ct.Type)
	}
	if g := s.MustGuest(t, 100); g.Config["tags"] != "db;prod" || g.Pool != "prod" {
		t.Errorf("guest 100: tags %q pool %q", g.Config["tags"], g.Pool)
	}
	if opts := a.ok(a.get("/cluster/options")).obj(); opts["next-id"] != nil {
		t.Errorf("lab next-id is set: %v", opts["next-id"])
	}
	if lxc := a.ok(a.get("/nodes/pve2/lxc")).list(); len(lxc) != 1 || lxc[0]["vmid"] != 200.0 {
		t.Errorf("pve2 lxc list %v", lxc)
	}
	if pools := fmt.Sprint(a.ok(a.get("/pools")).list()); pools != "[map[poolid:lab] map[poolid:prod]]" {
		t.Errorf("pools %s, want lab and prod, without comments", pools)
	}
}

func TestNextIDBounds(t *testing.T) {
	c := pvesim.Cluster{
		Nodes:  []pvesim.NodeSpec{{Name: "pve1", CPUs: 4, MemoryGiB: 8}},
		Guests: []pvesim.GuestSpec{{VMID: 200, Node: "pve1"}, {VMID: 201, Node: "pve1", Type: "lxc"}},
		NextID: &pvesim.NextIDSpec{Lower: 200, Upper: 203},
	}
	s := pvesim.NewTestServer(t, c)
	a := newAPI(t, s)
	if id := a.ok(a.get("/cluster/nextid")); id.str() != "202" {
		t.Fatalf("nextid %s, want \"202\" (as a string; lxc ids count)", id.body)
	}
	nid := a.ok(a.get("/cluster/options")).obj()["next-id"].(map[string]any)
	if nid["lower"] != "200" || nid["upper"] != "203" {
		t.Errorf("options next-id %v", nid)
	}
	if r := a.get("/cluster/nextid?vmid=150"); r.str() != "150" {
		t.Errorf("nextid?vmid=150 (outside the bounds, but free) = %s", r.body)
	}
	s.TakeVMID(202)
	if r := a.get("/cluster/nextid"); r.status != "500 unable to get any free VMID in range [200, 203]" {
		t.Errorf("exhausted range: %s", r.status)
	}
	if r := a.get("/cluster/resources?type=vm"); len(r.list()) != 3 || r.code != http.StatusOK {
		t.Errorf("type=vm lists %d guests, want qemu and lxc", len(r.list()))
	}
}

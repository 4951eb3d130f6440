package proxmox_test

import (
	"context"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// Tags are written with PVE's synchronous PUT: one request, no task.
func TestSetTagsIsOneSynchronousWrite(t *testing.T) {
	s := pvesim.NewTestServer(t, pvesim.Cluster{Nodes: []pvesim.NodeSpec{{Name: "pve1", CPUs: 4, MemoryGiB: 8}},
		Guests: []pvesim.GuestSpec{{VMID: 100, Node: "pve1", Tags: []string{"old"}}}})
	c := newClient(t, s)
	s.ResetRequests()
	if err := c.SetTags(context.Background(), "pve1", 100, "a;b"); err != nil {
		t.Fatal(err)
	}
	if g, ok := s.Guest(100); !ok || g.Config["tags"] != "a;b" {
		t.Fatalf("tags %q (guest listed %v), want a;b", g.Config["tags"], ok)
	}
	if err := c.SetTags(context.Background(), "pve1", 100, ""); err != nil {
		t.Fatal(err)
	}
	if g, ok := s.Guest(100); !ok || g.Config["tags"] != "" {
		t.Fatalf("tags %q left (guest listed %v), want none", g.Config["tags"], ok)
	}
	if n := s.Requests("PUT /nodes/{node}/qemu/{vmid}/config"); n != 2 || s.Requests("GET /nodes/{node}/tasks/{upid}/status") != 0 {
		t.Fatalf("%d PUTs and %d task polls, want 2 and none", n, s.Requests("GET /nodes/{node}/tasks/{upid}/status"))
	}
}

package proxmox_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Writes without parameters (start, stop) send no body: PVE 6 and strict proxies refuse the
// JSON text null that an empty parameter map would otherwise become.
func TestWritesWithoutParametersSendNoBody(t *testing.T) {
	s, c := labClient(t, pvesim.WithStrictJSON(), pvesim.WithTaskDuration(time.Millisecond))
	ctx := context.Background()
	if err := c.StartVM(ctx, "pve3", 103); err != nil {
		t.Fatal(err)
	}
	if g := s.MustGuest(t, 103); g.Status != "running" {
		t.Fatalf("status %q after start", g.Status)
	}
	if err := c.StopVM(ctx, "pve3", 103); err != nil {
		t.Fatal(err)
	}
	if g := s.MustGuest(t, 103); g.Status != "stopped" {
		t.Fatalf("status %q after stop", g.Status)
	}
}

// NodeGuests reads one node's guests from its two lists, without the cluster view.
func TestNodeGuests(t *testing.T) {
	s, c := labClient(t)
	guests, err := c.NodeGuests(context.Background(), "pve2")
	if err != nil {
		t.Fatal(err)
	}
	want := []scheduler.Guest{
		{VMID: 102, Node: "pve2", Name: "monitoring", Type: scheduler.GuestQEMU, Status: "running", CPUs: 4, MaxMem: 8192 << 20, Tags: []string{"ops"}},
		{VMID: 200, Node: "pve2", Name: "dns", Type: scheduler.GuestLXC, Status: "running", CPUs: 1, MaxMem: 512 << 20, Tags: []string{"infra"}},
	}
	if !reflect.DeepEqual(guests, want) {
		t.Errorf("guests:\n got %+v\nwant %+v", guests, want)
	}
	if n := s.Requests("GET /cluster/resources"); n != 0 {
		t.Errorf("%d cluster reads, want 0", n)
	}
	if _, err := c.NodeGuests(context.Background(), "pve4"); !errors.Is(err, proxmox.ErrNodeOffline) {
		t.Errorf("offline node: %v", err)
	}
}

package proxmox_test

import (
	"context"
	"testing"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// Writes without parameters (start, stop) send no body: PVE 6 and strict proxies refuse the
// JSON text null that an empty parameter map would otherwise become.
func TestWritesWithoutParametersSendNoBody(t *testing.T) {
	s := pvesim.NewTestServer(t, lab(t), pvesim.WithStrictJSON(), pvesim.WithTaskDuration(time.Millisecond))
	c := newClient(t, s)
	ctx := context.Background()
	if err := c.StartVM(ctx, "pve3", 103); err != nil {
		t.Fatal(err)
	}
	if g, _ := s.Guest(103); g.Status != "running" {
		t.Fatalf("status %q after start", g.Status)
	}
	if err := c.StopVM(ctx, "pve3", 103); err != nil {
		t.Fatal(err)
	}
	if g, _ := s.Guest(103); g.Status != "stopped" {
		t.Fatalf("status %q after stop", g.Status)
	}
}

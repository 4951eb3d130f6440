package proxmox_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// The HA resources' auto-rebalance flag is written to PVE 9.2 and read back as resources.cfg
// has it (unset: PVE's default); to PVE 8, which refuses the property, it is left out. The
// release is read once per client.
func TestHAAutoRebalance(t *testing.T) {
	ctx := context.Background()
	flag := func(t *testing.T, c *proxmox.Client, vmid int) proxmox.Flag {
		t.Helper()
		r, err := c.HAResource(ctx, vmid)
		if err != nil || r == nil {
			t.Fatalf("HA resource of VM %d: %v %v", vmid, r, err)
		}
		return r.AutoRebalance
	}
	t.Run("PVE 9.2", func(t *testing.T) {
		s, c := labClient(t)
		if r, err := c.Release(ctx); err != nil || r != (proxmox.Release{Major: 9, Minor: 2}) {
			t.Fatalf("release %v %v", r, err)
		}
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(c.AddHAResource(ctx, 102, proxmox.HASettings{State: "started", MaxRestart: 1, MaxRelocate: 1, AutoRebalance: proxmox.FlagOff}))
		must(c.AddHAResource(ctx, 104, proxmox.HASettings{State: "started", MaxRestart: 1, MaxRelocate: 1}))
		if f := flag(t, c, 102); f != proxmox.FlagOff {
			t.Errorf("created off, read %v", f)
		}
		if f := flag(t, c, 104); f != proxmox.FlagUnset {
			t.Errorf("created unset, read %v", f)
		}
		must(c.UpdateHAResource(ctx, 102, proxmox.HASettings{State: "started", MaxRestart: 1, MaxRelocate: 1, AutoRebalance: proxmox.FlagOn}))
		if f := flag(t, c, 102); f != proxmox.FlagOn {
			t.Errorf("updated on, read %v", f)
		}
		// Unset in an update leaves PVE's value, here an admin's.
		putForm(t, s, "/cluster/ha/resources/vm:102", url.Values{"auto-rebalance": {"0"}})
		must(c.UpdateHAResource(ctx, 102, proxmox.HASettings{State: "started", MaxRestart: 2, MaxRelocate: 1}))
		if f := flag(t, c, 102); f != proxmox.FlagOff {
			t.Errorf("an update without the flag changed it to %v", f)
		}
		if n := s.Requests("GET /version"); n != 1 {
			t.Errorf("%d reads of /version, want 1", n)
		}
	})
	t.Run("PVE 8", func(t *testing.T) {
		c := lab(t)
		c.HARules = nil // PVE 8
		s := pvesim.NewTestServer(t, c)
		client := newClient(t, s)
		if err := client.AddHAResource(ctx, 102, proxmox.HASettings{State: "started", MaxRestart: 1, MaxRelocate: 1, AutoRebalance: proxmox.FlagOff}); err != nil {
			t.Fatalf("PVE 8 refused the flag, which must be left out: %v", err)
		}
		if err := client.UpdateHAResource(ctx, 102, proxmox.HASettings{State: "started", MaxRestart: 1, MaxRelocate: 1, AutoRebalance: proxmox.FlagOn}); err != nil {
			t.Fatalf("PVE 8 refused the flag, which must be left out: %v", err)
		}
		if f := flag(t, client, 102); f != proxmox.FlagUnset {
			t.Errorf("PVE 8 read %v", f)
		}
	})
}

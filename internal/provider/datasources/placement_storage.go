package datasources

import (
	"context"
	"errors"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// preferGuestStorages gives each request that names an existing VM (the only guest of that
// name, templates aside, on an online node) the storage that holds most of its disks, read
// from its config (one request per such VM), as its preferred storage: kept in place or moved,
// the placement answers where the disks are, not where a new VM's would go. Fed to a
// resource's storage (bpg's datastore_id), that other answer moved the disks, and back once
// the move left the other storage with more free space.
func preferGuestStorages(ctx context.Context, c *proxmox.Client, snap scheduler.Snapshot, reqs []scheduler.Request) error {
	at := map[string]int{}
	for i, g := range snap.Guests {
		if g.Template || g.Assumed {
			continue
		}
		if _, seen := at[g.Name]; seen {
			at[g.Name] = -1 // several guests: none is the request's
		} else {
			at[g.Name] = i
		}
	}
	online := map[string]bool{}
	for _, n := range snap.Nodes {
		online[n.Name] = n.Online
	}
	for i := range reqs {
		gi, ok := at[reqs[i].Name]
		if !ok || gi < 0 {
			continue
		}
		g := snap.Guests[gi]
		if g.Type != scheduler.GuestQEMU || !online[g.Node] {
			continue
		}
		storage, err := c.MainDiskStorage(ctx, g.Node, g.VMID)
		switch {
		case errors.Is(err, proxmox.ErrNotFound), errors.Is(err, proxmox.ErrNodeOffline):
			// Gone or unreachable since the view: the decision finds out by itself.
		case err != nil:
			return err
		default:
			reqs[i].PreferStorage = storage
		}
	}
	return nil
}

package provider

import (
	"context"
	"errors"
	"slices"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// withKeptStorages is snap with, on each VM that a request's name may keep in place (the only
// guest of that name, templates aside, on an online node), the storage that holds most of its
// disks, read from its config: one request per such VM. A kept placement then answers where
// the disks are, not where a new VM's would go: fed to a resource's storage (bpg's
// datastore_id), that answer moved the disks, and back once the move left the other storage
// with more free space. The cached view itself is left as it is.
func withKeptStorages(ctx context.Context, c *proxmox.Client, snap scheduler.Snapshot, reqs []scheduler.Request) (scheduler.Snapshot, error) {
	named := map[string]int{}
	for _, r := range reqs {
		named[r.Name] = -1
	}
	for i, g := range snap.Guests {
		at, wanted := named[g.Name]
		switch {
		case !wanted || g.Template || g.Assumed:
		case at == -1:
			named[g.Name] = i
		default:
			named[g.Name] = -2 // several guests: none is kept
		}
	}
	online := map[string]bool{}
	for _, n := range snap.Nodes {
		online[n.Name] = n.Online
	}
	guests := slices.Clone(snap.Guests)
	for _, i := range named {
		if i < 0 || guests[i].Type != scheduler.GuestQEMU || !online[guests[i].Node] {
			continue
		}
		g := &guests[i]
		storage, err := c.MainDiskStorage(ctx, g.Node, g.VMID)
		switch {
		case errors.Is(err, proxmox.ErrNotFound), errors.Is(err, proxmox.ErrNodeOffline):
			// Gone or unreachable since the view: the decision finds out by itself.
		case err != nil:
			return snap, err
		default:
			g.Storage = storage
		}
	}
	snap.Guests = guests
	return snap, nil
}

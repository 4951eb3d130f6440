package config

import (
	"context"
	"errors"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
)

// ReadVM reads VM vmid where it is now. It asks node first when one is known (where the
// state last saw the VM): refreshing VMs that stayed put reads no cluster view at all. Else,
// or when the VM is not there, it looks the VM up in the shared cluster view, and in a view
// read from now on when that one cannot tell: the VM is not where it says, or it does not
// list the VM and no node was known (the VM may be younger than the view). A VM known to
// exist (node given) that a recent view does not list is gone: ErrNotFound.
func (p *Data) ReadVM(ctx context.Context, vmid int, node string) (*proxmox.VM, error) {
	start := time.Now()
	var err error
	if node != "" {
		var vm *proxmox.VM
		if vm, err = p.Client.GetVM(ctx, node, vmid); !errors.Is(err, proxmox.ErrNotFound) && !errors.Is(err, proxmox.ErrNodeOffline) {
			return vm, err
		}
	}
	tried, current := node, false
	for _, since := range []time.Time{start.Add(-p.MaxAge), start} {
		if current {
			break // the shared view was read after start already: nothing newer to ask
		}
		snap, serr := p.SnapshotSince(ctx, since)
		if serr != nil {
			return nil, serr
		}
		current = snap.ReadAt.After(start)
		at, lerr := proxmox.LocateIn(snap, vmid)
		switch {
		case errors.Is(lerr, proxmox.ErrNotFound) && (node != "" || current), lerr != nil && !errors.Is(lerr, proxmox.ErrNotFound):
			return nil, lerr
		case lerr != nil:
			continue // the view may predate the VM
		case at == tried && errors.Is(err, proxmox.ErrNodeOffline):
			return nil, err
		case at == tried && !current:
			continue // the view predates the move that took the VM away from there
		}
		var vm *proxmox.VM
		if vm, err = p.Client.GetVM(ctx, at, vmid); !errors.Is(err, proxmox.ErrNotFound) {
			return vm, err
		}
		tried = at // it moved on since the view was read
	}
	return nil, err
}

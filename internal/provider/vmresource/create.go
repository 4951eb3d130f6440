package vmresource

// The create path of qemuscheduler_vm around the provisioning loop: what a new VM is, the
// loop's view of PVE, and the calls that create the guest and bring it to its plan.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/disk"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provision"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/records"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// NewGuest is a VM to create: its plan, the PVE configuration it renders to and its clone
// source, each worked out once before the first attempt.
type NewGuest struct {
	M      *Model
	config map[string]string
	Src    *proxmox.VM
	// record is the placement record the guest gets, nil for none.
	record *records.Record
}

// vmClient is the provisioning loop's view of PVE for one planned VM.
type vmClient struct {
	r *Resource
	g *NewGuest
}

func (c *vmClient) Snapshot(ctx context.Context, fresh bool) (scheduler.Snapshot, error) {
	if fresh {
		return c.r.Data.SnapshotSince(ctx, time.Now())
	}
	return c.r.Data.Snapshot(ctx)
}

func (c *vmClient) NodeView(ctx context.Context, node string) (scheduler.Snapshot, error) {
	return c.r.Data.NodeView(ctx, node)
}

func (c *vmClient) Create(ctx context.Context, p scheduler.Placement) error {
	err := c.r.createGuest(ctx, c.g, p)
	if err == nil && c.g.M.Clone != nil {
		// A clone takes its source's tags; a VM from scratch was created with the mark.
		if err = c.r.setMark(ctx, p.Node, p.VMID, proxmox.ClaimTag); err != nil {
			return fmt.Errorf("%w: %w", provision.ErrCreatedUnmarked, err)
		}
	}
	return err
}

func (c *vmClient) Confirm(ctx context.Context, p scheduler.Placement) error {
	return c.r.setMark(ctx, p.Node, p.VMID, proxmox.PendingTag)
}

func (c *vmClient) Delete(ctx context.Context, node string, vmid int) error {
	return c.r.Data.Client.DeleteVM(ctx, node, vmid)
}

// setMark replaces the provider's mark among the VM's tags by mark ("" removes it), keeping
// the tags the VM has.
func (r *Resource) setMark(ctx context.Context, node string, vmid int, mark string) error {
	vm, err := r.Data.Client.GetVM(ctx, node, vmid)
	if err != nil {
		return err
	}
	tags := markTags(vm.Config["tags"], mark)
	if tags == vm.Config["tags"] {
		return nil
	}
	return r.Data.Client.SetTags(ctx, node, vmid, tags)
}

func (c *vmClient) Find(ctx context.Context, vmid int) (provision.Guest, error) {
	vm, err := c.r.Data.ReadVM(ctx, vmid, "")
	if err != nil {
		return provision.Guest{}, err
	}
	return provision.Guest{Node: vm.Node, Name: vm.Config["name"], Lock: vm.Lock}, nil
}

// createErrorDetail explains a failed create, with the fix when the user can make one.
func createErrorDetail(err error, pinnedVMID, attempt int) string {
	switch {
	case errors.Is(err, proxmox.ErrAlreadyExists) && pinnedVMID != 0:
		return fmt.Sprintf("%s\n\nThe pinned vmid %d was taken after the plan. Choose a free vmid, or remove the vmid "+
			"argument and let the scheduler choose one.", err, pinnedVMID)
	case attempt > 1:
		return fmt.Sprintf("%s\n\n(the last of %d attempts; each decided again after the one before left no VM: a VMID taken "+
			"meanwhile, a node going offline, or the error above)", err, attempt)
	}
	return err.Error()
}

// createGuest clones or creates the VM at the placement. For a clone, configuration follows
// in configureNew; a VM from scratch gets its whole configuration at once.
func (r *Resource) createGuest(ctx context.Context, g *NewGuest, p scheduler.Placement) error {
	c, m := r.Data.Client, g.M
	if m.Clone != nil {
		return c.CloneVM(ctx, g.CloneRequest(p))
	}
	params := maps.Clone(g.config)
	disk.AddDisks(m.Disks, nil, nil, params, p.Storage)
	m.AddEFIDisk(nil, params, p.Storage)
	m.DefaultFirmware(params, true)
	if err := m.CompleteCloudInit(nil, params, p.Storage); err != nil {
		return err
	}
	if kit.Known(m.Pool) {
		params["pool"] = m.Pool.ValueString()
	}
	params["tags"] = markTags(g.marked(params["tags"]), proxmox.ClaimTag)
	return c.CreateVM(ctx, p.Node, p.VMID, params)
}

// configureNew brings a fresh guest to the planned configuration and power state. The
// guest keeps its pending mark until it has started.
func (r *Resource) configureNew(ctx context.Context, g *NewGuest, p scheduler.Placement) error {
	c, m := r.Data.Client, g.M
	if m.Clone != nil {
		vm, err := c.GetVM(ctx, p.Node, p.VMID)
		if err != nil {
			return err
		}
		set := maps.Clone(g.config)
		if tags, ok := set["tags"]; ok {
			set["tags"] = markTags(tags, proxmox.PendingTag)
		} else {
			// Tags not configured are the template's: keep them, with the record mark when
			// this VM has a record, else without (the template's record is not the clone's).
			set["tags"] = g.marked(NormalizeTags(slices.DeleteFunc(kit.TagFields(vm.Config["tags"]), func(t string) bool { return t == proxmox.RecordTag })))
		}
		if m.Description.IsUnknown() {
			// Notes not configured are the template's, without the template's record.
			user, _ := records.Split(vm.Config["description"])
			set["description"] = records.Join(user, g.record)
		}
		m.AddEFIDisk(vm.Config, set, p.Storage)
		m.DefaultFirmware(set, false)
		if err := m.CompleteCloudInit(vm.Config, set, p.Storage); err != nil {
			return err
		}
		if err := disk.ApplyDisks(ctx, c, m.Disks, nil, vm.Config, set, p.Node, p.VMID, p.Storage); err != nil {
			return err
		}
		if err := c.UpdateVM(ctx, p.Node, p.VMID, changed(vm.Config, set), nil); err != nil {
			return err
		}
	}
	if m.Started.ValueBool() {
		if err := c.StartVM(ctx, p.Node, p.VMID); err != nil {
			return err
		}
		if err := r.setMark(ctx, p.Node, p.VMID, ""); err != nil {
			return err
		}
	}
	return r.addHA(ctx, m, p.VMID)
}

// marked is tags with the record mark when the guest gets a record.
func (g *NewGuest) marked(tags string) string {
	if g.record == nil {
		return tags
	}
	return withRecordMark(tags)
}

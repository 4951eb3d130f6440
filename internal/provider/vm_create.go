package provider

// The create path of qemuscheduler_vm around the provisioning loop: what a new VM is, the
// loop's view of PVE, and the calls that create the guest and bring it to its plan.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provision"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/records"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// newGuest is a VM to create: its plan, the PVE configuration it renders to and its clone
// source, each worked out once before the first attempt.
type newGuest struct {
	m      *vmModel
	config map[string]string
	src    *proxmox.VM
	// record is the placement record the guest gets, nil for none.
	record *records.Record
}

// vmClient is the provisioning loop's view of PVE for one planned VM.
type vmClient struct {
	r *vmResource
	g *newGuest
}

func (c *vmClient) Snapshot(ctx context.Context, fresh bool) (scheduler.Snapshot, error) {
	if fresh {
		return c.r.data.snapshotSince(ctx, time.Now())
	}
	return c.r.data.snapshot(ctx)
}

func (c *vmClient) NodeView(ctx context.Context, node string) (scheduler.Snapshot, error) {
	return c.r.data.nodeView(ctx, node)
}

func (c *vmClient) Create(ctx context.Context, p scheduler.Placement) error {
	err := c.r.createGuest(ctx, c.g, p)
	if err == nil && c.g.m.Clone != nil {
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
	return c.r.data.client.DeleteVM(ctx, node, vmid)
}

// setMark replaces the provider's mark among the VM's tags by mark ("" removes it), keeping
// the tags the VM has.
func (r *vmResource) setMark(ctx context.Context, node string, vmid int, mark string) error {
	vm, err := r.data.client.GetVM(ctx, node, vmid)
	if err != nil {
		return err
	}
	tags := markTags(vm.Config["tags"], mark)
	if tags == vm.Config["tags"] {
		return nil
	}
	return r.data.client.SetTags(ctx, node, vmid, tags)
}

func (c *vmClient) Find(ctx context.Context, vmid int) (provision.Guest, error) {
	vm, err := c.r.data.readVM(ctx, vmid, "")
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
func (r *vmResource) createGuest(ctx context.Context, g *newGuest, p scheduler.Placement) error {
	c, m := r.data.client, g.m
	if m.Clone != nil {
		return c.CloneVM(ctx, g.cloneRequest(p))
	}
	params := maps.Clone(g.config)
	addDisks(m.Disks, nil, nil, params, p.Storage)
	m.addEFIDisk(nil, params, p.Storage)
	m.defaultFirmware(params, true)
	if err := m.completeCloudInit(nil, params, p.Storage); err != nil {
		return err
	}
	if known(m.Pool) {
		params["pool"] = m.Pool.ValueString()
	}
	params["tags"] = markTags(g.marked(params["tags"]), proxmox.ClaimTag)
	return c.CreateVM(ctx, p.Node, p.VMID, params)
}

// configureNew brings a fresh guest to the planned configuration and power state. The
// guest keeps its pending mark until it has started.
func (r *vmResource) configureNew(ctx context.Context, g *newGuest, p scheduler.Placement) error {
	c, m := r.data.client, g.m
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
			set["tags"] = g.marked(normalizeTags(slices.DeleteFunc(tagFields(vm.Config["tags"]), func(t string) bool { return t == proxmox.RecordTag })))
		}
		if m.Description.IsUnknown() {
			// Notes not configured are the template's, without the template's record.
			user, _ := records.Split(vm.Config["description"])
			set["description"] = records.Join(user, g.record)
		}
		m.addEFIDisk(vm.Config, set, p.Storage)
		m.defaultFirmware(set, false)
		if err := m.completeCloudInit(vm.Config, set, p.Storage); err != nil {
			return err
		}
		if err := applyDisks(ctx, c, m.Disks, nil, vm.Config, set, p.Node, p.VMID, p.Storage); err != nil {
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
func (g *newGuest) marked(tags string) string {
	if g.record == nil {
		return tags
	}
	return withRecordMark(tags)
}

package vmresource

// The in-place update of qemuscheduler_vm: migration, configuration, devices and power state.

import (
	"context"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/disk"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
)

// update brings the VM from the state's configuration old to the plan's want.
func (r *Resource) update(ctx context.Context, plan, state *Model, want, old map[string]string, node string, vmid int) error {
	c := r.Data.Client
	// The state's node may be the pin of a VM the HA manager runs elsewhere.
	vm, err := r.Data.ReadVM(ctx, vmid, node)
	if err != nil {
		return err
	}
	node = vm.Node
	syncRecord(old, want, vm.Config)
	if err := r.haBefore(ctx, plan, state, vmid); err != nil {
		return err
	}
	if target := plan.Node.ValueString(); kit.Known(plan.Node) && target != node && !PinKept(plan, state) {
		if err := r.migrate(ctx, plan, state, vm, target); err != nil {
			return err
		}
		node = target
	}
	// A VM never started keeps counting as pending until it is.
	pending := hasTag(vm.Config["tags"], proxmox.PendingTag)
	if tags, ok := want["tags"]; ok && pending {
		want["tags"] = markTags(tags, proxmox.PendingTag)
	}
	plan.AddEFIDisk(vm.Config, want, state.Storage.ValueString())
	if err := plan.CompleteCloudInit(vm.Config, want, state.Storage.ValueString()); err != nil {
		return err
	}
	if err := disk.ApplyDisks(ctx, c, plan.Disks, state.Disks, vm.Config, want, node, vmid, state.Storage.ValueString()); err != nil {
		return err
	}
	var del []string
	for k := range old {
		if _, keep := want[k]; !keep {
			if _, present := vm.Config[k]; present {
				del = append(del, k)
			}
		}
	}
	del = append(del, disk.RemovedDisks(state.Disks, plan.Disks)...)
	if _, has := vm.Config["efidisk0"]; has && state.EFIDisk != nil && plan.EFIDisk == nil {
		del = append(del, "efidisk0")
	}
	// Only what the plan changes is written: unchanged attributes keep whatever PVE has (an absent
	// balloon must not become an explicit 0).
	if err := c.UpdateVM(ctx, node, vmid, changed(old, want), del); err != nil {
		return err
	}
	if err := r.haAfter(ctx, plan, state, vmid); err != nil {
		return err
	}
	running := vm.Status == "running"
	switch wantRun := plan.Started.ValueBool(); {
	case wantRun && !running:
		if err := r.setPower(ctx, plan.HA, node, vmid, true); err != nil || !pending {
			return err
		}
		return r.setMark(ctx, node, vmid, "")
	case !wantRun && running:
		return r.setPower(ctx, plan.HA, node, vmid, false)
	}
	return nil
}

package vmresource

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// checkNodeCPUs fails the plan of an existing VM whose vCPUs grow beyond the CPUs of its node
// (current): PVE takes the new size (pending on a running VM) and then refuses every start
// (qemu-server: "MAX 8 vcpus allowed per VM on this node"). Only a change of cores or sockets
// is checked: a VM made that way outside Terraform fails no plan.
func checkNodeCPUs(snap scheduler.Snapshot, current string, vcpus int, plan, state *Model, diags *diag.Diagnostics) {
	if plan.Cores.Equal(state.Cores) && plan.Sockets.Equal(state.Sockets) {
		return
	}
	for _, n := range snap.Nodes {
		if n.Name == current && n.MaxCPU > 0 && vcpus > n.MaxCPU {
			diags.AddAttributeError(path.Root("cores"), "Too many vCPUs for the node",
				fmt.Sprintf("cores x sockets = %d x %d = %d vCPUs, but node %s has %d CPUs: Proxmox VE would take the change and then refuse "+
					"every start of the VM (MAX %d vcpus allowed per VM on this node). Use at most %d vCPUs, or move the VM to a larger node "+
					"(pin node). %s", plan.Cores.ValueInt64(), plan.Sockets.ValueInt64(), vcpus, n.Name, n.MaxCPU, n.MaxCPU, n.MaxCPU, changeset.DestroyAnyway))
		}
	}
}

// WarnPendingSizes warns that PVE keeps a running VM's new cores, sockets, memory or CPU type
// pending until its next start: without cpu and memory in its hotplug option (PVE's default is
// network,disk,usb) none of them changes live, cores and sockets never do, and until then the
// VM runs, and counts on its node, with the old size. The balloon changes live.
func WarnPendingSizes(state, plan *Model, running bool, diags *diag.Diagnostics) {
	if !running {
		return
	}
	for _, c := range []struct {
		name, also string
		was, will  attr.Value
	}{
		{"cores", "", state.Cores, plan.Cores},
		{"sockets", "", state.Sockets, plan.Sockets},
		{"memory", " (unless its hotplug option includes memory, with NUMA on)", state.Memory, plan.Memory},
		{"cpu_type", "", state.CPUType, plan.CPUType},
	} {
		if c.will.IsUnknown() || c.will.IsNull() || c.was.IsNull() || c.was.Equal(c.will) {
			continue
		}
		diags.AddAttributeWarning(path.Root(c.name), "Takes effect at the next start",
			fmt.Sprintf("The VM is running: Proxmox VE keeps %s = %s pending%s, and the VM runs and counts on its node with %s until it is next started (%s).",
				c.name, c.will, c.also, c.was, kit.RestartHint))
	}
}

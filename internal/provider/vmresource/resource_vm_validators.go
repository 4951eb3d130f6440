package vmresource

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
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

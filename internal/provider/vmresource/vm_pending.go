package vmresource

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
)

// warnPendingSizes warns that PVE keeps a running VM's new cores, sockets, memory or CPU type
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

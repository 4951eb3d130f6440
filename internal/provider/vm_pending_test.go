package provider

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// Changing cores, sockets, memory or cpu_type of a running VM warns that PVE keeps the change
// pending until the next start (its default hotplug is network,disk,usb); a stopped VM, an
// unchanged or unknown value and the balloon (applied live) do not warn.
func TestWarnPendingSizes(t *testing.T) {
	state := vmresource.Model{Cores: types.Int64Value(8), Sockets: types.Int64Value(1), Memory: types.Int64Value(16384),
		CPUType: types.StringValue(""), Balloon: types.Int64Value(0)}
	plan := state
	plan.Cores, plan.Memory, plan.Balloon = types.Int64Value(2), types.Int64Value(4096), types.Int64Value(1024)
	plan.Sockets = types.Int64Unknown()
	var diags diag.Diagnostics
	vmresource.WarnPendingSizes(&state, &plan, false, &diags)
	if len(diags) > 0 {
		t.Fatalf("stopped VM: %v", diags)
	}
	vmresource.WarnPendingSizes(&state, &plan, true, &diags)
	var paths []string
	for _, d := range diags {
		paths = append(paths, d.(diag.DiagnosticWithPath).Path().String())
	}
	if len(paths) != 2 || paths[0] != "cores" || paths[1] != "memory" {
		t.Fatalf("running VM: warnings on %v, want cores and memory: %v", paths, diags)
	}
	if got := diags[1].Detail(); !strings.Contains(got, "16384") || !strings.Contains(got, "4096") {
		t.Errorf("the memory warning names neither the size the VM keeps until then nor the new one: %q", got)
	}
}

// A running VM given more cores and memory: PVE keeps both pending (its default hotplug is
// network,disk,usb), and the plan says so on each attribute, instead of an apply that looks
// done while the VM runs on with its old size.
func TestAccVMResizeRunningWarnsPending(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	vm := func(cores, memory int) string {
		return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name   = "web-1"
  cores  = %d
  memory = %d
}`, cores, memory))
	}
	log := &warningLog{}
	runLoggingWarnings(t, log,
		resource.TestStep{Config: vm(1, 1024), Check: log.lacks("next start")},
		resource.TestStep{Config: vm(2, 2048), Check: resource.ComposeTestCheckFunc(
			log.has("Takes effect at the next start", "cores = 2 pending", "with 1 until it is next started"),
			log.has("Takes effect at the next start", "memory = 2048 pending", "with 1024 until it is next started"),
			guestCheck(sim, func(g pvesim.GuestState) error {
				if g.Pending["cores"] != "2" || g.Pending["memory"] != "2048" {
					return fmt.Errorf("pending %v, want cores 2 and memory 2048", g.Pending)
				}
				return nil
			}))},
	)
}

package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// ha.auto_rebalance to PVE's flag and back: PVE 9.2's value wins (drift shows), unset is its
// default (on); before 9.2 there is no flag and the block keeps what it had.
func TestHAAutoRebalanceMapping(t *testing.T) {
	on, off, null, unknown := types.BoolValue(true), types.BoolValue(false), types.BoolNull(), types.BoolUnknown()
	for _, tt := range []struct {
		flag        proxmox.Flag
		rebalancing bool
		prior, want types.Bool
	}{
		{proxmox.FlagUnset, true, null, on},
		{proxmox.FlagUnset, true, off, on}, // unset in PVE: its default
		{proxmox.FlagOff, true, on, off},   // turned off in PVE: drift
		{proxmox.FlagOn, true, off, on},
		{proxmox.FlagUnset, false, off, off}, // PVE 8: what the configuration set
		{proxmox.FlagUnset, false, null, null},
		{proxmox.FlagUnset, false, unknown, null},
	} {
		if got := vmresource.AutoRebalanceOf(tt.flag, tt.rebalancing, tt.prior); !got.Equal(tt.want) {
			t.Errorf("flag %v, rebalancing %t, prior %v: %v, want %v", tt.flag, tt.rebalancing, tt.prior, got, tt.want)
		}
	}
	for _, tt := range []struct {
		value types.Bool
		want  proxmox.Flag
	}{{on, proxmox.FlagOn}, {off, proxmox.FlagOff}, {null, proxmox.FlagUnset}, {unknown, proxmox.FlagUnset}} {
		h := haBlockOf("started", 1, 1, types.StringNull())
		h.AutoRebalance = tt.value
		if got := h.Settings().AutoRebalance; got != tt.want {
			t.Errorf("auto_rebalance %v sends %v, want %v", tt.value, got, tt.want)
		}
	}
	// An import reads PVE's flag on 9.2, and none before.
	pve := &proxmox.HASettings{State: "started", MaxRestart: 1, MaxRelocate: 1, AutoRebalance: proxmox.FlagOff}
	if h := vmresource.HAFromSettings(pve, nil, true); !h.AutoRebalance.Equal(off) {
		t.Errorf("imported from PVE 9.2: %v, want false", h.AutoRebalance)
	}
	if h := vmresource.HAFromSettings(&proxmox.HASettings{State: "started"}, nil, false); !h.AutoRebalance.IsNull() {
		t.Errorf("imported from PVE 8: %v, want null", h.AutoRebalance)
	}
}

// flagIs checks vm:<vmid>'s auto-rebalance flag as resources.cfg has it.
func flagIs(t *testing.T, sim *pvesim.Server, vmid int, want proxmox.Flag) resource.TestCheckFunc {
	return func(*terraform.State) error {
		s := haResource(t, sim, vmid)
		if s == nil || s.AutoRebalance != want {
			return fmt.Errorf("HA resource of VM %d: %+v, want auto-rebalance %v", vmid, s, want)
		}
		return nil
	}
}

// autoRebalanceVM is VM 150 on pve2 with an ha block holding extra.
func autoRebalanceVM(env *accEnv, extra string) string {
	return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name = "ha-1"
  vmid = 150
  node = "pve2"
  clone {
    source_vmid = 9000
  }
  ha {
    %s
  }
}`, extra))
}

var emptyPlan = resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}

// PVE 9.2: unset, the flag is left to PVE (on) and shown; set, changed, and unset again, which
// leaves PVE's value; a change in PVE to an unset flag plans nothing; an import reads it.
func TestAccVMHAAutoRebalance(t *testing.T) {
	c := labCluster()
	c.HARules = []pvesim.HARuleSpec{} // PVE 9.2
	env, sim := simEnv(t, c)
	const attr = "ha.auto_rebalance"
	runSteps(t,
		resource.TestStep{Config: autoRebalanceVM(env, ""), Check: resource.ComposeTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, attr, "true"), flagIs(t, sim, 150, proxmox.FlagUnset))},
		resource.TestStep{Config: autoRebalanceVM(env, ""), ConfigPlanChecks: emptyPlan},
		resource.TestStep{Config: autoRebalanceVM(env, "auto_rebalance = false"), Check: resource.ComposeTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, attr, "false"), flagIs(t, sim, 150, proxmox.FlagOff))},
		resource.TestStep{Config: autoRebalanceVM(env, "auto_rebalance = false"), ConfigPlanChecks: emptyPlan},
		resource.TestStep{Config: autoRebalanceVM(env, "auto_rebalance = true"), Check: resource.ComposeTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, attr, "true"), flagIs(t, sim, 150, proxmox.FlagOn))},
		// Unset: no change, whatever PVE has.
		resource.TestStep{Config: autoRebalanceVM(env, ""), ConfigPlanChecks: emptyPlan, Check: resource.ComposeTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, attr, "true"), flagIs(t, sim, 150, proxmox.FlagOn))},
		resource.TestStep{
			PreConfig: func() {
				must(t, simClient(t, sim).UpdateHAResource(context.Background(), 150,
					proxmox.HASettings{State: "started", MaxRestart: 1, MaxRelocate: 1, AutoRebalance: proxmox.FlagOff}))
			},
			Config: autoRebalanceVM(env, ""), ConfigPlanChecks: emptyPlan, Check: resource.ComposeTestCheckFunc(
				resource.TestCheckResourceAttr(vmAddr, attr, "false"), flagIs(t, sim, 150, proxmox.FlagOff))},
		// Set to what PVE has: nothing to do.
		resource.TestStep{Config: autoRebalanceVM(env, "auto_rebalance = false"), ConfigPlanChecks: emptyPlan},
		resource.TestStep{Config: autoRebalanceVM(env, "auto_rebalance = false"), ResourceName: vmAddr, ImportState: true, ImportStateId: "150",
			ImportStateCheck: func(states []*terraform.InstanceState) error {
				if got := states[0].Attributes[attr]; got != "false" {
					return fmt.Errorf("imported %s = %q, want false", attr, got)
				}
				return nil
			}},
	)
}

// PVE 8 has no flag: unset, it is null, and an update of the block plans it so (not known after
// apply); set, it is left out of the requests (PVE 8 would refuse them) and the plan warns,
// naming the attribute; the state keeps the configured value, with no change planned after;
// an import has none.
func TestAccVMHAAutoRebalancePVE8(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	log := &warningLog{}
	const attr = "ha.auto_rebalance"
	runLoggingWarnings(t, log,
		resource.TestStep{Config: autoRebalanceVM(env, ""), Check: resource.TestCheckNoResourceAttr(vmAddr, attr)},
		resource.TestStep{Config: autoRebalanceVM(env, `comment = "web"`), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ha").AtMapKey("auto_rebalance"), knownvalue.Null())}},
			Check: resource.ComposeTestCheckFunc(resource.TestCheckNoResourceAttr(vmAddr, attr), log.lacks("ha.auto_rebalance needs"))},
		resource.TestStep{Config: autoRebalanceVM(env, "auto_rebalance = false"), Check: resource.ComposeTestCheckFunc(
			log.has("ha.auto_rebalance needs Proxmox VE 9.2", "Proxmox VE 8.2", "Remove ha.auto_rebalance"),
			resource.TestCheckResourceAttr(vmAddr, attr, "false"),
			flagIs(t, sim, 150, proxmox.FlagUnset),
		)},
		resource.TestStep{Config: autoRebalanceVM(env, "auto_rebalance = false"), ConfigPlanChecks: emptyPlan},
		resource.TestStep{Config: autoRebalanceVM(env, "auto_rebalance = true"), Check: resource.ComposeTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, attr, "true"), flagIs(t, sim, 150, proxmox.FlagUnset))},
		resource.TestStep{Config: autoRebalanceVM(env, ""), ConfigPlanChecks: emptyPlan},
		resource.TestStep{Config: autoRebalanceVM(env, ""), ResourceName: vmAddr, ImportState: true, ImportStateId: "150",
			ImportStateCheck: func(states []*terraform.InstanceState) error {
				if got, set := states[0].Attributes[attr]; set {
					return fmt.Errorf("imported %s = %q from PVE 8, want null", attr, got)
				}
				return nil
			}},
	)
}

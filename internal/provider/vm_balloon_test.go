package provider

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
)

// A VM without balloon has PVE's default, the balloon device on at the VM's memory: the state
// holds no balloon (not 0, which means no device), so a later balloon = 0 is a change that
// removes the device, balloon = 512 sets it, and removing the attribute keeps PVE's value.
func TestAccVMBalloonDefaultIsNotZero(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	vm := func(balloon string) string {
		return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name   = "web-1"
  memory = 1024
  %s
}`, balloon))
	}
	runSteps(t,
		resource.TestStep{Config: vm(""), Check: resource.ComposeTestCheckFunc(
			resource.TestCheckNoResourceAttr(vmAddr, "balloon"),
			guestCheck(sim, expectConfig(map[string]string{"balloon": ""})))},
		resource.TestStep{Config: vm(""), PlanOnly: true},
		resource.TestStep{Config: vm("balloon = 0"), Check: resource.ComposeTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, "balloon", "0"),
			guestCheck(sim, expectConfig(map[string]string{"balloon": "0"})))},
		resource.TestStep{Config: vm("balloon = 512"), Check: guestCheck(sim, expectConfig(map[string]string{"balloon": "512"}))},
		resource.TestStep{Config: vm(""), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check: guestCheck(sim, expectConfig(map[string]string{"balloon": "512"}))},
		// An import reads the default as no balloon too, so a generated configuration does not
		// write balloon = 0 (no device) for it.
		resource.TestStep{Config: vm(""), ResourceName: vmAddr, ImportState: true, ImportStateVerify: true,
			ImportStateVerifyIgnore: []string{"placement_summary", "storage", "timeouts", "%"}},
	)
}

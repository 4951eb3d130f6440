package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// A node that fails takes its VMs out of reach (PVE answers 595 for them), not out of the
// configuration: the refresh keeps their last state with a warning, so that the rest of the
// configuration still plans and applies (a new VM is placed elsewhere) and the plan is empty;
// its destroy fails saying so; once the node is back, the VM reads as before. The plan warns
// that the VM's node fails its rules (offline), without taking the VM for one that grows.
func TestAccVMOnAnOfflineNodeKeepsItsState(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	vm := func(name, node string) string {
		return "resource \"qemuscheduler_vm\" \"" + name + "\" {\n  name = \"" + name + "\"\n  node = \"" + node + "\"\n}\n"
	}
	two := env.config(vm("a", "pve2"), vm("b", "pve3"))
	three := two + "resource \"qemuscheduler_vm\" \"c\" {\n  name = \"c\"\n}\n"
	log := &warningLog{}
	runLoggingWarnings(t, log,
		resource.TestStep{Config: two},
		resource.TestStep{
			PreConfig: func() { must(t, sim.SetNodeOnline("pve2", false)) },
			Config:    three,
			Check: resource.ComposeTestCheckFunc(
				resource.TestCheckResourceAttr("qemuscheduler_vm.a", "node", "pve2"),
				resource.TestCheckResourceAttr("qemuscheduler_vm.c", "node", "pve3"),
				log.has("VM 101 cannot be read", "Its node pve2 is offline or unreachable, so the state keeps what was last read"),
				log.has("VM 101 no longer fits its node", "a on pve2: NodeOnline: node is offline"),
				// Its row in /cluster/resources has no figures while the node is down: that is
				// no growth, and the warning does not count it as one.
				log.lacks("The figures count the growth"),
			),
		},
		resource.TestStep{Config: three, PlanOnly: true},
		// Its destroy fails before changing anything, and says what to do.
		resource.TestStep{Config: env.config(vm("b", "pve3")) + "resource \"qemuscheduler_vm\" \"c\" {\n  name = \"c\"\n}\n",
			ExpectError: wrapped(`(?s)Cannot delete VM 101.*HTTP 595.*nothing was changed. Destroy again once the node is back.*terraform state rm \(tofu state rm under OpenTofu\)`)},
		resource.TestStep{PreConfig: func() { must(t, sim.SetNodeOnline("pve2", true)) }, Config: three, PlanOnly: true},
	)
}

package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// User mistakes found trying the provider as a new user: each is a plan error that names the
// attribute and the fix, before anything is created.
func TestAccUserMistakesFailThePlan(t *testing.T) {
	env, _ := simEnv(t, labCluster()) // pve1-pve4 have 8 CPUs each
	for _, tc := range []struct{ name, body, want string }{
		// A typo in a pinned node is not a full cluster: no "make room".
		{"pinned node not in the cluster", `node = "pve9"`,
			`Node does not exist.*node = "pve9": the cluster has no such node \(nodes: pve1, pve2, pve3, pve4\)`},
		// PVE creates the VM and then refuses to start it ("MAX 8 vcpus allowed per VM on this
		// node"), whatever the overcommit ratio.
		{"more vCPUs than any node has CPUs", "cores = 8\n  sockets = 2",
			`3 node\(s\) have fewer CPUs than the VM's vCPUs.*CPUOvercommit: the VM's 16 vCPUs exceed the node's 8 CPUs`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runParallel(t, resource.TestStep{
				Config:      env.config("resource \"qemuscheduler_vm\" \"v\" {\n  name = \"v\"\n  " + tc.body + "\n}\n"),
				PlanOnly:    true,
				ExpectError: wrapped(`(?s)` + tc.want),
			})
		})
	}
}

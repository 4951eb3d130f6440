package provider

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// User mistakes found trying the provider as a new user: each is a plan error that names the
// attribute and the fix, before anything is created.
func TestAccUserMistakesFailThePlan(t *testing.T) {
	env, _ := simEnv(t, labCluster()) // pve1-pve4 have 8 CPUs each
	for _, tc := range []struct{ name, body, want string }{
		// A typo in a pinned node is not a full cluster: no "make room".
		{"pinned node not in the cluster", `node = "pve9"`,
			`Node does not exist.*node = "pve9": the cluster has no such node \(nodes: pve1, pve2, pve3, pve4\).*terraform destroy -refresh=false`},
		// PVE creates the VM and then refuses to start it ("MAX 8 vcpus allowed per VM on this
		// node"), whatever the overcommit ratio.
		// The cluster's state, not the configuration, refuses it: terraform destroy, which plans
		// the configuration first (say with a deposed create_before_destroy object holding the
		// id), is told how to get past it.
		{"pinned vmid in use", "vmid = 100",
			`Invalid vmid.*VMID 100 is already in use; choose a free id or remove the pin.*terraform destroy -refresh=false`},
		// count without ${count.index} in the name: the plan's new VMs are told apart by name, so
		// two of one name would be checked as one (count = 3 on room for 2 planned "3 to add").
		{"one name for several new VMs", "count = 2",
			`Duplicate VM name.*name = "v" is the name of another new VM of this plan.*name = "v-\$\{count.index\}".*terraform destroy -refresh=false`},
		// A template deleted since: a destroy's plan of a half-applied count's missing VMs meets it too.
		{"clone source gone", "clone {\n    source_vmid = 9999\n  }",
			`Cannot read the clone source.*clone.source_vmid = 9999: .*VM 9999 does not exist in the cluster.*terraform destroy -refresh=false`},
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

// Terraform shows a plan error on the resource being planned; when the plan's set fails on
// another of its VMs, the error says why it names that one. A VM that fails alone, or a data
// source, keeps the plain error.
func TestPlanErrorNamesThePlannedVM(t *testing.T) {
	ue := &scheduler.UnschedulableError{Request: "w-7", Message: "0/2 nodes are available: 2 node(s) exceeded cpu overcommit ratio 1.5"}
	set := &scheduler.SetError{UnschedulableError: ue, Placed: 6, Total: 7, Unplaced: []string{"w-7"}}
	for _, tc := range []struct {
		name, planned string
		err           error
		prefix        bool
	}{
		{"another VM of the set left out", "w-5", set, true},
		{"the planned VM itself left out", "w-7", set, false},
		{"a data source", "", set, false},
		{"a VM that fits nowhere alone", "w-5", ue, false},
		{"a VM of the set that fits nowhere alone", "w-5", &scheduler.SetError{UnschedulableError: ue, Placed: 6, Total: 7, Unplaced: []string{"w-7"}, Alone: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var diags diag.Diagnostics
			kit.AddPlanError(&diags, tc.err, tc.planned, changeset.DestroyHint(changeset.ReduceNewVMs))
			// The header names the VM of the address Terraform shows the error on.
			header := `No placement for "w-7"`
			if tc.prefix {
				header = `No placement for "w-5"`
			}
			if len(diags) != 1 || diags[0].Summary() != header {
				t.Fatalf("diagnostics %v, want one error %s", diags, header)
			}
			detail := diags[0].Detail()
			want := `"w-5" is placed together with the plan's other new VMs, all or nothing, and they do not all fit; below, why "w-7" does not.`
			if got := strings.HasPrefix(detail, want); got != tc.prefix {
				t.Errorf("detail %q: starts with the set sentence %v, want %v", detail, got, tc.prefix)
			}
			if !strings.Contains(detail, ue.Message) || !strings.Contains(detail, "terraform destroy -refresh=false") {
				t.Errorf("detail %q lacks the explanation or the destroy hint", detail)
			}
			// Only a set refused as a set is told to shrink or make room.
			se, isSet := tc.err.(*scheduler.SetError)
			if shrink := isSet && !se.Alone; shrink != strings.Contains(detail, "make room") {
				t.Errorf("detail %q: says to make room: %v, want %v", detail, !shrink, shrink)
			}
		})
	}
}

// Importing a template is refused at import, naming what to do instead: managed as a VM, the
// next apply would try to start it (PVE: "you can't start a vm if it's a template") and
// terraform destroy would remove the base the clones are made from.
func TestAccVMImportOfATemplateIsRefused(t *testing.T) {
	env, sim := simEnv(t, labCluster()) // VM 9000 is a template
	runParallel(t, resource.TestStep{
		Config:        env.config(`resource "qemuscheduler_vm" "web" { name = "debian-12" }`),
		ResourceName:  vmAddr,
		ImportState:   true,
		ImportStateId: "9000",
		ExpectError:   wrapped(`(?s)Cannot import VM 9000.*VM 9000 is a template.*clone \{ source_vmid = 9000 \}`),
	})
	if g, ok := sim.Guest(9000); !ok || g.Config["template"] != "1" {
		t.Errorf("template 9000 changed: %+v", g)
	}
}

// Growing a VM beyond its node's CPUs is a plan error on cores: PVE takes the new size (pending
// on a running VM) and then refuses every start ("MAX 8 vcpus allowed per VM on this node"),
// so the apply would leave a VM that fails at its next reboot. The VM is untouched.
func TestAccVMGrowthBeyondTheNodesCPUsFailsThePlan(t *testing.T) {
	env, sim := simEnv(t, labCluster()) // 8 CPUs per node
	vm := func(cores int) string {
		return env.config(fmt.Sprintf("resource \"qemuscheduler_vm\" \"web\" {\n  name  = \"web-1\"\n  cores = %d\n}\n", cores))
	}
	runSteps(t,
		resource.TestStep{Config: vm(2)},
		resource.TestStep{Config: vm(16), ExpectError: wrapped(`(?s)Too many vCPUs for the node.*cores x sockets = 16 x 1 = 16 vCPUs, but node pve\d has 8 CPUs.*MAX 8 vcpus allowed per VM on this node.*at most 8`)},
		resource.TestStep{Config: vm(8), Check: guestCheck(sim, expectConfig(map[string]string{"cores": "8"}))},
	)
}

// Three new VMs of one name fail the plan with one "Duplicate VM name" error, not one per
// VM after the first: the CLI printed the same error twice for count = 3.
func TestAccDuplicateNameErrorOnce(t *testing.T) {
	env, _ := simEnv(t, labCluster())
	cli := newCLIDirRequiring(t, "", env.config("resource \"qemuscheduler_vm\" \"v\" {\n  count = 3\n  name  = \"v\"\n}\n"))
	out, err := cli.run("plan", "-input=false")
	if err == nil {
		t.Fatalf("the plan of three VMs named v passed:\n%s", out)
	}
	if n := strings.Count(out, "Error: Duplicate VM name"); n != 1 {
		t.Errorf("the plan shows %d Duplicate VM name errors, want 1:\n%s", n, out)
	}
}

package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
)

// These tests run on the simulator and on a real lab cluster alike: they assume no cluster
// shape (no node names, no VMIDs but their own range, no storage names), create stopped VMs
// only, check PVE's own view through the API, and check that the destroy leaves no guest.

// labRange is the VMID range the lab-safe tests create in: a shared lab's guests are elsewhere,
// and the scheduler skips the ids of this range that are taken.
const labRange = "990000-990999"

// templateEnv names the template a lab offers for the clone test (its VMID).
const templateEnv = "QEMUSCHEDULER_ACC_TEMPLATE_VMID"

// labVM follows the VM of vmAddr through the steps: its VMID, for the checks and the destroy
// check.
type labVM struct {
	c    *proxmox.Client
	vmid int
}

func newLabVM(t *testing.T, env *accEnv) *labVM {
	return &labVM{c: env.client(t)}
}

// check asserts that PVE has the VM where the state says, with status and config values that
// match want (regular expressions, anchored).
func (v *labVM) check(status string, want map[string]string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		vmid, stateNode, err := stateVM(s)
		if err != nil {
			return err
		}
		v.vmid = vmid
		ctx := context.Background()
		node, err := v.c.LocateVM(ctx, vmid)
		if err != nil {
			return err
		}
		if node != stateNode {
			return fmt.Errorf("state says node %s, PVE says %s", stateNode, node)
		}
		vm, err := v.c.GetVM(ctx, node, vmid)
		if err != nil {
			return err
		}
		if vm.Status != status {
			return fmt.Errorf("VM %d is %s, want %s", vmid, vm.Status, status)
		}
		for k, pattern := range want {
			if !regexp.MustCompile("^(?:" + pattern + ")$").MatchString(vm.Config[k]) {
				return fmt.Errorf("VM %d config %s = %q, want %q", vmid, k, vm.Config[k], pattern)
			}
		}
		return nil
	}
}

// gone is the destroy check: the VM the steps created is not in the cluster.
func (v *labVM) gone(*terraform.State) error {
	if v.vmid == 0 {
		return errors.New("no step recorded the VM's VMID")
	}
	node, err := v.c.LocateVM(context.Background(), v.vmid)
	switch {
	case errors.Is(err, proxmox.ErrNotFound):
		return nil
	case err != nil:
		return err
	}
	return fmt.Errorf("VM %d is still in the cluster, on %s", v.vmid, node)
}

// A VM from scratch: created in the range, updated in place (memory, a bigger disk), imported
// as it is, then destroyed without a trace.
func TestAccVMLifecycleOnAnyCluster(t *testing.T) {
	env := newAccEnv(t, labCluster())
	v := newLabVM(t, env)
	vm := func(memory, size int) string {
		return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name        = "qemuscheduler-acc-lifecycle"
  started     = false
  memory      = %d
  tags        = ["qemuscheduler-acc"]
  annotations = { "vmid.qemu-scheduler/range" = %q }
  disk {
    slot = "scsi0"
    size = %d
  }
}`, memory, labRange, size))
	}
	runCase(t, resource.TestCase{
		Steps: []resource.TestStep{
			{Config: vm(512, 1), Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestMatchResourceAttr(vmAddr, "vmid", regexp.MustCompile(`^990\d{3}$`)),
				v.check("stopped", map[string]string{"name": "qemuscheduler-acc-lifecycle", "memory": "512",
					"tags": `(.*;)?qemuscheduler-acc(;.*)?`, "scsi0": `[\w-]+:[^,]+,(.*,)?size=1G(,.*)?`}),
			)},
			{Config: vm(1024, 2), Check: v.check("stopped", map[string]string{"memory": "1024", "scsi0": `[\w-]+:[^,]+,(.*,)?size=2G(,.*)?`})},
			{ResourceName: vmAddr, ImportState: true, ImportStateVerify: true,
				ImportStateIdFunc: func(s *terraform.State) (string, error) {
					vmid, node, err := stateVM(s)
					return fmt.Sprintf("%s/%d", node, vmid), err
				},
				ImportStateVerifyIgnore: []string{"placement_summary"}}, // "imported": no decision was taken
		},
		CheckDestroy: v.gone,
	})
}

// A full clone of the lab's template (QEMUSCHEDULER_ACC_TEMPLATE_VMID; the simulator's is
// 9000), stopped, then destroyed without a trace.
func TestAccVMCloneOnAnyCluster(t *testing.T) {
	env := newAccEnv(t, labCluster())
	template := "9000"
	if env.sim == nil {
		template = os.Getenv(templateEnv)
		if template == "" {
			t.Skipf("set %s to the VMID of a template of the lab cluster to clone", templateEnv)
		}
	}
	v := newLabVM(t, env)
	runCase(t, resource.TestCase{
		Steps: []resource.TestStep{{Config: env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name        = "qemuscheduler-acc-clone"
  started     = false
  memory      = 512
  annotations = { "vmid.qemu-scheduler/range" = %q }
  clone {
    source_vmid = %s
  }
}`, labRange, template)), Check: v.check("stopped", map[string]string{"name": "qemuscheduler-acc-clone", "memory": "512"})}},
		CheckDestroy: v.gone,
	})
}

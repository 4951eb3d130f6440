package provider

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// planError matches the plan error summary shown on the configuration line src (so on the
// attribute the diagnostic names), with detail.
func planError(summary, src, detail string) *regexp.Regexp {
	return wrapped(`(?s)Error: ` + regexp.QuoteMeta(summary) + `.*\d+: ` + regexp.QuoteMeta(src) + `.*` + regexp.QuoteMeta(detail))
}

// inputCase is a configuration body that must fail the plan with err.
type inputCase struct {
	body string
	err  *regexp.Regexp
}

// planFails plans each body inside block (a %s format) on env's cluster, one step each.
func planFails(t *testing.T, env *accEnv, block string, cases []inputCase) {
	t.Helper()
	var steps []resource.TestStep
	for _, c := range cases {
		steps = append(steps, resource.TestStep{Config: env.config(fmt.Sprintf(block, c.body)), PlanOnly: true, ExpectError: c.err})
	}
	runSteps(t, steps...)
}

const vmBlock = "resource \"qemuscheduler_vm\" \"web\" {\n  name = \"web-1\"\n%s\n}\n"

func notWholeError(attr, value, below, above string) *regexp.Regexp {
	return planError("Not a whole number", attr+" = "+value, fmt.Sprintf("%s = %s: must be a whole number, e.g. %s or %s.", attr, value, below, above))
}

// A fractional number in any integer attribute of the resource fails the plan on that
// attribute, at any depth of blocks.
func TestAccVMInputWholeNumbers(t *testing.T) {
	env := newAccEnv(t, labCluster())
	planFails(t, env, vmBlock, []inputCase{
		{"cores = 2.5", notWholeError("cores", "2.5", "2", "3")},
		{"memory = 1024.5", notWholeError("memory", "1024.5", "1024", "1025")},
		{"vmid = 150.5", notWholeError("vmid", "150.5", "150", "151")},
		{"disk {\n  slot = \"scsi0\"\n  size = 8.5\n}", planError("Not a whole number", "size = 8.5", "disk[0].size = 8.5: must be a whole number, e.g. 8 or 9.")},
		{"clone {\n  source_vmid = 9000.5\n}", planError("Not a whole number", "source_vmid = 9000.5", "clone.source_vmid = 9000.5: must be a whole number, e.g. 9000 or 9001.")},
		{"network {\n  slot = \"net0\"\n  vlan = 10.5\n}", planError("Not a whole number", "vlan = 10.5", "network[0].vlan = 10.5: must be a whole number, e.g. 10 or 11.")},
		{"startup {\n  order = 0.5\n}", planError("Not a whole number", "order = 0.5", "startup.order = 0.5: must be a whole number, e.g. 0 or 1.")},
		{"plugin_config {\n  score {\n    name   = \"NodeResource\"\n    weight = 2.5\n  }\n}", planError("Not a whole number", "weight = 2.5", "plugin_config.score[0].weight = 2.5: must be a whole number, e.g. 2 or 3.")},
		{"sockets = 1e30", planError("Number out of range", "sockets = 1e30", "sockets = 1e+30 does not fit a 64-bit integer")},
	})
}

// The data sources answer a fractional number, and a name PVE would refuse, as the resource
// does.
func TestAccPlacementInputs(t *testing.T) {
	env := newAccEnv(t, labCluster())
	const placementBlock = "data \"qemuscheduler_placement\" \"p\" {\n%s\n}\n"
	planFails(t, env, placementBlock, []inputCase{
		{"name = \"a\"\nmemory = 1024.5", notWholeError("memory", "1024.5", "1024", "1025")},
		{"name = \"a\"\ndisk_gib = 0.5", notWholeError("disk_gib", "0.5", "0", "1")},
		{"name = \"web_1\"", planError("Invalid DNS name", `name = "web_1"`, `name: "web_1": '_' is not allowed: a DNS name has letters, digits, '-' and '.'.`)},
		{"name = \"\"", planError("Invalid DNS name", `name = ""`, `name: "": empty; give a name such as web-1.`)},
		{"names = [\"web-1\", \"web..lab\"]", planError("Invalid DNS name", `names = ["web-1", "web..lab"]`, `names[1]: "web..lab": label 2 is empty: a DNS name has no leading, trailing or doubled dots.`)},
		{"names = [\"web-1\", \"\"]", planError("Invalid DNS name", `names = ["web-1", ""]`, `names[1]: "": empty`)},
	})
	planFails(t, env, "data \"qemuscheduler_rebalance\" \"r\" {\n  tags = [\"rebal\"]\n%s\n}\n", []inputCase{
		{"max_moves = 2.5", notWholeError("max_moves", "2.5", "2", "3")},
	})
}

// The resource refuses at plan the names PVE's dns-name format refuses and labels over DNS's
// 63 characters (which PVE stores, but no host name can carry), and creates one with a
// 63-character label.
func TestAccVMInputNames(t *testing.T) {
	env := newAccEnv(t, labCluster())
	named := func(name string) string {
		// Stopped, in the lab-safe range: on a real cluster the VM of the last step neither boots
		// nor takes an id a lab's own guests may be given.
		return env.config(fmt.Sprintf("resource \"qemuscheduler_vm\" \"web\" {\n  name = %q\n  started = false\n  annotations = { \"vmid.qemu-scheduler/range\" = %q }\n}\n", name, labRange))
	}
	var steps []resource.TestStep
	for name, detail := range map[string]string{
		"a..b":                           `name: "a..b": label 2 is empty: a DNS name has no leading, trailing or doubled dots.`,
		"web.":                           `name: "web.": label 2 is empty`,
		"web-":                           `name: "web-": label "web-" starts or ends with '-'.`,
		"-web.lab":                       `name: "-web.lab": label "-web" starts or ends with '-'.`,
		"web_1":                          `name: "web_1": '_' is not allowed`,
		"":                               `name: "": empty`,
		strings.Repeat("a", 64) + ".lab": `label 1 has 64 characters: a DNS label has at most 63`,
	} {
		steps = append(steps, resource.TestStep{Config: named(name), PlanOnly: true,
			ExpectError: planError("Invalid DNS name", fmt.Sprintf("name = %q", name), detail)})
	}
	long := strings.Repeat("a", 63) + ".lab"
	steps = append(steps, resource.TestStep{Config: named(long), Check: resource.TestCheckResourceAttr(vmAddr, "name", long)})
	runSteps(t, steps...)
}

// storagesCluster is the lab cluster with a storage that holds no VM disks.
func storagesCluster() pvesim.Cluster {
	c := labCluster()
	c.Storages = append(c.Storages, pvesim.StorageSpec{Name: "backup", Type: "dir", Content: []string{"backup", "iso"}, Shared: true, SizeGiB: 100})
	return c
}

// A pool or storage the cluster does not have, or a storage without VM disks, fails the plan
// on its attribute; existing ones apply.
func TestAccVMInputPoolAndStorages(t *testing.T) {
	env, sim := simEnv(t, storagesCluster())
	const storages = "(storages: backup, ceph, local-lvm)"
	planFails(t, env, vmBlock, []inputCase{
		{`pool = "lap"`, planError("Pool does not exist", `pool = "lap"`, `pool = "lap": the cluster has no such pool (pools this token can see: lab), so Proxmox VE would refuse the create. Fix the name, or create the pool first (pveum pool add lap); a pool the token lacks Pool.Audit on is not listed. `+changeset.DestroyAnyway)},
		{"disk {\n  slot    = \"scsi0\"\n  storage = \"cepth\"\n  size    = 8\n}", planError("Storage does not exist", `storage = "cepth"`, `disk[0].storage = "cepth": the cluster has no such storage `+storages)},
		{"disk {\n  slot    = \"scsi0\"\n  storage = \"backup\"\n  size    = 8\n}", planError("Storage holds no VM disks", `storage = "backup"`, `disk[0].storage = "backup": the storage has no images content type (content: backup, iso)`)},
		{"clone {\n  source_vmid = 9000\n  storage     = \"nfs\"\n}", planError("Storage does not exist", `storage = "nfs"`, `clone.storage = "nfs": the cluster has no such storage `+storages)},
		{"bios = \"ovmf\"\nefi_disk {\n  storage = \"nfs\"\n}", planError("Storage does not exist", `storage = "nfs"`, `efi_disk.storage = "nfs": the cluster has no such storage `+storages)},
	})
	runSteps(t, resource.TestStep{
		Config: env.config(fmt.Sprintf(vmBlock, "pool = \"lab\"\nclone {\n  source_vmid = 9000\n  storage     = \"ceph\"\n}\ndisk {\n  slot    = \"scsi1\"\n  storage = \"local-lvm\"\n  size    = 4\n}")),
		Check: guestExists(sim, 101, func(g pvesim.GuestState) error {
			if g.Pool != "lab" || !strings.HasPrefix(g.Config["scsi0"], "ceph:") || !strings.HasPrefix(g.Config["scsi1"], "local-lvm:") {
				return fmt.Errorf("pool %q, scsi0 %q, scsi1 %q", g.Pool, g.Config["scsi0"], g.Config["scsi1"])
			}
			return nil
		}),
	})
}

// The pool and storage checks cost no request: a plan of VMs that name them makes exactly the
// requests of the same plan without them, with one cluster read and no GET /pools.
func TestAccVMInputChecksCostNoRequests(t *testing.T) {
	env, sim := simEnv(t, storagesCluster())
	const n = 5
	config := func(cloneStorage, refs string) string {
		return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  count = %d
  name  = "web-${count.index}"
  clone {
    source_vmid = 9000
    %s
  }
  %s
}`, n, cloneStorage, refs))
	}
	without := -1
	measure := func(what string, check func(total int) error) planCheck {
		return func() error {
			total := sim.TotalRequests()
			t.Logf("%s: %d requests (%d cluster reads)", what, total, sim.Requests(clusterReads))
			if reads, pools := sim.Requests(clusterReads), sim.Requests("GET /pools"); reads != 1 || pools != 0 {
				return fmt.Errorf("%s: %d cluster reads and %d reads of /pools, want 1 and 0", what, reads, pools)
			}
			return check(total)
		}
	}
	step := func(config, what string, check func(total int) error) resource.TestStep {
		return resource.TestStep{
			PreConfig: sim.ResetRequests, Config: config, PlanOnly: true, ExpectNonEmptyPlan: true,
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPreRefresh: []plancheck.PlanCheck{measure(what, check)}},
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: steadyProviders,
		Steps: []resource.TestStep{
			step(config("", ""), "the plan without pool and storages", func(total int) error { without = total; return nil }),
			step(config(`storage = "ceph"`, "pool = \"lab\"\n  disk {\n    slot    = \"scsi1\"\n    storage = \"local-lvm\"\n    size    = 4\n  }"), "the plan with them", func(total int) error {
				if total != without {
					return fmt.Errorf("%d requests, %d without the pool and storages", total, without)
				}
				return nil
			}),
		},
	})
}

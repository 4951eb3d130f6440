package provider

import (
	"fmt"
	"regexp"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// sizedCluster has n identical empty nodes of cpus logical CPUs and memGiB GiB.
func sizedCluster(n, cpus int, memGiB float64) pvesim.Cluster {
	c := pvesim.Cluster{Storages: []pvesim.StorageSpec{{Name: "local-lvm", Content: []string{"images"}, SizeGiB: 500}}}
	for i := 1; i <= n; i++ {
		c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: fmt.Sprintf("pve%d", i), CPUs: cpus, MemoryGiB: memGiB})
	}
	return c
}

// noGuests fails when the simulator holds any guest: a refused plan creates nothing.
func noGuests(t *testing.T, sim *pvesim.Server) func() {
	return func() {
		if n := len(sim.Guests()); n != 0 {
			t.Errorf("a refused plan left %d guests", n)
		}
	}
}

// cpuRatioOne is the provider's plugin config with CPUOvercommit at ratio 1.
const cpuRatioOne = `plugin_config {
  filter {
    name = "CPUOvercommit"
    args = { ratio = "1" }
  }
}`

// A set that cannot be placed as a whole fails the plan, before anything is created, and
// says how many of it fit, which do not, and how to destroy anyway.
func TestAccChangeSetAllOrNothing(t *testing.T) {
	cases := []struct {
		name     string
		cluster  pvesim.Cluster
		provider string
		hcl      string
		want     string
	}{
		{"count 4 with required anti-affinity on 3 nodes", bigNodeCluster(3), "", webVMs("web", 4, webAntiAffinity),
			`only 3 of the plan's 4 new VMs can be placed together.*topology_spread.*cause:\s+web-\d\s+with\s+vm_anti_affinity\s+\[web\]\s+by\s+node:\s+4\s+members,\s+3\s+eligible\s+nodes`},
		{"count 7 x 2 vCPU with 12 vCPU free", sizedCluster(3, 4, 16), cpuRatioOne, webVMs("web", 7, "\n  cores  = 2"),
			`only 6 of the plan's 7 new VMs can be placed together.*cause:\s+web-0,.*need\s+14\s+vCPUs\s+on\s+pve1,\s+pve2,\s+pve3,\s+which\s+have\s+12\s+vCPUs\s+free\s+\(CPUOvercommit\)`},
		{"six control-plane VMs kept apart on four usable nodes", fourUsableOfFive(), "", webVMs("web", 6, webAntiAffinity),
			`only 4 of the plan's 6 new VMs can be placed together.*topology_spread`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, sim := simEnv(t, tc.cluster)
			config := env.providerBlock(tc.provider) + tc.hcl
			runParallel(t, resource.TestStep{
				Config:      config,
				ExpectError: regexp.MustCompile(`(?s)No placement for "web-\d".*` + tc.want + `.*the\s+apply\s+of\s+a\s+plan\s+that\s+passed.*terraform\s+destroy\s+-refresh=false`),
			}, resource.TestStep{
				PreConfig:   noGuests(t, sim),
				Config:      config,
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)` + tc.want),
			})
		})
	}
}

// fourUsableOfFive is bigNodeCluster(5) with pve5 offline.
func fourUsableOfFive() pvesim.Cluster {
	c := bigNodeCluster(5)
	c.Nodes[4].Offline = true
	return c
}

// fullClusterVMs is two 4-core VMs, pinned from VMID base, that fill the two 4-CPU nodes of
// sizedCluster(2, 4, 16) at ratio 1, with extra in their block.
func fullClusterVMs(env *accEnv, base int, extra string) string {
	return env.providerBlock(cpuRatioOne) + fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  count = 2
  name  = "web-${count.index}"
  vmid  = %d + count.index
  cores = 4
  %s
}`, base, extra)
}

// Two 4-core VMs fill two 4-CPU nodes (ratio 1); re-pinning their VMIDs replaces them: each
// old VM frees its capacity for its own replacement.
func TestAccChangeSetReplaceInFullCluster(t *testing.T) {
	env, sim := simEnv(t, sizedCluster(2, 4, 16))
	vms := func(base int) string { return fullClusterVMs(env, base, "") }
	runParallel(t, resource.TestStep{
		Config: vms(300),
		Check:  wantPerNode(sim, "web-", map[string]int{"pve1": 1, "pve2": 1}),
	}, resource.TestStep{
		Config: vms(400),
		Check: resource.ComposeTestCheckFunc(wantPerNode(sim, "web-", map[string]int{"pve1": 1, "pve2": 1}),
			guestGone(sim, 300), guestGone(sim, 301), guestExists(sim, 400, nil), guestExists(sim, 401, nil)),
	})
}

// With lifecycle create_before_destroy the old VM runs until its replacement exists, so it
// counts: in a full cluster the plan (which cannot tell it from Terraform's default,
// destroy-then-create) passes and the creates are refused at apply, which must say why and
// how to get out, not that the cluster changed or the VM's attributes are wrong. The old VMs
// stay (deposed), and terraform destroy -refresh=false removes them.
func TestAccChangeSetCreateBeforeDestroyInFullCluster(t *testing.T) {
	env, sim := simEnv(t, sizedCluster(2, 4, 16))
	t.Parallel()
	vms := func(base int) string {
		return fullClusterVMs(env, base, "lifecycle {\n    create_before_destroy = true\n  }")
	}
	cli := newCLIDir(t, vms(300))
	cli.mustRun("apply", "-auto-approve", "-input=false")
	cli.write(vms(400))
	out, err := cli.run("apply", "-auto-approve", "-input=false")
	want := wrapped(`No placement for "web-\d"[\s\S]*VM 30\d on pve\d already has this name. If it is this resource's VM being replaced with create_before_destroy, ` +
		`it runs until its replacement is created, so it counts: leave room for both, or replace it without create_before_destroy`)
	if err == nil || !want.MatchString(out) {
		t.Fatalf("apply of the create_before_destroy replacement in a full cluster: error %v, want the refusal naming create_before_destroy (%s); output:\n%s", err, want, out)
	}
	if _, ids := guestsPerNode(sim, "web-"); len(ids) != 2 || !slices.Contains(ids, 300) || !slices.Contains(ids, 301) {
		t.Fatalf("after the refused replacement: web VMs %v, want the old 300 and 301", ids)
	}
	cli.mustRun("destroy", "-auto-approve", "-input=false", "-refresh=false")
	if ids := sim.Guests(); len(ids) != 0 {
		t.Errorf("after terraform destroy -refresh=false the cluster holds guests %v, want none", ids)
	}
}

// A tainted VM with a pinned VMID (a failed start taints it; terraform taint here) is replaced
// by the next apply, in a full cluster too: Terraform plans a tainted object's replacement as
// a plain create, telling the provider nothing of the VM it replaces, so the guest of the pinned
// VMID and the same name is taken as that VM. Its VMID and capacity are its replacement's.
func TestAccChangeSetTaintedReplaceInFullCluster(t *testing.T) {
	env, sim := simEnv(t, sizedCluster(2, 4, 16))
	config := env.providerBlock(cpuRatioOne) + `resource "qemuscheduler_vm" "web" {
  count = 2
  name  = "web-${count.index}"
  vmid  = 300 + count.index
  cores = 4
}`
	var before string
	runParallel(t, resource.TestStep{
		Config: config,
		Check: func(s *terraform.State) error {
			before = s.RootModule().Resources["qemuscheduler_vm.web.0"].Primary.Attributes["node"]
			return nil
		},
	}, resource.TestStep{
		Taint:  []string{"qemuscheduler_vm.web[0]"},
		Config: config,
		Check: resource.ComposeTestCheckFunc(wantPerNode(sim, "web-", map[string]int{"pve1": 1, "pve2": 1}),
			guestExists(sim, 300, nil), guestExists(sim, 301, nil),
			func(s *terraform.State) error {
				if got := s.RootModule().Resources["qemuscheduler_vm.web.0"].Primary.Attributes["node"]; got != before {
					return fmt.Errorf("web-0 was replaced on %s, want %s, the only node with room", got, before)
				}
				return nil
			}),
	})
}

// Without a pinned VMID a tainted VM's replacement cannot be told from a new VM of the same
// name: in a full cluster the plan fails, and says how to replace it.
func TestAccChangeSetTaintedUnpinnedSaysHow(t *testing.T) {
	env, _ := simEnv(t, sizedCluster(1, 4, 16))
	config := env.providerBlock(cpuRatioOne) + `resource "qemuscheduler_vm" "web" {
  name  = "web"
  cores = 4
}`
	runParallel(t, resource.TestStep{Config: config}, resource.TestStep{
		Taint:       []string{"qemuscheduler_vm.web"},
		Config:      config,
		PlanOnly:    true,
		ExpectError: wrapped(`VM 100 on pve1 already has this name. If it is this resource's VM, tainted,[\s\S]*untaint the resource \(terraform untaint ADDRESS \(tofu untaint ADDRESS under OpenTofu\)\), then replace it \(terraform apply -replace=ADDRESS`),
	})
}

// New VMs with a required vm_affinity on another new VM of the same plan: whichever Terraform
// plans first, the plan places them together, and the apply creates them on one node. The
// names change the order of arrival and of the tie-breaks.
func TestAccChangeSetAffinityWithinTheSet(t *testing.T) {
	for _, prefix := range []string{"a", "m", "z"} {
		t.Run(prefix, func(t *testing.T) {
			env, sim := simEnv(t, sizedCluster(3, 16, 16))
			runParallel(t, resource.TestStep{
				Config: env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "app" {
  count  = 2
  name   = "%[1]s-app-${count.index}"
  memory = 1024
  vm_affinity {
    tags = ["%[1]s-db"]
  }
}
resource "qemuscheduler_vm" "db" {
  name   = "%[1]s-db"
  memory = 1024
  tags   = ["%[1]s-db"]
}`, prefix)),
				Check: func(*terraform.State) error {
					if got, _ := guestsPerNode(sim, prefix+"-"); len(got) != 1 {
						return fmt.Errorf("app and db per node %v, want all on one node", got)
					}
					return nil
				},
			})
		})
	}
}

// Three 5 GiB and three 3 GiB VMs on three 8 GiB nodes have exactly one packing (a 5 and a 3
// per node). The plan and the apply find it whatever order the VMs arrive in; the names
// change the order of the tie-breaks, so each run arrives differently.
func TestAccChangeSetMixedSizes(t *testing.T) {
	mixedSizes(t, 3, "a", "m", "z", "q")
}

// Twelve VMs, more than Terraform's parallelism of 10, with exactly one packing (a 5 and a 3
// GiB VM per 8 GiB node): the creates after the first wave find the room the plan gave them.
func TestAccChangeSetMixedSizesBeyondParallelism(t *testing.T) {
	mixedSizes(t, 6, "a", "z")
}

// mixedSizes applies n 5 GiB and n 3 GiB VMs to n 8 GiB nodes, once per name prefix, and
// checks that every node is full.
func mixedSizes(t *testing.T, n int, prefixes ...string) {
	for _, prefix := range prefixes {
		t.Run(prefix, func(t *testing.T) {
			env, sim := simEnv(t, sizedCluster(n, 16, 8))
			config := env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "big" {
  count  = %[2]d
  name   = "%[1]s-big-${count.index}"
  memory = 5120
}
resource "qemuscheduler_vm" "small" {
  count  = %[2]d
  name   = "%[1]s-small-${count.index}"
  memory = 3072
}`, prefix, n))
			want := map[string]int{}
			for i := 1; i <= n; i++ {
				want[fmt.Sprintf("pve%d", i)] = 8192
			}
			runParallel(t, resource.TestStep{Config: config, Check: memoryPerNode(sim, fmt.Sprint(want))})
		})
	}
}

// memoryPerNode checks the memory the simulator's guests are given per node (fmt of a map).
func memoryPerNode(sim *pvesim.Server, want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		mem := map[string]int{}
		for _, g := range guests(sim) {
			var m int
			if _, err := fmt.Sscan(g.Config["memory"], &m); err != nil {
				return fmt.Errorf("guest %d memory %q: %v", g.VMID, g.Config["memory"], err)
			}
			mem[g.Node] += m
		}
		if got := fmt.Sprint(mem); got != want {
			return fmt.Errorf("memory per node %s, want %s", got, want)
		}
		return nil
	}
}

// The plan's joint placement carries over to the apply: creates that arrive after the first
// ones (here held back by depends_on, as creates beyond -parallelism are) find the room the
// plan left them. Two 8 GiB nodes take 4+4 and 6+2 GiB in exactly one way; deciding the two
// 4 GiB VMs alone would put one on each node and strand the 6 GiB VM.
func TestAccChangeSetApplyFollowsPlan(t *testing.T) {
	env, sim := simEnv(t, sizedCluster(2, 16, 8))
	config := env.config(`resource "qemuscheduler_vm" "first" {
  count  = 2
  name   = "first-${count.index}"
  memory = 4096
}
resource "qemuscheduler_vm" "later" {
  count      = 2
  name       = "later-${count.index}"
  memory     = count.index == 0 ? 6144 : 2048
  depends_on = [qemuscheduler_vm.first]
}`)
	runParallel(t, resource.TestStep{
		Config: config,
		Check: resource.ComposeTestCheckFunc(memoryPerNode(sim, "map[pve1:8192 pve2:8192]"),
			func(*terraform.State) error {
				if got, _ := guestsPerNode(sim, "first-"); len(got) != 1 {
					return fmt.Errorf("first-* per node %v, want both on one node", got)
				}
				return nil
			}),
	})
}

// Placement data sources of one plan see each other: without a VMID range, two single-name
// data sources and a count of single-name ones (the test framework's state shim refuses for_each
// keys) each answer their own VMID.
func TestAccChangeSetPlacementDataSourcesDistinct(t *testing.T) {
	env := newAccEnv(t, labCluster())
	env.needsSim(t)
	runParallel(t, resource.TestStep{
		Config: env.config(`data "qemuscheduler_placement" "a" {
  name = "app-a"
}
data "qemuscheduler_placement" "b" {
  name = "app-b"
}
data "qemuscheduler_placement" "each" {
  count = 2
  name  = "app-each-${count.index}"
}
output "ids" {
  value = join(",", sort([for v in concat([data.qemuscheduler_placement.a.vmid, data.qemuscheduler_placement.b.vmid],
  [for d in data.qemuscheduler_placement.each : d.vmid]) : tostring(v)]))
}`),
		Check: resource.TestCheckOutput("ids", "101,102,103,104"),
	})
}

// Four 16 GiB workers, two per 64 GiB node, grow to 56 GiB in one plan: the warning gives the
// node's figure after the plan (1.75), not the figure of one VM grown alone (1.125).
func TestAccChangeSetGrowthInPlace(t *testing.T) {
	growthWarns(t, `resource "qemuscheduler_vm" "worker" {
  count  = 4
  name   = "worker-${count.index}"
  memory = %d
  node   = count.index %% 2 == 0 ? "pve1" : "pve2"
}`, 16384, 57344, func(log *warningLog) resource.TestCheckFunc {
		return resource.ComposeTestCheckFunc(
			log.has("no longer fits its node", "MemoryOvercommit: (57344+57344)/65536 MiB = 1.75 > 1", "on pve1"),
			log.has("no longer fits its node", "MemoryOvercommit: (57344+57344)/65536 MiB = 1.75 > 1", "on pve2"),
			// Each warning names the growth its figures count: both VMs of its node.
			log.has("on pve1", "The figures count the growth this plan has planned so far on pve1, of VMs", "(worker-0)", "(worker-2)"),
			log.lacks("so far on pve1, of VM "),
			// Planned in parallel, no VM's warning gives the figure before its peer's growth
			// ((16+56)/64 = 1.125 warned too, once).
			log.lacks("(16384+57344)"))
	})
}

// growthWarns applies the HCL format with before, then with after, on two 16-CPU 64 GiB nodes,
// and checks the warnings logged: growth is a warning, not a refusal, so the apply goes ahead.
func growthWarns(t *testing.T, format string, before, after int, check func(*warningLog) resource.TestCheckFunc) {
	env, _ := simEnv(t, sizedCluster(2, 16, 64))
	log := &warningLog{}
	runLoggingWarnings(t, log, resource.TestStep{Config: env.config(fmt.Sprintf(format, before))},
		resource.TestStep{Config: env.config(fmt.Sprintf(format, after)), Check: check(log)})
}

// Placement data sources feeding qemuscheduler_vm resources (node and vmid pinned from the
// picks) beside new VMs that take free ids, in one apply: the free VMs never take a pick's
// VMID, whether the fed VM is created in the same wave (a) or after them (b, as another
// provider's VM or a create beyond -parallelism would be).
func TestAccChangeSetPicksFeedPinnedVMs(t *testing.T) {
	env, sim := simEnv(t, sizedCluster(2, 16, 16))
	runParallel(t, resource.TestStep{
		Config: env.config(`data "qemuscheduler_placement" "a" {
  name   = "fed-a"
  memory = 1024
}
data "qemuscheduler_placement" "b" {
  name   = "fed-b"
  memory = 1024
}
resource "qemuscheduler_vm" "a" {
  name   = "fed-a"
  memory = 1024
  node   = data.qemuscheduler_placement.a.node
  vmid   = data.qemuscheduler_placement.a.vmid
}
resource "qemuscheduler_vm" "b" {
  name       = "fed-b"
  memory     = 1024
  node       = data.qemuscheduler_placement.b.node
  vmid       = data.qemuscheduler_placement.b.vmid
  depends_on = [qemuscheduler_vm.free]
}
resource "qemuscheduler_vm" "free" {
  count  = 2
  name   = "free-${count.index}"
  memory = 1024
}`),
		Check: resource.ComposeTestCheckFunc(
			resource.TestCheckResourceAttr("data.qemuscheduler_placement.a", "vmid", "100"),
			resource.TestCheckResourceAttr("data.qemuscheduler_placement.b", "vmid", "101"),
			resource.TestCheckResourceAttr("qemuscheduler_vm.a", "vmid", "100"),
			resource.TestCheckResourceAttr("qemuscheduler_vm.b", "vmid", "101"),
			func(*terraform.State) error {
				if _, ids := guestsPerNode(sim, "free-"); fmt.Sprint(ids) != "[102 103]" {
					return fmt.Errorf("free VMs have ids %v, want [102 103], beside the picks 100 and 101", ids)
				}
				return nil
			}),
	})
}

// Disks growing in place are checked against their storage's free space after all the plan's
// growth there: two 200 GiB disks on pve1's 500 GiB local storage grow to 300 GiB each, 200
// GiB more where 100 are free. Each VM alone grows by 100, which would fit.
func TestAccChangeSetDiskGrowthInPlace(t *testing.T) {
	growthWarns(t, `resource "qemuscheduler_vm" "data" {
  count  = 2
  name   = "data-${count.index}"
  memory = 1024
  node   = "pve1"
  disk {
    slot = "scsi0"
    size = %d
  }
}`, 200, 300, func(log *warningLog) resource.TestCheckFunc {
		return resource.ComposeTestCheckFunc(
			log.has("no longer fits its node", "data-0 on pve1: StorageCapacity: local-lvm has 100 GiB free, the plan's disks grow by 200 GiB there"),
			log.has("no longer fits its node", "data-1 on pve1: StorageCapacity: local-lvm has 100 GiB free, the plan's disks grow by 200 GiB there"))
	})
}

// A VM that grows and a new VM in one plan: the new VM, planned before the growth is known (a
// create has nothing to refresh, so Terraform plans it first), is placed again beside the
// growth. pve1's g grows from 2 to 8 GiB; the new 4 GiB VM, which would go to the emptier pve1,
// then fits only on pve2, and with pve2 full too the plan fails on g, saying so.
func TestAccChangeSetGrowthBesideNewVMs(t *testing.T) {
	config := func(env *accEnv, fill0, gmem, news int) string {
		return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "g" {
  name   = "g"
  node   = "pve1"
  memory = %[2]d
}
resource "qemuscheduler_vm" "fill" {
  count  = 2
  name   = "fill-${count.index}"
  node   = "pve${count.index + 2}"
  memory = count.index == 0 ? %[1]d : 6144
}
resource "qemuscheduler_vm" "new" {
  count  = %[3]d
  name   = "new-${count.index}"
  memory = 4096
}`, fill0, gmem, news))
	}
	t.Run("placed again", func(t *testing.T) {
		env, sim := simEnv(t, sizedCluster(3, 16, 8))
		runParallel(t, resource.TestStep{Config: config(env, 4096, 2048, 0)},
			resource.TestStep{Config: config(env, 4096, 8192, 1), Check: wantPerNode(sim, "new-", map[string]int{"pve2": 1})})
	})
	t.Run("refused", func(t *testing.T) {
		env, _ := simEnv(t, sizedCluster(3, 16, 8))
		runParallel(t, resource.TestStep{Config: config(env, 6144, 2048, 0)},
			resource.TestStep{Config: config(env, 6144, 8192, 1), ExpectError: wrapped(
				// On g when new-0 was planned first, as usual; on new-0 when g was.
				`No placement for "new-0"[\s\S]*pve1: MemoryOvercommit: \(8192\+4096\)/8192 MiB = 1.5 > 1`)})
	})
}

// Existing VMs, updates, imports and reads are not part of the change set: two 4-core VMs
// overcommit pve1 (8 vCPUs on 4 CPUs) before the provider's ratio drops to 1. Their update
// in place (tags), a new 4-core VM placed beside them (on the empty pve2), their import and a
// refresh all pass; only the new VM is placed, and the old ones are never refused for a node
// they already run on.
func TestAccChangeSetLeavesExistingVMsAlone(t *testing.T) {
	env, sim := simEnv(t, sizedCluster(2, 4, 16))
	config := func(provider, tags string, news int) string {
		return env.providerBlock(provider) + fmt.Sprintf(`resource "qemuscheduler_vm" "old" {
  name  = "old-0"
  node  = "pve1"
  cores = 4
  tags  = [%[1]s]
}
resource "qemuscheduler_vm" "older" {
  name  = "old-1"
  node  = "pve1"
  cores = 4
  tags  = [%[1]s]
}
resource "qemuscheduler_vm" "new" {
  count = %[2]d
  name  = "new-${count.index}"
  cores = 4
}`, tags, news)
	}
	updated := config(cpuRatioOne, `"web"`, 1)
	runParallel(t, resource.TestStep{
		Config: config("", "", 0),
		Check:  wantPerNode(sim, "old-", map[string]int{"pve1": 2}),
	}, resource.TestStep{
		Config: updated,
		ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plancheck.ExpectResourceAction("qemuscheduler_vm.old", plancheck.ResourceActionUpdate),
			plancheck.ExpectResourceAction("qemuscheduler_vm.older", plancheck.ResourceActionUpdate),
			plancheck.ExpectResourceAction("qemuscheduler_vm.new[0]", plancheck.ResourceActionCreate),
		}},
		Check: resource.ComposeTestCheckFunc(wantPerNode(sim, "old-", map[string]int{"pve1": 2}), wantPerNode(sim, "new-", map[string]int{"pve2": 1})),
	}, resource.TestStep{
		Config:            updated,
		ResourceName:      "qemuscheduler_vm.old",
		ImportState:       true,
		ImportStateVerify: true,
		// What the create decided, which an import cannot know.
		ImportStateVerifyIgnore: []string{"placement_summary", "storage"},
	}, resource.TestStep{Config: updated, PlanOnly: true})
}

// A placement data source's names and the plan's new VMs are one set: three 3 GiB names and
// three 5 GiB VMs on three 8 GiB nodes have exactly one packing (a 5 and a 3 per node). The
// names go to three nodes, and the apply creates the VMs beside the room the picks keep for
// the VMs they feed, one per node.
func TestAccChangeSetPicksAndNewVMsPackTogether(t *testing.T) {
	env, sim := simEnv(t, sizedCluster(3, 16, 8))
	runParallel(t, resource.TestStep{
		Config: env.config(`data "qemuscheduler_placement" "small" {
  names  = ["small-0", "small-1", "small-2"]
  memory = 3072
}
resource "qemuscheduler_vm" "big" {
  count  = 3
  name   = "big-${count.index}"
  memory = 5120
}
output "small_nodes" {
  value = join(",", sort([for p in data.qemuscheduler_placement.small.placements : p.node]))
}`),
		Check: resource.ComposeTestCheckFunc(
			resource.TestCheckOutput("small_nodes", "pve1,pve2,pve3"),
			wantPerNode(sim, "big-", map[string]int{"pve1": 1, "pve2": 1, "pve3": 1})),
	})
}

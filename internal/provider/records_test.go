package provider

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// recordIn checks the VM's Notes in the simulator: the user's text, then the record holding
// every line of want, and the record mark among its tags next to the user's.
func recordIn(sim *pvesim.Server, user string, want ...string) resource.TestCheckFunc {
	return guestCheck(sim, func(g pvesim.GuestState) error {
		notes := g.Config["description"]
		head := "qemu-scheduler/record: v1\n"
		if user != "" {
			head = user + "\n\n" + head
		}
		if !strings.HasPrefix(notes, head) {
			return fmt.Errorf("Notes %q do not start with %q", notes, head)
		}
		for _, line := range want {
			if !strings.Contains(notes, "\n"+line+"\n") {
				return fmt.Errorf("Notes %q lack the line %q", notes, line)
			}
		}
		if !strings.Contains(";"+g.Config["tags"]+";", ";qemuscheduler-record;") {
			return fmt.Errorf("tags %q lack the record mark", g.Config["tags"])
		}
		return nil
	})
}

// The record is written at create and rewritten when the policy changes, below the user's
// description, which reads back without it; the mark stays out of tags; nothing shows as a
// diff (each step's empty plan after apply); import reads the policy back.
func TestAccVMPlacementRecord(t *testing.T) {
	env, sim := simEnv(t, equalCluster())
	vm := func(policy string) string {
		return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name        = "cp-1"
  tags        = ["k8s", "cp"]
  description = "control plane"
  annotations = { "vmid.qemu-scheduler/range" = "700-799" }
  vm_anti_affinity {
    tags = ["cp"]
  }
  %s
}`, policy))
	}
	spread := `topology_spread {
    tags     = ["k8s"]
    max_skew = 2
  }`
	runSteps(t,
		resource.TestStep{Config: vm(""), Check: resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, "description", "control plane"),
			resource.TestCheckResourceAttr(vmAddr, "tags.#", "2"),
			recordIn(sim, "control plane", "qemu-scheduler/tags: cp, k8s",
				"qemu-scheduler/annotation: vmid.qemu-scheduler/range=700-799",
				"qemu-scheduler/vm-anti-affinity: tags=cp topology_key=node"),
		)},
		resource.TestStep{Config: vm(spread), Check: recordIn(sim, "control plane",
			"qemu-scheduler/vm-anti-affinity: tags=cp topology_key=node",
			"qemu-scheduler/topology-spread: tags=k8s topology_key=node max_skew=2 when_unsatisfiable=DoNotSchedule")},
		resource.TestStep{Config: vm(spread), ResourceName: vmAddr, ImportState: true, ImportStateId: "700", ImportStateCheck: func(is []*terraform.InstanceState) error {
			a := is[0].Attributes
			for k, v := range map[string]string{"description": "control plane", "vm_anti_affinity.0.tags.0": "cp", "topology_spread.0.max_skew": "2",
				"annotations.vmid.qemu-scheduler/range": "700-799", "tags.#": "2"} {
				if a[k] != v {
					return fmt.Errorf("imported %s = %q, want %q", k, a[k], v)
				}
			}
			return nil
		}},
		// Without a policy the record and its mark go; the user's tags and Notes stay.
		resource.TestStep{Config: env.config(`resource "qemuscheduler_vm" "web" {
  name        = "cp-1"
  tags        = ["k8s", "cp"]
  description = "control plane"
}`), Check: guestCheck(sim, expectConfig(map[string]string{"description": "control plane", "tags": "cp;k8s"}))},
	)
}

// A VM without any configured tags or description still gets its record and mark, and shows
// neither.
func TestAccVMPlacementRecordNoTags(t *testing.T) {
	env, sim := simEnv(t, equalCluster())
	runSteps(t, resource.TestStep{Config: env.config(`resource "qemuscheduler_vm" "web" {
  name = "solo"
  node_selector = { "node.qemu-scheduler/name" = "pve2" }
}`), Check: resource.ComposeAggregateTestCheckFunc(
		resource.TestCheckResourceAttr(vmAddr, "description", ""),
		resource.TestCheckResourceAttr(vmAddr, "tags.#", "0"),
		resource.TestCheckResourceAttr(vmAddr, "node", "pve2"),
		recordIn(sim, "", "qemu-scheduler/node-selector: node.qemu-scheduler/name=pve2"),
	)})
}

// warningLog collects the warnings the provider returns to Terraform, which the testing
// framework does not show to checks.
type warningLog struct {
	mu    sync.Mutex
	texts []string
}

func (w *warningLog) add(diags []*tfprotov6.Diagnostic) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range diags {
		if d.Severity == tfprotov6.DiagnosticSeverityWarning {
			w.texts = append(w.texts, d.Summary+": "+d.Detail)
		}
	}
}

// has checks that some warning holds every part.
func (w *warningLog) has(parts ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, text := range w.texts {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(text, p)
			}
			if all {
				return nil
			}
		}
		return fmt.Errorf("no warning holds %q; warnings: %q", parts, w.texts)
	}
}

// lacks checks that no warning holds part.
func (w *warningLog) lacks(part string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, text := range w.texts {
			if strings.Contains(text, part) {
				return fmt.Errorf("a warning holds %q: %q", part, text)
			}
		}
		return nil
	}
}

// warningServer is the provider with its validation, plan, refresh and read warnings logged.
type warningServer struct {
	tfprotov6.ProviderServer
	log *warningLog
}

func (s warningServer) ReadDataSource(ctx context.Context, req *tfprotov6.ReadDataSourceRequest) (*tfprotov6.ReadDataSourceResponse, error) {
	resp, err := s.ProviderServer.ReadDataSource(ctx, req)
	if resp != nil {
		s.log.add(resp.Diagnostics)
	}
	return resp, err
}

func (s warningServer) ValidateResourceConfig(ctx context.Context, req *tfprotov6.ValidateResourceConfigRequest) (*tfprotov6.ValidateResourceConfigResponse, error) {
	resp, err := s.ProviderServer.ValidateResourceConfig(ctx, req)
	if resp != nil {
		s.log.add(resp.Diagnostics)
	}
	return resp, err
}

func (s warningServer) ReadResource(ctx context.Context, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	resp, err := s.ProviderServer.ReadResource(ctx, req)
	if resp != nil {
		s.log.add(resp.Diagnostics)
	}
	return resp, err
}

func (s warningServer) PlanResourceChange(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	resp, err := s.ProviderServer.PlanResourceChange(ctx, req)
	if resp != nil {
		s.log.add(resp.Diagnostics)
	}
	return resp, err
}

// runLoggingWarnings is runSteps with the provider's warnings logged into log.
func runLoggingWarnings(t *testing.T, log *warningLog, steps ...resource.TestStep) {
	t.Helper()
	resource.Test(t, resource.TestCase{Steps: steps, ProtoV6ProviderFactories: map[string]func() (tfprotov6.ProviderServer, error){
		"qemuscheduler": func() (tfprotov6.ProviderServer, error) {
			s, err := providerserver.NewProtocol6WithError(New("test")())()
			return warningServer{s, log}, err
		},
	}})
}

// A malformed hand-written record is a warning naming the VM and the line, never a failed
// plan; its good lines still count: the anti-affinity of db keeps the new db VM off pve1.
func TestAccVMPlacementRecordMalformed(t *testing.T) {
	c := equalCluster()
	c.Guests = []pvesim.GuestSpec{{VMID: 150, Node: "pve1", Name: "db", Status: "running", Cores: 1, MemoryMiB: 512,
		Config: map[string]string{"tags": "db;qemuscheduler-record", "description": "qemu-scheduler/record: v1\n" +
			"qemu-scheduler/vm-anti-affinity: tags=db weight=900\nqemu-scheduler/vm-anti-affinity: tags=db\n"}}}
	env, _ := simEnv(t, c)
	log := &warningLog{}
	runLoggingWarnings(t, log, resource.TestStep{Config: env.config(placement(`name = "x"
  tags = ["db"]`)), Check: resource.ComposeAggregateTestCheckFunc(
		resource.TestCheckResourceAttrWith("data.qemuscheduler_placement.p", "node", func(v string) error {
			if v == "pve1" {
				return fmt.Errorf("placed on pve1, which db's recorded anti-affinity keeps db guests out of")
			}
			return nil
		}),
		log.has("Malformed placement record", `VM 150 (db), placement record line 2 "qemu-scheduler/vm-anti-affinity: tags=db weight=900": weight must be 1..100`),
	)})
}

// webAndOther configures qemuscheduler_vm.web and qemuscheduler_vm.other, each with a name
// and one tag.
func webAndOther(env *accEnv, web, webTag, other, otherTag string) string {
	return env.config(fmt.Sprintf(`
resource "qemuscheduler_vm" "web" {
  name = %q
  tags = [%q]
}
resource "qemuscheduler_vm" "other" {
  name = %q
  tags = [%q]
}
`, web, webTag, other, otherTag))
}

// Placement symmetry: a VM from another configuration, declaring no rule, is not placed next
// to an existing guest whose (hand-written) record keeps its group out, although that node is
// the best one; a VM outside the group still goes there.
func TestAccVMAvoidsRecordedAntiAffinity(t *testing.T) {
	c := equalCluster()
	c.Nodes[1].CPULoad, c.Nodes[1].MemUsedGiB = 0.5, 40
	c.Nodes[2].CPULoad, c.Nodes[2].MemUsedGiB = 0.6, 48
	c.Guests = []pvesim.GuestSpec{handRecorded(150, "pve1", "db-primary", "qemu-scheduler/vm-anti-affinity: tags=db\n", "db")}
	env, _ := simEnv(t, c)
	runSteps(t, resource.TestStep{Config: webAndOther(env, "db-replica", "db", "web", "web"), Check: resource.ComposeAggregateTestCheckFunc(
		resource.TestCheckResourceAttr(vmAddr, "node", "pve2"),
		resource.TestCheckResourceAttr("qemuscheduler_vm.other", "node", "pve1"),
	)})
}

// Affinity symmetry in the score: an existing guest whose (hand-written) record prefers web
// VMs by node draws a web VM that declares no rule to its node, pve3, although pve3 is the
// busiest; a VM outside the group goes to an idle node.
func TestAccVMDrawnByRecordedAffinity(t *testing.T) {
	c := equalCluster()
	c.Nodes[2].CPULoad, c.Nodes[2].MemUsedGiB = 0.2, 10
	c.Guests = []pvesim.GuestSpec{handRecorded(150, "pve3", "cache", "qemu-scheduler/vm-affinity: tags=web weight=100\n", "cache")}
	env, _ := simEnv(t, c)
	runSteps(t, resource.TestStep{Config: webAndOther(env, "web-1", "web", "db-1", "db"), Check: resource.ComposeAggregateTestCheckFunc(
		resource.TestCheckResourceAttr(vmAddr, "node", "pve3"),
		resource.TestMatchResourceAttr("qemuscheduler_vm.other", "node", regexp.MustCompile(`^pve[12]$`)),
	)})
}

// Anti-affinity symmetry in the score: an existing guest whose (hand-written) record prefers
// web VMs away from its node pushes a web VM that declares no rule off pve1, although pve1 is
// the idlest; a VM outside the group goes to pve1.
func TestAccVMPushedByRecordedPreferredAntiAffinity(t *testing.T) {
	c := equalCluster()
	for i := 1; i <= 2; i++ {
		c.Nodes[i].CPULoad, c.Nodes[i].MemUsedGiB = 0.2, 10
	}
	c.Guests = []pvesim.GuestSpec{handRecorded(150, "pve1", "cache", "qemu-scheduler/vm-anti-affinity: tags=web weight=100\n", "cache")}
	env, _ := simEnv(t, c)
	runSteps(t, resource.TestStep{Config: webAndOther(env, "web-1", "web", "db-1", "db"), Check: resource.ComposeAggregateTestCheckFunc(
		resource.TestMatchResourceAttr(vmAddr, "node", regexp.MustCompile(`^pve[23]$`)),
		resource.TestCheckResourceAttr("qemuscheduler_vm.other", "node", "pve1"),
	)})
}

// A provider profile's defaults apply to the VMs that select it, a VM's own attributes
// overriding them (annotations and node_selector per key, blocks as a whole); the record holds
// the effective policy.
func TestAccProfileDefaults(t *testing.T) {
	env, sim := simEnv(t, equalCluster())
	provider := env.providerBlock(`
node {
  name   = "pve1"
  labels = { zone = "a" }
  taints = ["tenant=a:NoSchedule"]
}
node {
  name   = "pve2"
  labels = { zone = "b" }
}
node {
  name   = "pve3"
  labels = { zone = "b" }
}
profile {
  name          = "tenant-a"
  annotations   = { "vmid.qemu-scheduler/range" = "4000-4099" }
  node_selector = { zone = "a" }
  toleration {
    key   = "tenant"
    value = "a"
  }
}`)
	runSteps(t, resource.TestStep{Config: provider + `
resource "qemuscheduler_vm" "web" {
  name    = "a-1"
  profile = "tenant-a"
}
resource "qemuscheduler_vm" "own" {
  name          = "a-2"
  profile       = "tenant-a"
  annotations   = { "vmid.qemu-scheduler/range" = "4500-4599" }
  node_selector = { zone = "b" }
}
`, Check: resource.ComposeAggregateTestCheckFunc(
		resource.TestCheckResourceAttr(vmAddr, "vmid", "4000"),
		resource.TestCheckResourceAttr(vmAddr, "node", "pve1"),
		resource.TestCheckResourceAttr(vmAddr, "annotations.%", "0"),
		recordIn(sim, "", "qemu-scheduler/profile: tenant-a", "qemu-scheduler/annotation: vmid.qemu-scheduler/range=4000-4099",
			"qemu-scheduler/node-selector: zone=a", "qemu-scheduler/toleration: key=tenant value=a"),
		resource.TestCheckResourceAttr("qemuscheduler_vm.own", "vmid", "4500"),
		resource.TestCheckResourceAttrWith("qemuscheduler_vm.own", "node", func(v string) error {
			if v != "pve2" && v != "pve3" {
				return fmt.Errorf("node %s, want one of zone b", v)
			}
			return nil
		}),
	)})
}

// setNotes plays an admin editing a VM's Notes and tags in the PVE UI.
func (e *accEnv) setNotes(t *testing.T, vmid int, notes, tags string) {
	t.Helper()
	c := simClient(t, e.sim)
	node, err := c.LocateVM(context.Background(), vmid)
	if err == nil {
		err = c.UpdateVM(context.Background(), node, vmid, map[string]string{"description": notes, "tags": tags}, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// A VM whose record is missing in PVE (created before records) gets it with its next update;
// a hand-written record on a VM whose configuration has no policy survives the VM's updates.
func TestAccVMPlacementRecordSync(t *testing.T) {
	env, sim := simEnv(t, equalCluster())
	vm := func(policy, memory string) string {
		return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name        = "app"
  vmid        = 321
  tags        = ["app"]
  description = "notes"
  memory      = %s
  %s
}`, memory, policy))
	}
	anti := "vm_anti_affinity {\n    tags = [\"app\"]\n  }"
	hand := "qemu-scheduler/record: v1\nqemu-scheduler/vm-anti-affinity: tags=app topology_key=node weight=5\n"
	runSteps(t,
		resource.TestStep{Config: vm(anti, "512")},
		resource.TestStep{PreConfig: func() { env.setNotes(t, 321, "notes", "app") }, Config: vm(anti, "1024"),
			Check: recordIn(sim, "notes", "qemu-scheduler/vm-anti-affinity: tags=app topology_key=node")},
		resource.TestStep{Config: vm("", "1024"), Check: guestCheck(sim, expectConfig(map[string]string{"description": "notes", "tags": "app"}))},
		resource.TestStep{PreConfig: func() { env.setNotes(t, 321, "notes\n\n"+hand, "app;qemuscheduler-record") }, Config: vm("", "2048"),
			Check: guestCheck(sim, expectConfig(map[string]string{"description": "notes\n\n" + hand, "tags": "app;qemuscheduler-record"}))},
	)
}

// The description and the record share PVE's limit on Notes: a plan that would exceed it fails
// with the numbers.
func TestAccVMPlacementRecordTooLong(t *testing.T) {
	env := newAccEnv(t, equalCluster())
	runSteps(t, resource.TestStep{PlanOnly: true, Config: env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name        = "long"
  description = %q
  vm_anti_affinity {
    tags = ["long"]
  }
}`, strings.Repeat("x", 8150))), ExpectError: wrapped(`the description \(8150 bytes\) and the VM's placement record \(\d+ bytes\) need \d+. Shorten the description by \d+ bytes`)})
}

// The record carries the profile's defaults, which the configuration's validation cannot know:
// the plan checks the Notes with them, so it fails where the create would (8100 bytes of
// description pass with the record the configuration alone gives).
func TestAccVMPlacementRecordTooLongWithProfileDefaults(t *testing.T) {
	env := newAccEnv(t, equalCluster())
	runSteps(t, resource.TestStep{PlanOnly: true, Config: env.providerBlock(`profile {
  name        = "tenant"
  annotations = { "vmid.qemu-scheduler/range" = "4000-4099" }
}`) + fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name        = "long"
  profile     = "tenant"
  description = %q
}`, strings.Repeat("x", 8100)), ExpectError: regexp.MustCompile(`(?s)Error: Description too long for the placement record.*with qemuscheduler_vm.web,.*` +
		`on .* line \d+, in resource "qemuscheduler_vm" "web":.*description = .*` +
		strings.ReplaceAll(`the description \(8100 bytes\) and the VM's placement record \(120 bytes\) need 8222. Shorten the description by 30 bytes`, " ", `\s+`))})
}

// The record holds the policy with the profile's defaults, so a changed default is a changed
// policy: the next apply rewrites the record of every VM of the profile, though their own
// configuration did not change; so does a record or its mark removed by hand. Each apply is followed by
// an empty plan (runSteps), so nothing is rewritten twice.
func TestAccVMPlacementRecordFollowsProfile(t *testing.T) {
	env, sim := simEnv(t, equalCluster())
	configWith := func(vmids, policy string) string {
		return env.providerBlock(fmt.Sprintf(`profile {
  name        = "tenant-a"
  annotations = { "vmid.qemu-scheduler/range" = %q }
}`, vmids)) + fmt.Sprintf(`
resource "qemuscheduler_vm" "web" {
  name        = "a-1"
  vmid        = 410
  profile     = "tenant-a"
  description = "tenant a"
  %s
}`, policy)
	}
	config := func(vmids string) string { return configWith(vmids, "") }
	runSteps(t,
		resource.TestStep{Config: config("400-499"), Check: recordIn(sim, "tenant a", "qemu-scheduler/annotation: vmid.qemu-scheduler/range=400-499")},
		resource.TestStep{Config: config("410-419"), Check: recordIn(sim, "tenant a", "qemu-scheduler/annotation: vmid.qemu-scheduler/range=410-419")},
		resource.TestStep{PreConfig: func() { env.setNotes(t, 410, "tenant a", "") }, Config: config("410-419"),
			Check: recordIn(sim, "tenant a", "qemu-scheduler/annotation: vmid.qemu-scheduler/range=410-419")},
		// The record left, its mark removed: the mark comes back (the apply wrote the same Notes
		// and left the tags without it: a perpetual diff).
		resource.TestStep{PreConfig: func() {
			env.setNotes(t, 410, "tenant a\n\nqemu-scheduler/record: v1\nqemu-scheduler/profile: tenant-a\nqemu-scheduler/annotation: vmid.qemu-scheduler/range=410-419\n", "")
		}, Config: config("410-419"), Check: recordIn(sim, "tenant a", "qemu-scheduler/annotation: vmid.qemu-scheduler/range=410-419")},
		// The record removed, its mark left: the record comes back.
		resource.TestStep{PreConfig: func() { env.setNotes(t, 410, "tenant a", "qemuscheduler-record") }, Config: config("410-419"),
			Check: recordIn(sim, "tenant a", "qemu-scheduler/annotation: vmid.qemu-scheduler/range=410-419")},
		// A change of the VM's own policy is the plan's diff: the summary stays known and no
		// warning blames a profile or a hand edit.
		resource.TestStep{Config: configWith("410-419", "vm_anti_affinity {\n    tags = [\"a\"]\n  }"),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("placement_summary"), knownvalue.StringRegexp(regexp.MustCompile(`^a-1: pve`)))}},
			Check: recordIn(sim, "tenant a", "qemu-scheduler/vm-anti-affinity: tags=a topology_key=node")},
	)
}

// An import leaves out of the VM's attributes what its record holds from the profile's
// defaults: the configuration that selects the profile, as the VM was created with, plans no
// change after the import (the record holds the policy with the defaults).
//
// A configuration restating a default of its profile in the VM's own attributes cannot be told
// from one that does not: after the import it plans a one-time update, which writes nothing
// to PVE (README, "Placement records"), and then no change.
func TestAccVMImportLeavesProfileDefaults(t *testing.T) {
	env, sim := simEnv(t, equalCluster())
	provider := env.providerBlock(`profile {
  name          = "tenant-a"
  annotations   = { "vmid.qemu-scheduler/range" = "4000-4099" }
  node_selector = { "node.qemu-scheduler/name" = "pve2" }
  toleration {
    key   = "tenant"
    value = "a"
  }
  topology_spread {
    tags = ["tenant-a"]
  }
}`)
	vm := `
resource "qemuscheduler_vm" "web" {
  name        = "a-1"
  profile     = "tenant-a"
  tags        = ["tenant-a"]
  annotations = { "node.qemu-scheduler/regex" = "pve[0-9]" }
}`
	restated := `
resource "qemuscheduler_vm" "web" {
  name        = "a-1"
  profile     = "tenant-a"
  tags        = ["tenant-a"]
  annotations = { "node.qemu-scheduler/regex" = "pve[0-9]", "vmid.qemu-scheduler/range" = "4000-4099" }
  topology_spread {
    tags = ["tenant-a"]
  }
}`
	vmWrites := func() int {
		return sim.Requests("POST /nodes/{node}/qemu/{vmid}/config") + sim.Requests("PUT /nodes/{node}/qemu/{vmid}/config")
	}
	var writes int
	runSteps(t,
		resource.TestStep{Config: provider + vm},
		resource.TestStep{Config: provider + vm, ResourceName: vmAddr, ImportState: true, ImportStateId: "4000",
			ImportStateCheck: func(is []*terraform.InstanceState) error {
				a := is[0].Attributes
				for k, v := range map[string]string{"profile": "tenant-a", "annotations.%": "1", "annotations.node.qemu-scheduler/regex": "pve[0-9]",
					"node_selector.%": "0", "toleration.#": "0", "topology_spread.#": "0"} {
					if a[k] != v {
						return fmt.Errorf("imported %s = %q, want %q", k, a[k], v)
					}
				}
				return nil
			}},
		resource.TestStep{Config: provider + `removed {
  from = qemuscheduler_vm.web
  lifecycle {
    destroy = false
  }
}`},
		resource.TestStep{Config: provider + vm + `
import {
  to = qemuscheduler_vm.web
  id = "4000"
}`, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionNoop)}}},
		resource.TestStep{PreConfig: func() { writes = vmWrites() }, Config: provider + restated,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate)}},
			Check: func(*terraform.State) error {
				if n := vmWrites() - writes; n != 0 {
					return fmt.Errorf("the update restating the profile's defaults wrote the VM's config %d times, want 0", n)
				}
				return nil
			}},
	)
}

// A clone does not inherit its template's placement record, nor its mark: a VM converted to a
// template keeps the Notes it had, and each clone of it then carried the template's policy as
// its own (and, without tags of its own, the mark that makes every other configuration read
// it). The template's own notes stay; a clone with a policy gets its own record below them.
func TestAccVMCloneDropsTemplateRecord(t *testing.T) {
	c := labCluster()
	c.Guests[2].Tags = []string{"golden", "qemuscheduler-record"}
	c.Guests[2].Config["description"] = "golden image\n\nqemu-scheduler/record: v1\nqemu-scheduler/vm-anti-affinity: tags=web\n"
	env, sim := simEnv(t, c)
	clone := func(name, policy string) string {
		return fmt.Sprintf(`resource "qemuscheduler_vm" %q {
  name = %q
  clone {
    source_vmid = 9000
  }
  %s
}
`, name, name, policy)
	}
	config := env.config(clone("plain", ""), clone("ruled", "node_selector = { \"node.qemu-scheduler/name\" = \"pve2\" }"))
	notes := func(addr, description, tags string) resource.TestCheckFunc {
		return func(s *terraform.State) error {
			vmid, err := strconv.Atoi(s.RootModule().Resources[addr].Primary.Attributes["vmid"])
			if err != nil {
				return err
			}
			return guestExists(sim, vmid, expectConfig(map[string]string{"description": description, "tags": tags}))(s)
		}
	}
	runSteps(t, resource.TestStep{Config: config, Check: resource.ComposeAggregateTestCheckFunc(
		notes("qemuscheduler_vm.plain", "golden image", "golden"),
		resource.TestCheckResourceAttr("qemuscheduler_vm.plain", "description", "golden image"),
		notes("qemuscheduler_vm.ruled", "golden image\n\nqemu-scheduler/record: v1\nqemu-scheduler/node-selector: node.qemu-scheduler/name=pve2\n",
			"golden;qemuscheduler-record"),
		resource.TestCheckResourceAttr("qemuscheduler_vm.ruled", "description", "golden image"),
	)})
}

// A configuration written differently from the record's canonical text plans no change, after
// its apply nor after an import, and the one state an import gives fits both ways of writing
// it: group tags in capitals (PVE compares tags case-insensitively; the record keeps them as
// written), and the defaults written out (profile "default", empty annotations and node
// selector, topology_key "node", max_skew 1, when_unsatisfiable DoNotSchedule, the spread's
// node policies Honor, a toleration's operator Equal) or left out.
func TestAccVMImportPlansNoChange(t *testing.T) {
	env, _ := simEnv(t, equalCluster())
	vm := func(explicit bool) string {
		defaults, spreadDefaults, termDefaults, tolerationDefaults := "", "", "", ""
		if explicit {
			defaults = `profile       = "default"
  annotations   = {}
  node_selector = {}`
			spreadDefaults = `topology_key         = "node"
    max_skew             = 1
    when_unsatisfiable   = "DoNotSchedule"
    node_affinity_policy = "Honor"
    node_taints_policy   = "Honor"`
			termDefaults = `topology_key = "node"`
			tolerationDefaults = `operator = "Equal"`
		}
		return env.config(fmt.Sprintf(`
resource "qemuscheduler_vm" "web" {
  name = "web-1"
  vmid = 710
  tags = ["web"]
  %s
  vm_anti_affinity {
    tags = ["Web"]
    %s
  }
  vm_affinity {
    tags   = ["db"]
    weight = 5
    %[2]s
  }
  topology_spread {
    tags_any_of  = ["Web", "API"]
    tags_none_of = ["Canary"]
    %[3]s
  }
  toleration {
    key   = "dedicated"
    value = "web"
    %[4]s
  }
}`, defaults, termDefaults, spreadDefaults, tolerationDefaults))
	}
	noop := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionNoop)}}
	removed := resource.TestStep{Config: env.config(`removed {
  from = qemuscheduler_vm.web
  lifecycle {
    destroy = false
  }
}`)}
	imported := func(explicit bool) resource.TestStep {
		return resource.TestStep{Config: vm(explicit) + `
import {
  to = qemuscheduler_vm.web
  id = "710"
}`, ConfigPlanChecks: noop}
	}
	runSteps(t,
		resource.TestStep{Config: vm(true)},
		resource.TestStep{Config: vm(false), ConfigPlanChecks: noop},
		removed, imported(false),
		resource.TestStep{Config: vm(true), ConfigPlanChecks: noop},
		removed, imported(true),
		resource.TestStep{Config: vm(false), ConfigPlanChecks: noop},
	)
}

// A profile's default policies hold for the VMs that select it, and a VM's own blocks replace
// them as a whole: the profile's toleration opens the tainted pve1 and its spread (app guests
// run on pve2 and pve3) leaves the app VM only pve1; a VM with a toleration and a spread of
// its own gets neither default, in placement and in its record.
func TestAccProfileDefaultPolicies(t *testing.T) {
	c := equalCluster()
	c.Guests = []pvesim.GuestSpec{runningGuest(150, "pve2", "app-a", "app"), runningGuest(151, "pve3", "app-b", "app")}
	env, sim := simEnv(t, c)
	config := env.providerBlock(`
node {
  name   = "pve1"
  taints = ["gpu=yes:NoSchedule"]
}
profile {
  name = "team"
  toleration {
    key      = "gpu"
    operator = "Exists"
  }
  topology_spread {
    tags = ["app"]
  }
}`) + `
resource "qemuscheduler_vm" "app" {
  name    = "app-c"
  profile = "team"
  tags    = ["app"]
}
resource "qemuscheduler_vm" "web" {
  name    = "own"
  profile = "team"
  tags    = ["solo"]
  toleration {
    key      = "ssd"
    operator = "Exists"
  }
  topology_spread {
    tags = ["solo"]
  }
}
`
	runSteps(t, resource.TestStep{Config: config, Check: resource.ComposeAggregateTestCheckFunc(
		resource.TestCheckResourceAttr("qemuscheduler_vm.app", "node", "pve1"),
		resource.TestMatchResourceAttr("qemuscheduler_vm.app", "placement_summary", regexp.MustCompile(`1/3 nodes feasible.*profile team$`)),
		resource.TestMatchResourceAttr(vmAddr, "node", regexp.MustCompile(`^pve[23]$`)),
		resource.TestMatchResourceAttr(vmAddr, "placement_summary", regexp.MustCompile(`2/3 nodes feasible`)),
		recordIn(sim, "", "qemu-scheduler/profile: team", "qemu-scheduler/toleration: key=ssd operator=Exists",
			"qemu-scheduler/topology-spread: tags=solo topology_key=node max_skew=1 when_unsatisfiable=DoNotSchedule"),
		guestCheck(sim, func(g pvesim.GuestState) error {
			if notes := g.Config["description"]; strings.Contains(notes, "key=gpu") || strings.Contains(notes, "tags=app") {
				return fmt.Errorf("own's record holds a default its own blocks replace:\n%s", notes)
			}
			return nil
		}),
	)})
}

// A managed VM's record is read with its refresh: the plan after it reads no VM config again
// for the view's records, only the marked guests this process has not read (each record once
// per provider process). One VM, so that its refresh surely comes before the view is read:
// Terraform refreshes and plans the instances of a count in parallel, and a view read before
// an instance's refresh reads that instance's record too.
func TestAccRecordsReadWithTheRefresh(t *testing.T) {
	c := equalCluster()
	c.Guests = []pvesim.GuestSpec{handRecorded(150, "pve3", "db", "qemu-scheduler/vm-anti-affinity: tags=db\n", "db")}
	env, sim := simEnv(t, c)
	config := env.config(`
resource "qemuscheduler_vm" "web" {
  name = "cp-1"
  tags = ["cp"]
  vm_anti_affinity {
    tags = ["cp"]
  }
}`)
	var before int
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: steadyProviders,
		Steps: []resource.TestStep{{Config: config}, {
			PreConfig: func() { before = sim.Requests(vmConfigReads) },
			Config:    config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{planCheck(func() error {
				if reads := sim.Requests(vmConfigReads) - before; reads != 2 {
					return fmt.Errorf("the refresh and plan read VM configs %d times, want 2: the VM's refresh and db's record", reads)
				}
				return nil
			})}},
		}},
	})
}

package provider

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/harules"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/scheduling"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

func haBlockOf(state string, restart, relocate int64, comment types.String) *vmresource.HAModel {
	return &vmresource.HAModel{State: types.StringValue(state), MaxRestart: types.Int64Value(restart), MaxRelocate: types.Int64Value(relocate), Comment: comment,
		PlacementRules: types.BoolValue(true), Failover: types.StringValue(harules.FailoverPreferred), Rules: scheduling.HARulesValue(nil)}
}

// sameHA compares two blocks attribute by attribute (a list is not comparable with ==).
func sameHA(a, b *vmresource.HAModel) bool {
	return a.State.Equal(b.State) && a.MaxRestart.Equal(b.MaxRestart) && a.MaxRelocate.Equal(b.MaxRelocate) &&
		a.Comment.Equal(b.Comment) && a.AutoRebalance.Equal(b.AutoRebalance) && a.PlacementRules.Equal(b.PlacementRules) && a.Rules.Equal(b.Rules)
}

// The block to PVE's options and back.
func TestHAMapping(t *testing.T) {
	tests := []struct {
		name  string
		block *vmresource.HAModel
		pve   proxmox.HASettings
	}{
		{"defaults", haBlockOf("started", 1, 1, types.StringNull()), proxmox.HASettings{State: "started", MaxRestart: 1, MaxRelocate: 1}},
		{"all set", haBlockOf("stopped", 3, 0, types.StringValue("web tier")), proxmox.HASettings{State: "stopped", MaxRestart: 3, MaxRelocate: 0, Comment: "web tier"}},
		{"ignored", haBlockOf("ignored", 1, 2, types.StringNull()), proxmox.HASettings{State: "ignored", MaxRestart: 1, MaxRelocate: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.block.Settings(); got != tt.pve {
				t.Errorf("settings = %+v, want %+v", got, tt.pve)
			}
			back := vmresource.HAFromSettings(&tt.pve, tt.block, false)
			if !sameHA(back, tt.block) {
				t.Errorf("read back %+v, want %+v", back, tt.block)
			}
			if imported := vmresource.HAFromSettings(&tt.pve, nil, false); !sameHA(imported, tt.block) {
				t.Errorf("imported %+v, want %+v", imported, tt.block)
			}
		})
	}
	if vmresource.HAFromSettings(nil, haBlockOf("started", 1, 1, types.StringNull()), true) != nil {
		t.Error("a VM that is no HA resource (any more) must read back without the block")
	}
	// A comment removed outside Terraform reads back as "", which plans setting it again.
	if h := vmresource.HAFromSettings(&proxmox.HASettings{State: "started"}, haBlockOf("started", 1, 1, types.StringValue("web")), false); !h.Comment.Equal(types.StringValue("")) {
		t.Errorf("comment removed outside: %v", h.Comment)
	}
	for _, c := range []struct {
		h    *vmresource.HAModel
		want bool
	}{{nil, false}, {haBlockOf("ignored", 1, 1, types.StringNull()), false}, {haBlockOf("stopped", 1, 1, types.StringNull()), true}} {
		if vmresource.HAManaged(c.h) != c.want {
			t.Errorf("haManaged(%v) = %t", c.h, !c.want)
		}
	}
}

func TestValidateHA(t *testing.T) {
	tests := []struct {
		started types.Bool
		state   types.String
		wantErr string
	}{
		{types.BoolNull(), types.StringNull(), ""}, // both defaults: started
		{types.BoolValue(true), types.StringValue("started"), ""},
		{types.BoolValue(false), types.StringValue("stopped"), ""},
		{types.BoolValue(false), types.StringValue("ignored"), ""},
		{types.BoolValue(true), types.StringValue("ignored"), ""},
		{types.BoolUnknown(), types.StringValue("stopped"), ""},
		{types.BoolValue(false), types.StringNull(), `started = false but ha.state = "started"`},
		{types.BoolNull(), types.StringValue("stopped"), `started = true but ha.state = "stopped"`},
	}
	for _, tt := range tests {
		var diags diag.Diagnostics
		vmresource.ValidateHA(tt.started, &vmresource.HAModel{State: tt.state}, &diags)
		got := ""
		if diags.HasError() {
			got = diags[0].Detail()
		}
		if tt.wantErr == "" && got != "" || !strings.Contains(got, tt.wantErr) {
			t.Errorf("started %v, ha.state %v: %q, want %q", tt.started, tt.state, got, tt.wantErr)
		}
	}
	var diags diag.Diagnostics
	vmresource.ValidateHA(types.BoolValue(false), nil, &diags)
	if diags.HasError() {
		t.Error("no ha block, no check")
	}
}

// haResource reads vm:<vmid>'s HA resource from the simulator, as PVE reports it.
func haResource(t *testing.T, sim *pvesim.Server, vmid int) *proxmox.HASettings {
	t.Helper()
	s, err := simClient(t, sim).HAResource(context.Background(), vmid)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// haIs checks vm:<vmid>'s HA resource (nil: none) and where and how the VM runs.
func haIs(t *testing.T, sim *pvesim.Server, vmid int, want *proxmox.HASettings, node, status string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got := haResource(t, sim, vmid)
		switch {
		case want == nil && got != nil:
			return fmt.Errorf("VM %d is still an HA resource: %+v", vmid, *got)
		case want != nil && (got == nil || *got != *want):
			return fmt.Errorf("HA resource of VM %d: %v, want %+v", vmid, got, *want)
		}
		return guestExists(sim, vmid, func(g pvesim.GuestState) error {
			if g.Node != node || g.Status != status {
				return fmt.Errorf("VM %d %s on %s, want %s on %s", vmid, g.Status, g.Node, status, node)
			}
			return nil
		})(nil)
	}
}

// requests checks how often the simulator answered each endpoint since the last reset.
func requests(sim *pvesim.Server, want map[string]int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for endpoint, n := range want {
			if got := sim.Requests(endpoint); got != n {
				return fmt.Errorf("%s: %d requests, want %d", endpoint, got, n)
			}
		}
		return nil
	}
}

// An HA VM through its life: registered after create, stopped and started through the HA
// manager, migrated through it (not by a direct migrate, which PVE would hand over anyway),
// out of HA and back in, and destroyed with its resource.
func TestAccVMHA(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	vm := func(node string, started bool, ha string) string {
		return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name    = "ha-1"
  vmid    = 150
  node    = %q
  started = %t
  clone {
    source_vmid = 9000
  }
%s
}`, node, started, ha))
	}
	const haMigrate, migrate = "POST /cluster/ha/resources/{sid}/migrate", "POST /nodes/{node}/qemu/{vmid}/migrate"
	runCase(t, resource.TestCase{
		Steps: []resource.TestStep{
			{Config: vm("pve2", true, `  ha {
    comment = "web"
  }`), Check: resource.ComposeTestCheckFunc(
				resource.TestCheckResourceAttr(vmAddr, "ha.state", "started"),
				resource.TestCheckResourceAttr(vmAddr, "ha.max_restart", "1"),
				haIs(t, sim, 150, &proxmox.HASettings{State: "started", MaxRestart: 1, MaxRelocate: 1, Comment: "web"}, "pve2", "running"),
			)},
			{Config: vm("pve2", false, `  ha {
    state        = "stopped"
    max_relocate = 2
  }`), Check: haIs(t, sim, 150, &proxmox.HASettings{State: "stopped", MaxRestart: 1, MaxRelocate: 2}, "pve2", "stopped")},
			{PreConfig: sim.ResetRequests, Config: vm("pve3", true, `  ha {
    max_relocate = 2
  }`), Check: resource.ComposeTestCheckFunc(
				resource.TestCheckResourceAttr(vmAddr, "node", "pve3"),
				haIs(t, sim, 150, &proxmox.HASettings{State: "started", MaxRestart: 1, MaxRelocate: 2}, "pve3", "running"),
				requests(sim, map[string]int{haMigrate: 1, migrate: 0}),
			)},
			{Config: vm("pve3", true, ""), Check: haIs(t, sim, 150, nil, "pve3", "running")},
			{PreConfig: sim.ResetRequests, Config: vm("pve1", true, `  ha {
    state       = "started"
    max_restart = 3
  }`), Check: resource.ComposeTestCheckFunc(
				haIs(t, sim, 150, &proxmox.HASettings{State: "started", MaxRestart: 3, MaxRelocate: 1}, "pve1", "running"),
				// Not HA-managed yet when it moves: a direct migration, then the registration.
				requests(sim, map[string]int{haMigrate: 0, migrate: 1, "POST /cluster/ha/resources": 1}),
			)},
		},
		CheckDestroy: resource.ComposeTestCheckFunc(guestGone(sim, 150), func(*terraform.State) error {
			if s := haResource(t, sim, 150); s != nil {
				return fmt.Errorf("the HA resource outlived its VM: %+v", *s)
			}
			return nil
		}),
	})
}

// memPrivate is a resource's private state in memory.
type memPrivate map[string][]byte

func (m memPrivate) GetKey(_ context.Context, key string) ([]byte, diag.Diagnostics) {
	return m[key], nil
}

func (m memPrivate) SetKey(_ context.Context, key string, value []byte) diag.Diagnostics {
	if value == nil {
		delete(m, key)
	} else {
		m[key] = value
	}
	return nil
}

// pinOf is the pin priv records, "" for none.
func pinOf(t *testing.T, priv memPrivate) string {
	t.Helper()
	var diags diag.Diagnostics
	pin := vmresource.HAPin(context.Background(), priv, &diags)
	if diags.HasError() {
		t.Fatal(diags)
	}
	return pin
}

// A refresh reports the pin as the node of an HA-managed VM the HA manager moved, and where
// it runs otherwise; a VM HA no longer manages forgets its pin.
func TestKeepPin(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		pin     string
		HA      *vmresource.HAModel
		want    string
		wantPin string
	}{
		{"HA moved a pinned VM", "pve2", haBlockOf("started", 1, 1, types.StringNull()), "pve2", "pve2"},
		{"stopped by HA, still managed", "pve2", haBlockOf("stopped", 1, 1, types.StringNull()), "pve2", "pve2"},
		{"ignored by HA: a move is drift", "pve2", haBlockOf("ignored", 1, 1, types.StringNull()), "pve3", ""},
		{"no longer an HA resource", "pve2", nil, "pve3", ""},
		{"not pinned", "", haBlockOf("started", 1, 1, types.StringNull()), "pve3", ""},
	}
	for _, tt := range tests {
		var diags diag.Diagnostics
		priv := memPrivate{}
		if tt.pin != "" {
			priv[vmresource.HAPinKey] = []byte(strconv.Quote(tt.pin))
		}
		m := &vmresource.Model{Node: types.StringValue("pve3"), HA: tt.HA}
		vmresource.KeepPin(ctx, m, priv, &diags)
		if diags.HasError() || m.Node.ValueString() != tt.want || pinOf(t, priv) != tt.wantPin {
			t.Errorf("%s: node %s, pin %q %v; want %s, pin %q", tt.name, m.Node, pinOf(t, priv), diags, tt.want, tt.wantPin)
		}
	}
	if pin := pinOf(t, memPrivate{vmresource.HAPinKey: []byte("not json")}); pin != "" {
		t.Errorf("a garbled pin reads as %q, want none", pin)
	}
	managed := haBlockOf("started", 1, 1, types.StringNull())
	for _, c := range []struct {
		planNode string
		planHA   *vmresource.HAModel
		want     bool
	}{{"pve2", managed, true}, {"pve1", managed, false}, {"pve2", nil, false}} {
		plan := &vmresource.Model{Node: types.StringValue(c.planNode), HA: c.planHA}
		if got := vmresource.PinKept(plan, &vmresource.Model{Node: types.StringValue("pve2"), HA: managed}); got != c.want {
			t.Errorf("pinKept(node %s, ha %v) = %t", c.planNode, c.planHA != nil, got)
		}
	}
}

// nodeConfig is a configuration that sets node (null: unset).
func nodeConfig(node types.String) tfsdk.Config {
	return tfsdk.Config{
		Schema: schema.Schema{Attributes: map[string]schema.Attribute{"node": schema.StringAttribute{Optional: true}}},
		Raw: tftypes.NewValue(tftypes.Object{AttributeTypes: map[string]tftypes.Type{"node": tftypes.String}},
			map[string]tftypes.Value{"node": tftypes.NewValue(tftypes.String, node.ValueStringPointer())}),
	}
}

// A create or update records the configured node of an HA-managed VM as its pin; a failed one
// keeps the pin it had; an import pins the node its ID names.
func TestRecordPin(t *testing.T) {
	ctx := context.Background()
	managed, ignored := haBlockOf("started", 1, 1, types.StringNull()), haBlockOf("ignored", 1, 1, types.StringNull())
	tests := []struct {
		name      string
		config    types.String
		HA        *vmresource.HAModel
		ok        bool
		want, pin string
	}{
		{"pinned and HA-managed", types.StringValue("pve2"), managed, true, "pve2", "pve2"},
		{"unpinned", types.StringNull(), managed, true, "pve3", ""},
		{"pinned, HA ignores it", types.StringValue("pve2"), ignored, true, "pve3", ""},
		{"pinned, no HA", types.StringValue("pve2"), nil, true, "pve3", ""},
		{"failed: the old pin stays", types.StringValue("pve1"), managed, false, "pve2", "pve2"},
		{"failed, out of HA", types.StringValue("pve1"), nil, false, "pve3", ""},
	}
	for _, tt := range tests {
		var diags diag.Diagnostics
		priv := memPrivate{vmresource.HAPinKey: []byte(`"pve2"`)}
		m := &vmresource.Model{Node: types.StringValue("pve3"), HA: tt.HA}
		vmresource.RecordPin(ctx, m, nodeConfig(tt.config), tt.ok, priv, &diags)
		if diags.HasError() || m.Node.ValueString() != tt.want || pinOf(t, priv) != tt.pin {
			t.Errorf("%s: node %s, pin %q %v; want %s, pin %q", tt.name, m.Node, pinOf(t, priv), diags, tt.want, tt.pin)
		}
	}
	for _, c := range []struct {
		idNode string
		HA     *vmresource.HAModel
		want   string
	}{{"pve2", managed, "pve2"}, {"", managed, ""}, {"pve2", ignored, ""}, {"pve2", nil, ""}} {
		var diags diag.Diagnostics
		priv := memPrivate{}
		m := &vmresource.Model{Node: types.StringValue("pve3"), HA: c.HA}
		vmresource.ImportPin(ctx, m, c.idNode, priv, &diags)
		if want := kit.CmpOr(c.want, "pve3"); diags.HasError() || pinOf(t, priv) != c.want || m.Node.ValueString() != want {
			t.Errorf("import by %q/150, ha %v: node %s, pin %q; want %s, pin %q", c.idNode, c.HA, m.Node, pinOf(t, priv), want, c.want)
		}
	}
}

// Ending HA management of a VM the HA manager moved away from its node migrates it back, with
// a warning naming both nodes.
func TestLeaveHAFrom(t *testing.T) {
	managed := haBlockOf("started", 1, 1, types.StringNull())
	snap := scheduler.Snapshot{Guests: []scheduler.Guest{{VMID: 150, Node: "pve3", Type: scheduler.GuestQEMU}}}
	vm := func(node types.String, ha *vmresource.HAModel) *vmresource.Model {
		return &vmresource.Model{VMID: types.Int64Value(150), Node: node, HA: ha}
	}
	tests := []struct {
		name        string
		plan, state *vmresource.Model
		want        string
	}{
		{"HA removed", vm(types.StringValue("pve2"), nil), vm(types.StringValue("pve2"), managed), "pve3"},
		{"HA ignores it", vm(types.StringValue("pve2"), haBlockOf("ignored", 1, 1, types.StringNull())), vm(types.StringValue("pve2"), managed), "pve3"},
		{"still HA-managed", vm(types.StringValue("pve2"), managed), vm(types.StringValue("pve2"), managed), ""},
		{"not HA-managed before", vm(types.StringValue("pve2"), nil), vm(types.StringValue("pve2"), nil), ""},
		{"on its node", vm(types.StringValue("pve3"), nil), vm(types.StringValue("pve3"), managed), ""},
		{"unpinned", vm(types.StringUnknown(), nil), vm(types.StringValue("pve2"), managed), ""},
	}
	for _, tt := range tests {
		var diags diag.Diagnostics
		got := vmresource.LeaveHAFrom(snap, tt.plan, tt.state, &diags)
		warned := diags.WarningsCount() == 1 && strings.Contains(diags[0].Detail(), `runs on pve3, where the HA manager moved it`) &&
			strings.Contains(diags[0].Detail(), `set node = "pve3"`)
		if got != tt.want || warned != (tt.want != "") || diags.HasError() {
			t.Errorf("%s: %q %v, want %q", tt.name, got, diags, tt.want)
		}
	}
	var diags diag.Diagnostics
	if got := vmresource.LeaveHAFrom(scheduler.Snapshot{}, vm(types.StringValue("pve2"), nil), vm(types.StringValue("pve2"), managed), &diags); got != "" || len(diags) > 0 {
		t.Errorf("a VM the view does not list: %q %v", got, diags)
	}
}

// A pinned HA VM that the HA manager recovers on another node after its node failed: the
// pin stays the VM's node (an empty plan, no move back, not even after a failed update), a
// changed pin migrates it through the HA manager, dropping the pin makes the node where it
// runs, and leaving HA away from the pin migrates it back by a plain migration, which the
// plan checks and warns of.
func TestAccVMHAPinnedFailover(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	vm := func(node string, memory int, ha string) string {
		if node != "" {
			node = fmt.Sprintf("node = %q", node)
		}
		return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name   = "ha-pin"
  vmid   = 150
  memory = %d
  %s
  clone {
    source_vmid = 9000
  }
%s
}`, memory, node, ha))
	}
	const ha = "  ha {}"
	const haMigrate, migrate = "POST /cluster/ha/resources/{sid}/migrate", "POST /nodes/{node}/qemu/{vmid}/migrate"
	// failOver fails the VM's node and has the HA manager recover the VM on node; back names
	// a failed node that comes back online.
	failOver := func(node, back string) func() {
		return func() {
			must(t, sim.FailOver(150, node))
			if back != "" {
				must(t, sim.SetNodeOnline(back, true))
			}
			sim.ResetRequests()
		}
	}
	online := func(node string) func() {
		return func() {
			must(t, sim.SetNodeOnline(node, true))
			sim.ResetRequests()
		}
	}
	managed := &proxmox.HASettings{State: "started", MaxRestart: 1, MaxRelocate: 1}
	noMigration := map[string]int{haMigrate: 0, migrate: 0}
	runSteps(t,
		resource.TestStep{Config: vm("pve2", 1024, ha), Check: haIs(t, sim, 150, managed, "pve2", "running")},
		resource.TestStep{PreConfig: failOver("pve3", ""), Config: vm("pve2", 1024, ha),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check: resource.ComposeTestCheckFunc(
				resource.TestCheckResourceAttr(vmAddr, "node", "pve2"),
				haIs(t, sim, 150, managed, "pve3", "running"),
				requests(sim, noMigration),
			)},
		// An update that fails keeps the pin: the next one changes the VM where it runs.
		resource.TestStep{PreConfig: func() { online("pve2")(); sim.FailNextTask("qmconfig", "hotplug problem - memory: not enough memory") },
			Config: vm("pve2", 2048, ha), ExpectError: regexp.MustCompile(`hotplug problem`)},
		resource.TestStep{PreConfig: sim.ResetRequests, Config: vm("pve2", 2048, ha), Check: resource.ComposeTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, "node", "pve2"),
			resource.TestCheckResourceAttr(vmAddr, "memory", "2048"),
			haIs(t, sim, 150, managed, "pve3", "running"),
			requests(sim, noMigration),
		)},
		resource.TestStep{PreConfig: sim.ResetRequests, Config: vm("pve1", 2048, ha), Check: resource.ComposeTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, "node", "pve1"),
			haIs(t, sim, 150, managed, "pve1", "running"),
			requests(sim, map[string]int{haMigrate: 1, migrate: 0}),
		)},
		resource.TestStep{PreConfig: failOver("pve3", "pve1"), Config: vm("", 2048, ha), Check: resource.ComposeTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, "node", "pve3"),
			haIs(t, sim, 150, managed, "pve3", "running"),
			requests(sim, noMigration),
		)},
		resource.TestStep{PreConfig: sim.ResetRequests, Config: vm("pve3", 2048, ha), Check: requests(sim, noMigration)},
		// Out of HA on a node that is down, the VM cannot go back to its node: a plan error.
		resource.TestStep{PreConfig: failOver("pve2", ""), Config: vm("pve3", 2048, ""),
			ExpectError: regexp.MustCompile(`Cannot migrate to pve3`)},
		resource.TestStep{PreConfig: online("pve3"), Config: vm("pve3", 2048, ""), Check: resource.ComposeTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, "node", "pve3"),
			haIs(t, sim, 150, nil, "pve3", "running"),
			requests(sim, map[string]int{haMigrate: 0, migrate: 1}),
		)},
	)
}

// HA VMs on a node put into maintenance (ha-manager crm-command node-maintenance enable): the
// HA manager migrates them away and back when maintenance ends, and neither move is drift.
// One VM pins the node, the other was placed there by its node selector; the provider asks
// for no migration of its own.
func TestAccVMHAMaintenance(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	config := env.config(`resource "qemuscheduler_vm" "web" {
  name   = "ha-pinned"
  vmid   = 160
  memory = 1024
  node   = "pve2"
  clone {
    source_vmid = 9000
  }
  ha {}
}
resource "qemuscheduler_vm" "api" {
  name          = "ha-selected"
  vmid          = 161
  memory        = 1024
  node_selector = { "node.qemu-scheduler/name" = "pve2" }
  clone {
    source_vmid = 9000
  }
  ha {}
  depends_on = [qemuscheduler_vm.web]
}`)
	managed := &proxmox.HASettings{State: "started", MaxRestart: 1, MaxRelocate: 1}
	noMigration := map[string]int{"POST /cluster/ha/resources/{sid}/migrate": 0, "POST /nodes/{node}/qemu/{vmid}/migrate": 0}
	// maintenance switches pve2's HA state; then the plan is empty, the pinned VM keeps pve2 as
	// its node while it runs on web, and the other one's node is where it runs, api.
	maintenance := func(state, web, api string) resource.TestStep {
		return resource.TestStep{
			PreConfig: func() {
				must(t, sim.SetNodeHAState("pve2", state))
				sim.ResetRequests()
			},
			Config:           config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check: resource.ComposeTestCheckFunc(
				resource.TestCheckResourceAttr(vmAddr, "node", "pve2"),
				haIs(t, sim, 160, managed, web, "running"),
				haIs(t, sim, 161, managed, api, "running"),
				resource.TestCheckResourceAttr("qemuscheduler_vm.api", "node", api),
				requests(sim, noMigration),
			),
		}
	}
	runSteps(t,
		resource.TestStep{Config: config, Check: resource.ComposeTestCheckFunc(
			haIs(t, sim, 160, managed, "pve2", "running"),
			haIs(t, sim, 161, managed, "pve2", "running"),
		)},
		// pve4 is down: vm 160 goes to pve1, the first of the nodes without HA services, and
		// vm 161 to pve3, which has none while pve1 has vm 160.
		maintenance("maintenance", "pve1", "pve3"),
		maintenance("online", "pve2", "pve2"),
	)
}

// An HA VM that the HA manager moved away from its node, imported by node/VMID with the
// configuration that pins it there: the node is its pin, the plan is empty, and a changed pin
// migrates it through the HA manager.
func TestAccVMHAImportRelocated(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	cfg := func(node string) string {
		return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name = "ha-legacy"
  node = %q
  disk {
    slot    = "scsi0"
    size    = 8
    storage = "ceph"
  }
  ha {}
}`, node))
	}
	const haMigrate, migrate = "POST /cluster/ha/resources/{sid}/migrate", "POST /nodes/{node}/qemu/{vmid}/migrate"
	managed := &proxmox.HASettings{State: "started", MaxRestart: 1, MaxRelocate: 1}
	create := func() {
		env.createVM(t, "pve3", 150, map[string]string{"name": "ha-legacy", "scsi0": "ceph:8", "start": "1"})
		c := simClient(t, sim)
		must(t, c.AddHAResource(context.Background(), 150, *managed))
		must(t, sim.FailOver(150, "pve1"))
		must(t, sim.SetNodeOnline("pve3", true))
	}
	runSteps(t,
		resource.TestStep{PreConfig: create, Config: cfg("pve3"), ResourceName: vmAddr, ImportState: true, ImportStateId: "pve3/150", ImportStatePersist: true,
			ImportStateCheck: func(states []*terraform.InstanceState) error {
				if a := states[0].Attributes; a["node"] != "pve3" || a["ha.state"] != "started" {
					return fmt.Errorf("imported node %s, ha.state %s; want pve3, started", a["node"], a["ha.state"])
				}
				return nil
			}},
		resource.TestStep{Config: cfg("pve3"), PlanOnly: true},
		resource.TestStep{PreConfig: sim.ResetRequests, Config: cfg("pve2"), Check: resource.ComposeTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, "node", "pve2"),
			haIs(t, sim, 150, managed, "pve2", "running"),
			requests(sim, map[string]int{haMigrate: 1, migrate: 0}),
		)},
	)
}

// A VM made HA by hand imports with its ha block, the plan is empty, and a move by the HA
// manager (the VM's node is not pinned) is no drift.
func TestAccVMHAImport(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	cfg := env.config(`resource "qemuscheduler_vm" "web" {
  name = "ha-legacy"
  disk {
    slot    = "scsi0"
    size    = 8
    storage = "ceph"
  }
  ha {
    max_restart = 2
    comment     = "legacy"
  }
}`)
	create := func() {
		env.createVM(t, "pve3", 150, map[string]string{"name": "ha-legacy", "scsi0": "ceph:8", "start": "1"})
		err := simClient(t, sim).AddHAResource(context.Background(), 150, proxmox.HASettings{State: "started", MaxRestart: 2, MaxRelocate: -1, Comment: "legacy"})
		if err != nil {
			t.Fatal(err)
		}
	}
	runSteps(t,
		resource.TestStep{PreConfig: create, Config: cfg, ResourceName: vmAddr, ImportState: true, ImportStateId: "150", ImportStatePersist: true,
			ImportStateCheck: func(states []*terraform.InstanceState) error {
				if a := states[0].Attributes; a["ha.state"] != "started" || a["ha.max_restart"] != "2" || a["ha.max_relocate"] != "1" || a["ha.comment"] != "legacy" {
					return fmt.Errorf("imported ha: %v", a)
				}
				return nil
			}},
		resource.TestStep{Config: cfg, PlanOnly: true},
		resource.TestStep{
			PreConfig: func() {
				must(t, sim.FailOver(150, "pve1"))
				must(t, sim.SetNodeOnline("pve3", true))
			},
			Config:           cfg,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check:            resource.TestCheckResourceAttr(vmAddr, "node", "pve1"),
		},
	)
}

func TestAccVMHAValidation(t *testing.T) {
	env := newAccEnv(t, labCluster())
	runParallel(t,
		resource.TestStep{Config: env.config(`resource "qemuscheduler_vm" "web" {
  name    = "web-1"
  started = false
  ha {}
}`), PlanOnly: true, ExpectError: regexp.MustCompile(`(?s)started and ha.state disagree.*started = false but ha.state = "started".*Set\s+ha.state = "stopped", or started = true`)},
		resource.TestStep{Config: env.config(`resource "qemuscheduler_vm" "web" {
  name = "web-1"
  ha {
    state = "on"
  }
}`), PlanOnly: true, ExpectError: regexp.MustCompile(`ha.state value must be one of`)},
	)
}

// A changed pin whose target node fails while the HA manager migrates the VM there fails the
// apply, the VM still on its old node (PVE's QemuMigrate aborts and the CRM puts the service
// back to started there), instead of waiting for it on the failed node until the timeout.
// Once the node is back, the next apply migrates it.
func TestAccVMHAMigrationTargetFails(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	vm := func(node string) string {
		return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name   = "ha-move"
  vmid   = 150
  memory = 1024
  node   = %q
  clone {
    source_vmid = 9000
  }
  ha {}
}`, node))
	}
	managed := &proxmox.HASettings{State: "started", MaxRestart: 1, MaxRelocate: 1}
	// failDuringMove fails node once the HA manager's migration of the VM is under way.
	failDuringMove := func(node string) func() {
		return func() {
			sim.HoldTasks("qmigrate")
			go func() {
				deadline := time.Now().Add(time.Minute) // not a timing assertion: a bound should the move never start
				for g, ok := sim.Guest(150); !ok || g.Lock != "migrate"; g, ok = sim.Guest(150) {
					if time.Now().After(deadline) {
						t.Error("the HA manager's migration never started")
						sim.ReleaseTasks()
						return
					}
					time.Sleep(time.Millisecond)
				}
				if _, err := sim.FailNode(node); err != nil {
					t.Error(err)
				}
				sim.ReleaseTasks()
			}()
		}
	}
	runSteps(t,
		resource.TestStep{Config: vm("pve2"), Check: haIs(t, sim, 150, managed, "pve2", "running")},
		resource.TestStep{PreConfig: failDuringMove("pve3"), Config: vm("pve3"),
			ExpectError: wrapped(`migrate VM 150 to pve3 through the HA manager: the migration failed, the VM stays on pve2`)},
		resource.TestStep{PreConfig: func() { must(t, sim.SetNodeOnline("pve3", true)) }, Config: vm("pve3"),
			Check: resource.ComposeTestCheckFunc(
				resource.TestCheckResourceAttr(vmAddr, "node", "pve3"),
				haIs(t, sim, 150, managed, "pve3", "running"),
			)},
	)
}

// The HA manager moving a VM between the update's lookup of its node and its config write (a
// CRM round acting on a rule a peer's update just wrote, say) does not fail the apply: PVE
// answers that the config does not exist there, and the update finds the VM again and writes
// where it runs. The pin stays the VM's node: an empty plan after. So for a power change,
// which waits for the VM where it went, and for an unpinned VM.
func TestAccVMHAMovedDuringUpdate(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	vm := func(node string, memory int, started bool) string {
		if node != "" {
			node = fmt.Sprintf("node = %q", node)
		}
		return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name    = "ha-moved"
  vmid    = 150
  %s
  memory  = %d
  started = %t
  clone {
    source_vmid = 9000
  }
  ha {
    state = %q
  }
  timeouts {
    update = "30s"
  }
}`, node, memory, started, map[bool]string{true: "started", false: "stopped"}[started]))
	}
	const config, power = "POST /nodes/{node}/qemu/{vmid}/config", "POST /nodes/{node}/qemu/{vmid}/status/{action}"
	managed := &proxmox.HASettings{State: "started", MaxRestart: 1, MaxRelocate: 1}
	runSteps(t,
		resource.TestStep{Config: vm("pve2", 1024, true), Check: haIs(t, sim, 150, managed, "pve2", "running")},
		resource.TestStep{PreConfig: func() {
			sim.ResetRequests()
			must(t, sim.MoveBefore(config, 150, "pve3"))
		}, Config: vm("pve2", 2048, true), Check: resource.ComposeTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, "node", "pve2"),
			resource.TestCheckResourceAttr(vmAddr, "memory", "2048"),
			haIs(t, sim, 150, managed, "pve3", "running"),
			func(*terraform.State) error {
				if g := sim.MustGuest(t, 150); g.Config["memory"] != "2048" {
					return fmt.Errorf("memory %q on %s, want 2048", g.Config["memory"], g.Node)
				}
				if n, failed := sim.Requests(config), sim.FailedRequests(config); n != 2 || failed != 1 {
					return fmt.Errorf("%d config writes (%d failed), want 2 (1): one where the VM was, one where it went", n, failed)
				}
				return nil
			})},
		resource.TestStep{Config: vm("pve2", 2048, true), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
		resource.TestStep{Config: vm("pve2", 2048, false), Check: haIs(t, sim, 150, &proxmox.HASettings{State: "stopped", MaxRestart: 1, MaxRelocate: 1}, "pve3", "stopped")},
		// Moved before the start: started where it went, and waited for there.
		resource.TestStep{PreConfig: func() { must(t, sim.MoveBefore(power, 150, "pve1")) }, Config: vm("pve2", 2048, true),
			Check: haIs(t, sim, 150, managed, "pve1", "running")},
		// Unpinned, the node is planned unknown but the summary known: the summary is held
		// to the plan too, and the next refresh reads where the VM went.
		resource.TestStep{PreConfig: func() { must(t, sim.MoveBefore(config, 150, "pve3")) }, Config: vm("", 3072, true),
			Check: resource.ComposeTestCheckFunc(resource.TestCheckResourceAttr(vmAddr, "node", "pve3"), haIs(t, sim, 150, managed, "pve3", "running"))},
		resource.TestStep{Config: vm("", 3072, true), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
	)
}

// Unpinning is free: a VM pinned where a move put it, with or without ha, plans no change
// once the configuration drops the pin, and stays where it runs. (An HA VM planned its node
// unknown: an update that changed nothing, one more apply per rebalance cycle.)
func TestAccVMUnpinIsFree(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	vms := func(node string) string {
		if node != "" {
			node = fmt.Sprintf("node = %q", node)
		}
		vm := func(name string, vmid int, ha string) string {
			return fmt.Sprintf(`resource "qemuscheduler_vm" %q {
  name   = %q
  vmid   = %d
  %s
  memory = 512
  clone {
    source_vmid = 9000
  }
  %s
}
`, name, name, vmid, node, ha)
		}
		return env.config(vm("plain", 150, "") + vm("ha", 151, "ha {}"))
	}
	on := func(node string) resource.TestCheckFunc {
		at := func(g pvesim.GuestState) error {
			if g.Node != node {
				return fmt.Errorf("VM %d on %s, want %s", g.VMID, g.Node, node)
			}
			return nil
		}
		return resource.ComposeTestCheckFunc(guestExists(sim, 150, at), guestExists(sim, 151, at),
			resource.TestCheckResourceAttr("qemuscheduler_vm.plain", "node", node), resource.TestCheckResourceAttr("qemuscheduler_vm.ha", "node", node))
	}
	empty := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}
	runSteps(t,
		resource.TestStep{Config: vms("pve3"), Check: on("pve3")},
		// A move, as a rebalance's is applied: pinned to its target, then the pin dropped.
		resource.TestStep{Config: vms("pve2"), Check: on("pve2")},
		resource.TestStep{Config: vms(""), ConfigPlanChecks: empty, Check: on("pve2")},
		resource.TestStep{Config: vms(""), ConfigPlanChecks: empty, Check: on("pve2")},
	)
}

// An error the update met before its HA rules (its VM could not be read back, say) neither
// keeps the rules' policy from being read nor leaves it without a profile: the policy's own
// diagnostics decide. (A nil profile crashed the provider.)
func TestHAPolicyAfterAnotherError(t *testing.T) {
	r := &vmresource.Resource{Data: &config.Data{}}
	m := vmresource.Model{SchedulingModel: scheduling.NullScheduling(), Name: types.StringValue("web-0"), Tags: types.SetNull(types.StringType),
		HA: haBlockOf("started", 1, 1, types.StringNull())}
	var diags diag.Diagnostics
	diags.AddError("Cannot read VM 100 back", "it moved")
	p, ok := r.HAPolicy(context.Background(), &m, &diags)
	if !ok || p.Profile == nil || p.Name != "web-0" {
		t.Fatalf("policy %+v, ok %t after another error", p, ok)
	}
	if diags.ErrorsCount() != 1 {
		t.Errorf("diagnostics %v, want the earlier error alone", diags)
	}
}

// The plan's ha.rules comes from what the framework planned, the state, the last refresh and
// what the plan decided from the configuration, the state and the cluster (decidedRules),
// never from group rules of the moment (TestPlannedRulesHoldWhilePeersWrite): a VM that does
// not change or whose change cannot alter its rules (TestPlannedRulesOfAnUpdate) keeps the
// state's unless the refresh found a write due; otherwise the decided rules where known, else
// unknown, deciding only then.
func TestPlannedRules(t *testing.T) {
	held := apartWebRules()
	prior := haBlockOf("started", 1, 1, types.StringNull())
	prior.Rules = held
	unknown := types.ListUnknown(scheduling.HARuleType)
	own := scheduling.HARulesValue([]scheduler.HARule{{Name: "qemuscheduler-vm-100", Type: scheduler.HANodeAffinity, VMIDs: []int{100},
		Nodes: []string{"pve1", "pve2"}, Priorities: map[string]int{"pve1": 2}}})
	tests := []struct {
		name          string
		planned       types.List
		due, same     bool
		decided, want types.List
	}{
		{"a change of a group's policy", unknown, false, false, unknown, unknown},
		{"a change of the VM's own node rule", unknown, false, false, own, own},
		{"a change the rules do not read", unknown, false, true, unknown, held},
		{"no change", held, false, true, own, held},
		{"a group rule deleted outside", held, true, true, unknown, unknown},
		{"its own node rule changed outside", held, true, true, own, own},
	}
	for _, tt := range tests {
		asked := false
		decided := func() types.List { asked = true; return tt.decided }
		if got := vmresource.PlannedRules(tt.planned, prior, tt.due, tt.same, decided); !got.Equal(tt.want) {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
		// Deciding may wait for the plan's other VMs: a VM that keeps the state's does not.
		if keeps := tt.same && !tt.due; asked == keeps {
			t.Errorf("%s: decided asked %t, want %t", tt.name, asked, !keeps)
		}
	}
}

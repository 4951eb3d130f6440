package provider

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/reservations"
)

func TestAgentAddresses(t *testing.T) {
	lo := proxmox.Interface{Name: "lo", IPv4: []string{"127.0.0.1"}, IPv6: []string{"::1"}}
	tests := []struct {
		name        string
		ifaces      []proxmox.Interface
		wantV4      map[string][]string
		wantV6      map[string][]string
		wantPrimary string
	}{
		{"no agent answer", nil, map[string][]string{}, map[string][]string{}, ""},
		{"loopback left out, link-local kept in the lists", []proxmox.Interface{lo,
			{Name: "eth0", IPv4: []string{"192.0.2.7"}, IPv6: []string{"2001:db8::7", "fe80::be24:11ff:fe00:1"}}},
			map[string][]string{"eth0": {"192.0.2.7"}}, map[string][]string{"eth0": {"2001:db8::7", "fe80::be24:11ff:fe00:1"}}, "192.0.2.7"},
		{"Windows' loopback by its addresses", []proxmox.Interface{{Name: "Loopback Pseudo-Interface 1", IPv4: []string{"127.0.0.1"}, IPv6: []string{"::1"}},
			{Name: "Ethernet", IPv4: []string{"10.0.0.5"}}},
			map[string][]string{"Ethernet": {"10.0.0.5"}}, map[string][]string{}, "10.0.0.5"},
		{"primary skips a link-local-only interface and an interface without IPv4", []proxmox.Interface{lo,
			{Name: "eth0", IPv4: []string{"169.254.3.4"}},
			{Name: "eth1", IPv6: []string{"fe80::1"}},
			{Name: "eth2", IPv4: []string{"169.254.9.9", "10.1.2.3", "10.1.2.4"}}},
			map[string][]string{"eth0": {"169.254.3.4"}, "eth2": {"169.254.9.9", "10.1.2.3", "10.1.2.4"}}, map[string][]string{"eth1": {"fe80::1"}}, "10.1.2.3"},
		{"an interface without addresses is in neither map", []proxmox.Interface{{Name: "docker0"}}, map[string][]string{}, map[string][]string{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v4, v6, primary := vmresource.AgentAddresses(tt.ifaces)
			if !reflect.DeepEqual(v4, tt.wantV4) || !reflect.DeepEqual(v6, tt.wantV6) || primary != tt.wantPrimary {
				t.Fatalf("got %v %v %q, want %v %v %q", v4, v6, primary, tt.wantV4, tt.wantV6, tt.wantPrimary)
			}
			// And into the model: the maps hold the same lists.
			var a vmresource.AgentModel
			a.SetAddresses(tt.ifaces)
			var back map[string][]string
			if d := a.IPv4Addresses.ElementsAs(context.Background(), &back, false); d.HasError() || len(back) != len(tt.wantV4) {
				t.Fatalf("ipv4_addresses %v (%v)", a.IPv4Addresses, d)
			}
			for k, v := range tt.wantV4 {
				if !reflect.DeepEqual(back[k], v) {
					t.Errorf("ipv4_addresses[%s] = %v, want %v", k, back[k], v)
				}
			}
			if a.PrimaryIPv4.ValueString() != tt.wantPrimary || a.PrimaryIPv4.IsNull() {
				t.Errorf("primary_ipv4 = %v", a.PrimaryIPv4)
			}
		})
	}
}

func TestCheckDuration(t *testing.T) {
	for in, ok := range map[string]bool{"5m": true, "90s": true, "0s": true, "1h30m": true, "5": false, "-1m": false, "soon": false} {
		if err := vmresource.CheckDuration(in); (err == nil) != ok {
			t.Errorf("checkDuration(%q) = %v", in, err)
		}
	}
	a := vmresource.AgentModel{AgentTimeout: types.StringValue("90s")}
	if a.AgentWait() != 90*time.Second {
		t.Errorf("agentWait = %s", a.AgentWait())
	}
	if a = (vmresource.AgentModel{AgentTimeout: types.StringNull()}); a.AgentWait() != 5*time.Minute {
		t.Errorf("default agentWait = %s", a.AgentWait())
	}
}

// readAgent against the simulator: the wait after a start, one call on a refresh, an agent
// that never answers (a warning, empty addresses), a rebooting guest (addresses kept), and a
// VM without agent or not running (no call at all).
func TestReadAgent(t *testing.T) {
	ctx := context.Background()
	sim := pvesim.NewTestServer(t, labCluster())
	client := simClient(t, sim)
	if err := client.CreateVM(ctx, "pve2", 150, map[string]string{"name": "a", "agent": "1", "net0": "virtio,bridge=vmbr0",
		"ipconfig0": "ip=192.0.2.9/24", "start": "1"}); err != nil {
		t.Fatal(err)
	}
	r := &vmresource.Resource{Data: &config.Data{Client: client, Ledger: reservations.New(), Changes: changeset.New(nil, nil)}}
	const agentCalls = "GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces"
	read := func(agent, started bool, timeout string, wait bool, prior vmresource.AgentModel) (*vmresource.Model, diag.Diagnostics, int) {
		m := &vmresource.Model{Node: types.StringValue("pve2"), VMID: types.Int64Value(150), Agent: types.BoolValue(agent), Started: types.BoolValue(started), AgentModel: prior}
		m.AgentTimeout = types.StringValue(timeout)
		var diags diag.Diagnostics
		sim.ResetRequests()
		r.ReadAgent(ctx, m, wait, &diags)
		return m, diags, sim.Requests(agentCalls)
	}
	unknown := vmresource.AgentModel{IPv4Addresses: types.MapUnknown(vmresource.AddressList), IPv6Addresses: types.MapUnknown(vmresource.AddressList), PrimaryIPv4: types.StringUnknown()}

	m, diags, calls := read(true, true, "5s", true, unknown)
	if diags.HasError() || len(diags) > 0 || m.PrimaryIPv4.ValueString() != "192.0.2.9" || calls != 2 {
		t.Fatalf("after start: primary %v, %d agent calls (want 2: the first meets an agent not up yet), %v", m.PrimaryIPv4, calls, diags)
	}
	found := m.AgentModel
	if m, diags, calls = read(true, true, "5s", false, found); len(diags) > 0 || !m.IPv4Addresses.Equal(found.IPv4Addresses) || calls != 1 {
		t.Fatalf("refresh: %v, %d agent calls, %v", m.IPv4Addresses, calls, diags)
	}
	for _, c := range []struct {
		agent, started bool
	}{{false, true}, {true, false}} {
		if m, diags, calls = read(c.agent, c.started, "5s", true, found); len(diags) > 0 || calls != 0 || len(m.IPv4Addresses.Elements()) != 0 || m.PrimaryIPv4.ValueString() != "" {
			t.Errorf("agent %t started %t: %v %v, %d agent calls (want none), %v", c.agent, c.started, m.IPv4Addresses, m.PrimaryIPv4, calls, diags)
		}
	}
	sim.BreakAgent(150)
	if m, diags, calls = read(true, true, "5s", false, found); len(diags) > 0 || !m.PrimaryIPv4.Equal(found.PrimaryIPv4) || calls != 1 {
		t.Errorf("refresh while the agent is down: %v, %d calls, %v; want the addresses kept, quietly", m.PrimaryIPv4, calls, diags)
	}
	// How often the agent is asked within the timeout depends on the machine's speed; that
	// it is asked, and what a timeout leaves, does not. The timeout outlasts a request on a
	// loaded machine (under -race, 100 ms did not: the deadline struck the first request).
	m, diags, calls = read(true, true, "1s", true, unknown)
	if diags.HasError() || len(diags) != 1 || calls < 1 || len(m.IPv4Addresses.Elements()) != 0 || m.PrimaryIPv4.ValueString() != "" || m.PrimaryIPv4.IsNull() {
		t.Fatalf("broken agent: %v %v, %d calls, %v; want empty addresses and one warning", m.IPv4Addresses, m.PrimaryIPv4, calls, diags)
	}
	if d := diags[0]; !strings.Contains(d.Summary(), "No addresses from the guest agent of VM 150") ||
		!strings.Contains(d.Detail(), "QEMU guest agent is not running") || !strings.Contains(d.Detail(), "agent_timeout (now 1s)") {
		t.Errorf("warning %q: %q", d.Summary(), d.Detail())
	}
}

// The addresses reach an output; the second plan is empty; an update that leaves the VM
// running asks the agent once; a refresh finds the address a changed ipconfig gives after a
// restart by hand.
func TestAccVMAgentAddresses(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	vm := func(memory int) string {
		return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name   = "agent-1"
  agent  = true
  memory = %d
  clone {
    source_vmid = 9000
  }
  cloud_init {
    ip_config = ["ip=192.0.2.10/24,gw=192.0.2.1"]
  }
}

output "ip" {
  value = qemuscheduler_vm.web.primary_ipv4
}`, memory))
	}
	const agentCalls = "GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces"
	countCalls := func(want int) resource.TestCheckFunc {
		return func(*terraform.State) error {
			if n := sim.Requests(agentCalls); n != want {
				return fmt.Errorf("%d guest agent calls, want %d", n, want)
			}
			return nil
		}
	}
	runSteps(t,
		resource.TestStep{PreConfig: sim.ResetRequests, Config: vm(1024), Check: resource.ComposeTestCheckFunc(
			resource.TestCheckOutput("ip", "192.0.2.10"),
			resource.TestCheckResourceAttr(vmAddr, "ipv4_addresses.%", "1"),
			resource.TestCheckResourceAttr(vmAddr, "ipv4_addresses.eth0.0", "192.0.2.10"),
			resource.TestCheckResourceAttr(vmAddr, "ipv6_addresses.eth0.#", "1"),
			resource.TestCheckResourceAttrWith(vmAddr, "ipv6_addresses.eth0.0", prefixed("fe80::")),
			resource.TestCheckResourceAttr(vmAddr, "agent_timeout", "5m"),
			// the first call meets an agent not up yet, the second answers
			countCalls(2),
		)},
		resource.TestStep{PreConfig: sim.ResetRequests, Config: vm(2048), Check: resource.ComposeTestCheckFunc(
			resource.TestCheckOutput("ip", "192.0.2.10"),
			// the refresh before the plan, and the update, which asks once (no start)
			countCalls(2),
		)},
	)
}

func prefixed(p string) resource.CheckResourceAttrWithFunc {
	return func(v string) error {
		if !strings.HasPrefix(v, p) {
			return fmt.Errorf("%q does not start with %q", v, p)
		}
		return nil
	}
}

// A VM whose agent never answers is created, running, with empty addresses; with agent =
// false nothing waits and the agent is never asked.
func TestAccVMAgentNeverAnswers(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	vm := func(agent bool) string {
		return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name          = "agent-2"
  vmid          = 150
  agent         = %t
  agent_timeout = "1s"
  clone {
    source_vmid = 9000
  }
}`, agent))
	}
	runSteps(t,
		resource.TestStep{PreConfig: func() { sim.BreakAgent(150) }, Config: vm(true), Check: resource.ComposeTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, "ipv4_addresses.%", "0"),
			resource.TestCheckResourceAttr(vmAddr, "ipv6_addresses.%", "0"),
			resource.TestCheckResourceAttr(vmAddr, "primary_ipv4", ""),
			guestExists(sim, 150, func(g pvesim.GuestState) error {
				if g.Status != "running" {
					return fmt.Errorf("VM %s", g.Status)
				}
				return nil
			}),
		)},
		resource.TestStep{PreConfig: sim.ResetRequests, Config: vm(false), Check: func(*terraform.State) error {
			if n := sim.Requests("GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces"); n != 1 {
				// the refresh before the plan still has agent = true; none after
				return fmt.Errorf("%d guest agent calls with agent turned off, want 1", n)
			}
			return nil
		}},
	)
}

// Without a guest agent (or stopped) a VM has no addresses, and its plans say so: an in-place
// update shows empty addresses, not "(known after apply)" on every change. (A create with
// agent unset cannot tell: a clone takes its source's agent setting.)
func TestAccVMWithoutAgentPlansNoAddresses(t *testing.T) {
	env, _ := simEnv(t, labCluster())
	vm := func(memory int) string {
		return env.config(fmt.Sprintf("resource \"qemuscheduler_vm\" \"web\" {\n  name   = \"web-1\"\n  memory = %d\n}\n", memory))
	}
	empty := []plancheck.PlanCheck{
		plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("primary_ipv4"), knownvalue.StringExact("")),
		plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ipv4_addresses"), knownvalue.MapExact(map[string]knownvalue.Check{})),
		plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ipv6_addresses"), knownvalue.MapExact(map[string]knownvalue.Check{})),
	}
	runSteps(t,
		resource.TestStep{Config: vm(1024)},
		resource.TestStep{Config: vm(2048), ConfigPlanChecks: resource.ConfigPlanChecks{
			PreApply: append([]plancheck.PlanCheck{plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate)}, empty...)}},
	)
}

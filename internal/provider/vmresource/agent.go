package vmresource

// The guest agent outputs of qemuscheduler_vm: ipv4_addresses, ipv6_addresses and
// primary_ipv4, read from the QEMU guest agent (network-get-interfaces), and agent_timeout,
// which bounds the wait for the agent after the VM starts. An agent that does not answer never
// fails an apply: the addresses stay empty, with a warning.

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
)

// AgentModel is embedded in Model.
type AgentModel struct {
	AgentTimeout  types.String `tfsdk:"agent_timeout"`
	IPv4Addresses types.Map    `tfsdk:"ipv4_addresses"`
	IPv6Addresses types.Map    `tfsdk:"ipv6_addresses"`
	PrimaryIPv4   types.String `tfsdk:"primary_ipv4"`
}

const defaultAgentTimeout = "5m"

var (
	AddressList   = types.ListType{ElemType: types.StringType}
	durationCheck = kit.StringCheck{What: "duration such as 5m or 90s", Check: CheckDuration}
)

func CheckDuration(s string) error {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return errors.New("use a number with a unit: s, m or h, e.g. 5m")
	case d < 0:
		return errors.New("must not be negative")
	}
	return nil
}

// Addresses change whenever the guest's network does (a restart, DHCP), so an update plans
// them unknown rather than keeping the state's: a kept value that the apply then reads
// differently would be an inconsistent result. A refresh alone never makes them a diff.
func agentAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"agent_timeout": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(defaultAgentTimeout),
			Validators: []validator.String{durationCheck},
			Description: "How long create (and an update that starts the VM) waits for the guest agent to report the addresses, " +
				"when `agent = true` and `started = true`. A VM whose agent does not answer in time is kept, with empty addresses and a warning. Default `5m`."},
		"ipv4_addresses": schema.MapAttribute{Computed: true, ElementType: AddressList,
			Description: "IPv4 addresses by guest interface name, as the guest agent reports them, without prefix length; loopback left out. Empty without a running agent."},
		"ipv6_addresses": schema.MapAttribute{Computed: true, ElementType: AddressList,
			Description: "IPv6 addresses by guest interface name (link-local ones included), without prefix length; loopback left out. Empty without a running agent."},
		"primary_ipv4": schema.StringAttribute{Computed: true,
			Description: "The first IPv4 address, in the agent's interface order, that is neither loopback nor link-local: the one to hand to Ansible or an output. Empty without one."},
	}
}

// AgentAddresses maps the agent's interfaces to the outputs: addresses by interface (an
// interface without addresses of a family is left out of that family's map), loopback
// interfaces left out, and the first IPv4 address that is neither loopback nor link-local.
func AgentAddresses(ifaces []proxmox.Interface) (v4, v6 map[string][]string, primary string) {
	v4, v6 = map[string][]string{}, map[string][]string{}
	for _, it := range ifaces {
		if loopback(it) {
			continue
		}
		if len(it.IPv4) > 0 {
			v4[it.Name] = it.IPv4
		}
		if len(it.IPv6) > 0 {
			v6[it.Name] = it.IPv6
		}
		for _, a := range it.IPv4 {
			if ip, err := netip.ParseAddr(a); primary == "" && err == nil && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
				primary = a
			}
		}
	}
	return v4, v6, primary
}

// loopback tells a loopback interface: Linux's lo, or one whose addresses all are loopback
// (Windows names it "Loopback Pseudo-Interface 1").
func loopback(it proxmox.Interface) bool {
	if it.Name == "lo" {
		return true
	}
	all := append(append([]string(nil), it.IPv4...), it.IPv6...)
	for _, a := range all {
		if ip, err := netip.ParseAddr(a); err != nil || !ip.IsLoopback() {
			return false
		}
	}
	return len(all) > 0
}

// SetAddresses sets the outputs from the agent's interfaces (none: empty).
func (a *AgentModel) SetAddresses(ifaces []proxmox.Interface) {
	v4, v6, primary := AgentAddresses(ifaces)
	a.IPv4Addresses, a.IPv6Addresses, a.PrimaryIPv4 = addressMap(v4), addressMap(v6), types.StringValue(primary)
}

func addressMap(byName map[string][]string) types.Map {
	values := make(map[string]attr.Value, len(byName))
	for name, addrs := range byName {
		elems := make([]attr.Value, len(addrs))
		for i, a := range addrs {
			elems[i] = types.StringValue(a)
		}
		values[name] = types.ListValueMust(types.StringType, elems)
	}
	return types.MapValueMust(AddressList, values)
}

// emptyUnknownAddresses sets addresses still unknown empty, for a state saved when the VM
// could not be read back.
func (a *AgentModel) emptyUnknownAddresses() {
	if a.IPv4Addresses.IsUnknown() || a.IPv6Addresses.IsUnknown() || a.PrimaryIPv4.IsUnknown() {
		a.SetAddresses(nil)
	}
}

// AgentWait is agent_timeout as a duration (the default when unset or unparsable, which
// validation rules out).
func (a *AgentModel) AgentWait() time.Duration {
	if d, err := time.ParseDuration(a.AgentTimeout.ValueString()); err == nil && kit.Known(a.AgentTimeout) {
		return d
	}
	d, _ := time.ParseDuration(defaultAgentTimeout)
	return d
}

// ReadAgent sets m's addresses from the guest agent of VM m.VMID on m.Node (read back just
// before). With wait, after a start, it polls the agent up to agent_timeout and leaves the
// addresses empty, with a warning, if it does not answer. Without, it asks once: an agent that
// is not up (the guest is rebooting) keeps the addresses known before.
func (r *Resource) ReadAgent(ctx context.Context, m *Model, wait bool, diags *diag.Diagnostics) {
	if !m.Agent.ValueBool() || !m.Started.ValueBool() {
		m.SetAddresses(nil)
		return
	}
	node, vmid := m.Node.ValueString(), int(m.VMID.ValueInt64())
	var ifaces []proxmox.Interface
	var err error
	if wait {
		ifaces, err = r.Data.Client.WaitAgentInterfaces(ctx, node, vmid, m.AgentWait())
	} else {
		ifaces, err = r.Data.Client.AgentInterfaces(ctx, node, vmid)
	}
	unavailable := errors.Is(err, proxmox.ErrAgentUnavailable)
	switch {
	case err == nil:
		m.SetAddresses(ifaces)
	case !wait && unavailable && kit.Known(m.PrimaryIPv4):
		tflog.Debug(ctx, "guest agent not up; keeping the addresses read before", map[string]any{"vmid": vmid, "error": err.Error()})
	default:
		m.SetAddresses(nil)
		if wait || !unavailable {
			diags.AddWarning(fmt.Sprintf("No addresses from the guest agent of VM %d", vmid),
				fmt.Sprintf("%s\n\nipv4_addresses, ipv6_addresses and primary_ipv4 stay empty until a refresh reaches the agent. "+
					"Check that the image runs qemu-guest-agent, or raise agent_timeout (now %s).", err, m.AgentTimeout.ValueString()))
		}
	}
}

// EmptyAgent is the agent part of a model with agent_timeout's default and no addresses.
func EmptyAgent() AgentModel {
	a := AgentModel{AgentTimeout: types.StringValue(defaultAgentTimeout)}
	a.SetAddresses(nil)
	return a
}

// planNoAddresses plans the empty addresses that a VM without a running guest agent reads
// (readAgent): a create or update of such a VM then shows no "(known after apply)" for them.
func planNoAddresses(ctx context.Context, plan *Model, resp *resource.ModifyPlanResponse) {
	off := func(v types.Bool) bool { return !v.IsUnknown() && !v.ValueBool() } // null reads as false too
	if !off(plan.Agent) && !off(plan.Started) {
		return
	}
	none := EmptyAgent()
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("ipv4_addresses"), none.IPv4Addresses)...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("ipv6_addresses"), none.IPv6Addresses)...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("primary_ipv4"), none.PrimaryIPv4)...)
}

// keepAddresses plans an update with the addresses of the state until readAgent reads them
// again.
func (a *AgentModel) keepAddresses(prior AgentModel) {
	a.IPv4Addresses, a.IPv6Addresses, a.PrimaryIPv4 = prior.IPv4Addresses, prior.IPv6Addresses, prior.PrimaryIPv4
}

package datasources

// ha_rules: the PVE 9 HA rules the placement's names need (design-failover), computed with the
// function qemuscheduler_vm writes its own rules with (harules.Want), for another provider to
// write (bpg's proxmox_virtual_environment_harule).

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/harules"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/scheduling"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

const haFailoverDescription = "How the HA manager treats the hard rules of these VMs when it recovers or moves them (`ha_rules`): " +
	"`preferred` (the default) puts availability first: a VM's node rule is non-strict " +
	"with priority classes, and PVE may run it on any other node, last, when none of its nodes is available. `strict` puts " +
	"the rules first: the node rule is strict and node-level anti-affinity is a PVE resource-affinity rule, so the HA manager " +
	"leaves a VM in `recovery` rather than break a hard rule (what a quorum database tier wants)."

const haRulesDescription = "The PVE 9 HA rules these VMs need for the HA manager to honour their hard placement rules " +
	"(required `vm_anti_affinity` and `vm_affinity`, node-level rules, domains) when it recovers or moves them, under " +
	"`ha_failover`: computed as `qemuscheduler_vm` computes its own, deduplicated across the names, sorted by `id`, in the " +
	"shape of bpg's `proxmox_virtual_environment_harule` (bpg v0.99 and later; its `rule` is `id`). Write them with a " +
	"`for_each` over this list. A rule may name only HA resources (PVE refuses \"unmanaged resource(s)\"): every VM named " +
	"here is in the rules as if it were HA-managed (its VMID, answered or planned), so make each one an HA resource " +
	"(bpg's `proxmox_virtual_environment_haresource`) in the same configuration, and make the rules depend on those. " +
	"Other guests join a group's rule only when they are HA resources the HA manager acts on now. Empty when no rule is needed."

// haInput is what harules.Want computes the rules of the name r, answered as p, from: snap
// holds every name where it is answered, managed every name's VMID, lenient the guests whose
// failover is preferred (the names' own by failover, ha_failover), cur the cluster's rules.
// placing says p is the VM's new home: a new VM, or an existing one the answer moves.
func haInput(profile *scheduler.Profile, r scheduler.Request, p scheduler.Placement, snap scheduler.Snapshot, managed, lenient map[int]bool,
	cur []scheduler.HARule, placing bool, failover string) harules.Input {
	return harules.Input{VMID: p.VMID, Name: p.Name, Node: p.Node, Request: r, Snap: snap, Managed: managed,
		PolicyNodes: harules.NodeRuleNodes(profile, snap, r), Strict: failover == harules.FailoverStrict, Lenient: lenient,
		Placing: placing, Rules: cur}
}

// answered is snap with every name of the decision as a guest where it is answered, carrying
// the tags the data source gives it (its group membership), and managed with every name's
// VMID: the names' rules are written together with their HA resources.
func answered(snap scheduler.Snapshot, reqs []scheduler.Request, d scheduler.Decision, managed map[int]bool) (scheduler.Snapshot, map[int]bool) {
	snap.Guests = slices.Clone(snap.Guests) // shared with the provider's cached view
	all := make(map[int]bool, len(managed)+len(reqs))
	for id, m := range managed {
		all[id] = m
	}
	for i, p := range d.Placements {
		all[p.VMID] = true
		j := slices.IndexFunc(snap.Guests, func(g scheduler.Guest) bool { return g.VMID == p.VMID })
		if j < 0 {
			snap.Guests = append(snap.Guests, scheduler.Guest{VMID: p.VMID, Name: p.Name, Type: scheduler.GuestQEMU})
			j = len(snap.Guests) - 1
		}
		snap.Guests[j].Node, snap.Guests[j].Tags = p.Node, slices.Clone(reqs[i].Tags)
	}
	return snap, all
}

// wantHARules are the rules every name of the decision needs, deduplicated by id (a rule two
// names share, such as their group's resource-affinity rule, once, with the resources of
// both and, for a shared node rule, the nodes both allow), sorted by id.
func wantHARules(profile *scheduler.Profile, snap scheduler.Snapshot, reqs []scheduler.Request, d scheduler.Decision, managed map[int]bool,
	cur []scheduler.HARule, failover string) []scheduler.HARule {
	ran := map[int]string{}
	for _, g := range snap.Guests {
		ran[g.VMID] = g.Node
	}
	lenient := harules.Lenient(cur)
	for _, p := range d.Placements {
		if failover == harules.FailoverStrict {
			delete(lenient, p.VMID)
		} else {
			lenient[p.VMID] = true
		}
	}
	snap, managed = answered(snap, reqs, d, managed)
	var out []scheduler.HARule
	for i, p := range d.Placements {
		placing := ran[p.VMID] != p.Node // a new VM, or a move: its new home
		for _, w := range harules.Want(haInput(profile, reqs[i], p, snap, managed, lenient, cur, placing, failover)) {
			j := slices.IndexFunc(out, func(o scheduler.HARule) bool { return strings.EqualFold(o.Name, w.Name) })
			if j < 0 {
				out = append(out, w.HARule)
				continue
			}
			for _, id := range w.VMIDs {
				if !slices.Contains(out[j].VMIDs, id) {
					out[j].VMIDs = append(out[j].VMIDs, id)
				}
			}
			if w.Shared {
				out[j].Nodes = slices.DeleteFunc(slices.Clone(out[j].Nodes), func(n string) bool { return !slices.Contains(w.Nodes, n) })
			}
		}
	}
	for i := range out {
		slices.Sort(out[i].VMIDs)
	}
	slices.SortFunc(out, func(a, b scheduler.HARule) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// haRules is the ha_rules attribute of the decision, with the HA resources read for the
// other guests of the names' groups; null after an error, which it reports.
func (d *placementDataSource) haRules(ctx context.Context, m *placementModel, snap scheduler.Snapshot, profile *scheduler.Profile,
	reqs []scheduler.Request, decision scheduler.Decision, diags *diag.Diagnostics) types.List {
	failover := m.HAFailover.ValueString()
	if failover == "" {
		failover = harules.FailoverPreferred
	}
	view, err := d.data.HA.Read(ctx, d.data.Client, time.Now().Add(-d.data.MaxAge))
	switch {
	case errors.Is(err, proxmox.ErrForbidden):
		diags.AddAttributeWarning(path.Root("ha_rules"), "HA resources not read",
			"The credentials may not read /cluster/ha/resources or /cluster/ha/rules (PVE needs Sys.Audit on /): ha_rules groups "+
				"these VMs only with each other, not with other HA-managed guests of their groups. Grant Sys.Audit to include those.")
	case err != nil:
		diags.AddError("Cannot read the HA resources", err.Error())
		return types.ListNull(scheduling.HARuleType)
	}
	want := wantHARules(profile, snap, reqs, decision, view.Managed, view.Rules.Rules, failover)
	for _, msg := range refusedRules(want, view.Rules.Rules, len(snap.Nodes)) {
		diags.AddAttributeWarning(path.Root("ha_rules"), "Proxmox VE would refuse an HA rule of ha_rules",
			msg+". Written as they are, the rule's create fails (PVE checks the rules with the cluster's others). Change or delete the "+
				"conflicting rule in Proxmox VE (Datacenter > HA > Rules), or change this data source's rules so that they agree.")
	}
	return scheduling.HARulesValue(want)
}

// refusedRules are the problems PVE's feasibility checks find in the rules want once written
// among the cluster's rules cur (want replacing the rules of the same id), one message per
// problem of a rule of want.
func refusedRules(want, cur []scheduler.HARule, nodes int) []string {
	changes := make([]harules.Change, len(want))
	for i, w := range want {
		changes[i] = harules.Change{Op: harules.Update, Rule: w}
	}
	after := harules.Apply(cur, changes)
	var out []string
	for _, p := range harules.Check(after, nodes) {
		if slices.ContainsFunc(want, func(w scheduler.HARule) bool { return strings.EqualFold(w.Name, p.Rule) }) {
			out = append(out, "HA rule "+p.Rule+": "+p.String())
		}
	}
	return out
}

// haRuleAttributes are the attributes of one rule of ha_rules.
func haRuleAttributes() map[string]schema.Attribute {
	return scheduling.HARuleAttributes(
		func(d string) schema.Attribute { return schema.StringAttribute{Computed: true, Description: d} },
		func(d string) schema.Attribute { return schema.BoolAttribute{Computed: true, Description: d} },
		func(e attr.Type, d string) schema.Attribute {
			return schema.MapAttribute{Computed: true, ElementType: e, Description: d}
		},
		func(e attr.Type, d string) schema.Attribute {
			return schema.ListAttribute{Computed: true, ElementType: e, Description: d}
		})
}

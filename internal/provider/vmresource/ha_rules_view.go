package vmresource

// ha.rules: the HA rules of this provider that hold the VM, as objects (scheduling.HARuleType),
// as the plan shows them, an apply records them and a refresh or an import reads them.

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/harules"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/scheduling"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// rulesValue is rules as ha.rules, sorted by id.
func rulesValue(rules []harules.Rule) types.List {
	out := make([]scheduler.HARule, len(rules))
	for i, r := range rules {
		out[i] = r.HARule
	}
	return scheduling.HARulesValue(out)
}

// decidedRules is want, the rules the VM vmid is to be in under mode and the policy p, as
// ha.rules where the configuration, the state and the cluster read at plan decide them: the
// VM leaves its rules (none), or keeps rules that its own policy and the cluster make. Where a
// peer's placement or membership goes into a rule (a group's rule, classes after where the
// group's members run, a rule peers put it in), they decide them only while no peer changes
// in the same plan (peersChange, asked only then): Terraform plans the VM again at apply,
// right before applying it, and a peer of the same apply created or changed before would make
// a value the first plan had known come out different ("Provider produced inconsistent final
// plan"). Unknown where one does, or where the VM's rules are off (the rules peers put it in
// are theirs).
func decidedRules(mode haRuleMode, p haPolicy, want []harules.Rule, vmid int, peersChange func() bool) types.List {
	unknown := types.ListUnknown(scheduling.HARuleType)
	if vmid == 0 || mode == haRulesOff {
		return unknown
	}
	// Under either failover a spread ranks the nodes by where its members run, whatever its key.
	spread := slices.ContainsFunc(p.req.TopologySpread, func(c scheduler.SpreadConstraint) bool { return c.WhenUnsatisfiable == "DoNotSchedule" })
	own := !slices.ContainsFunc(want, func(w harules.Rule) bool {
		return w.Type != scheduler.HANodeAffinity || w.Shared || !slices.Equal(w.VMIDs, []int{vmid})
	})
	if (!own || mode == haRulesKeep && (p.hasGroups() || p.hasDomains() || spread)) && peersChange() {
		return unknown
	}
	return rulesValue(want)
}

// PlannedRules is the plan's ha.rules, from planned, the framework's (unknown for a VM that
// changes, else the state's), and decided, what the plan computes (decidedRules), asked only
// where needed: it may wait for the plan's other VMs. A VM whose change cannot alter its rules
// (same, RulesInputsSame), or that does not change, keeps the prior block's (the state's)
// unless the last refresh found a write due; otherwise the rules the plan decided, and where it
// could not, unknown.
func PlannedRules(planned types.List, prior *HAModel, due, same bool, decided func() types.List) types.List {
	if same && !due && prior != nil && !prior.Rules.IsUnknown() && !prior.Rules.IsNull() {
		return prior.Rules
	}
	if rules := decided(); !rules.IsUnknown() {
		return rules
	}
	if due {
		return types.ListUnknown(scheduling.HARuleType)
	}
	return planned
}

// knownRules makes ha.rules known for the state after a failed write left it unknown.
func (h *HAModel) knownRules() {
	if h != nil && h.Rules.IsUnknown() {
		h.Rules = rulesValue(nil)
	}
}

// readHARules refreshes ha.rules: the enabled rules of this provider that hold the VM.
// An import (imported) also reads failover from them: strict when the provider's rules hold
// the VM in a strict node rule or a negative rule, which only failover = "strict" writes.
func (r *Resource) readHARules(ctx context.Context, m *Model, diags *diag.Diagnostics, imported bool) {
	if m.HA == nil {
		return
	}
	view, err := r.Data.HA.Read(ctx, r.Data.Client, time.Now().Add(-r.Data.MaxAge))
	if err != nil {
		diags.AddError("Cannot read the HA rules", err.Error())
		return
	}
	vmid := int(m.VMID.ValueInt64())
	var held []scheduler.HARule
	for _, rule := range view.Rules.Rules {
		if strings.HasPrefix(rule.Name, harules.Prefix) && !rule.Disabled && slices.Contains(rule.VMIDs, vmid) {
			held = append(held, rule)
			if imported && (rule.Strict || rule.Affinity == scheduler.HANegative) {
				m.HA.Failover = types.StringValue(harules.FailoverStrict)
			}
		}
	}
	m.HA.Rules = scheduling.HARulesValue(held)
}

// notePlanned tells the change set that the VM is planned (changeset.Set.Planned) and, where
// its change may alter the HA rules of its peers, what the change is: a create, a destroy, a
// move (a changed or unknown node), a change of its tags, of its HA rule mode or failover, or
// of what its own rules are computed from (RulesInputsSame). It runs first in the plan, before
// any wait, so that the VMs whose rules wait for the plan's others (PeersChange) see it.
func (r *Resource) notePlanned(ctx context.Context, req resource.ModifyPlanRequest, diags *diag.Diagnostics) {
	var plan, state *Model
	var d diag.Diagnostics
	if !req.Plan.Raw.IsNull() {
		plan = new(Model)
		d.Append(req.Plan.Get(ctx, plan)...)
	}
	if !req.State.Raw.IsNull() {
		state = new(Model)
		d.Append(req.State.Get(ctx, state)...)
	}
	if d.HasError() {
		if plan == nil {
			diags.Append(d...) // a destroy: the plan reads no other model
		}
		// Otherwise the plan reports it; counted as any change meanwhile.
		r.Data.Changes.Planned(&changeset.RuleChange{AnyTags: true})
		return
	}
	change := &changeset.RuleChange{}
	for _, m := range []*Model{state, plan} {
		if m == nil {
			continue
		}
		if !m.VMID.IsUnknown() && !m.VMID.IsNull() {
			change.VMID = int(m.VMID.ValueInt64())
		}
		tags, known := scheduling.KnownStrings(ctx, m.Tags, &d)
		change.Tags, change.AnyTags = append(change.Tags, tags), change.AnyTags || !known
	}
	if plan != nil && state != nil && !r.changesPeers(ctx, plan, state) {
		change = nil
	}
	r.Data.Changes.Planned(change)
}

// changesPeers tells whether an update may alter the HA rules of the VM's peers: it moves, its
// tags change (the groups it counts in), or, while it has rules, its rule mode, failover or what
// its rules are computed from (a pair shares one node rule).
func (r *Resource) changesPeers(ctx context.Context, plan, state *Model) bool {
	if !plan.Node.Equal(state.Node) || !plan.Tags.Equal(state.Tags) || ruleMode(plan.HA) != ruleMode(state.HA) {
		return true
	}
	if ruleMode(plan.HA) == haRulesLeave {
		return false // in no rule, before and after
	}
	var d diag.Diagnostics
	planned, _, complete := r.Request(ctx, plan, false, &d)
	return !complete || d.HasError() || !r.RulesInputsSame(ctx, plan, state, planned, RulesRecord{})
}

// rulePeers matches the changes of the plan the rules of the VM vmid are computed from: the VMs
// its required terms and DoNotSchedule spreads select by tag, and the VMs of the rules it is in
// (rules, the cluster's) or is to be in (want): a pair's partner, a group rule's members.
func rulePeers(p haPolicy, want []harules.Rule, rules []scheduler.HARule, vmid int) func(changeset.RuleChange) bool {
	var groups []scheduler.TagSelector
	for _, t := range slices.Concat(p.req.VMAffinity, p.req.VMAntiAffinity) {
		if t.Weight == 0 {
			groups = append(groups, t.Group())
		}
	}
	for _, c := range p.req.TopologySpread {
		if c.WhenUnsatisfiable == "DoNotSchedule" {
			groups = append(groups, c.Group())
		}
	}
	in := map[int]bool{}
	for _, w := range want {
		for _, id := range w.VMIDs {
			in[id] = true
		}
	}
	for _, rule := range rules {
		if strings.HasPrefix(rule.Name, harules.Prefix) && slices.Contains(rule.VMIDs, vmid) {
			for _, id := range rule.VMIDs {
				in[id] = true
			}
		}
	}
	return func(c changeset.RuleChange) bool {
		return c.VMID != 0 && in[c.VMID] || slices.ContainsFunc(groups, c.SelectedBy)
	}
}

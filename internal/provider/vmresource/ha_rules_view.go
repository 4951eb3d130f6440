package vmresource

// ha.rules: the HA rules of this provider that hold the VM, as objects (scheduling.HARuleType),
// as the plan shows them, an apply records them and a refresh or an import reads them.

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

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
// VM leaves its rules (none), or keeps only a node rule of its own that its node-level rules
// alone make. Unknown where a peer's placement or membership goes into a rule (a group's
// resource or shared rule, classes after where the group's members run): a peer of the same
// apply, created or changed before this VM is planned again at apply, may change it, and a
// value the first plan had known must come out the same ("Provider produced inconsistent final
// plan").
func decidedRules(mode haRuleMode, p haPolicy, want []harules.Rule, vmid int) types.List {
	unknown := types.ListUnknown(scheduling.HARuleType)
	// Under either failover a spread ranks the nodes by where its members run, whatever its key.
	spread := slices.ContainsFunc(p.req.TopologySpread, func(c scheduler.SpreadConstraint) bool { return c.WhenUnsatisfiable == "DoNotSchedule" })
	if vmid == 0 || mode == haRulesOff || mode == haRulesKeep && (p.hasGroups() || p.hasDomains() || spread) {
		return unknown
	}
	for _, w := range want {
		if w.Type != scheduler.HANodeAffinity || w.Shared || !slices.Equal(w.VMIDs, []int{vmid}) {
			return unknown
		}
	}
	return rulesValue(want)
}

// PlannedRules is the plan's ha.rules, from planned, the framework's (unknown for a VM that
// changes, else the state's), and decided, what the plan computed (decidedRules). A VM whose
// change cannot alter its rules (same, RulesInputsSame), or that does not change, keeps the
// prior block's (the state's) unless the last refresh found a write due; otherwise the rules
// the plan decided, and where it could not, unknown. Where the cluster's rules of the moment
// would go in, it is unknown: Terraform plans a change again at apply, right before applying
// it, when peers of the same apply may have written, and a value the first plan had known must
// come out the same ("Provider produced inconsistent final plan").
func PlannedRules(planned types.List, prior *HAModel, due, same bool, decided types.List) types.List {
	switch {
	case same && !due && prior != nil && !prior.Rules.IsUnknown() && !prior.Rules.IsNull():
		return prior.Rules
	case !decided.IsUnknown():
		return decided
	case due:
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

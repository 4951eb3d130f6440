package vmresource

// The HA rules qemuscheduler_vm keeps for a VM with an ha block (ha.placement_rules, ha.rules):
// the PVE 9 rules that make the HA manager honour the VM's hard placement rules when it
// recovers or moves the VM (internal/harules computes them). They are written once the HA
// resource exists, checked at plan time against what PVE would refuse, compared at every plan
// (a rule deleted or changed outside is a change of ha.rules), and left before the HA resource
// goes. Writes carry the rules' digest and start over on a conflict, so concurrent applies
// into one group lose no member.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/harules"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/nodelabels"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// maxHARuleAttempts bounds how often a VM's rules are read and written again after another
// writer came first: three applies into one group need a few.
const maxHARuleAttempts = 20

// haRuleMode is what a VM does with its rules.
type haRuleMode int

const (
	// haRulesKeep: the rules of its hard placement rules.
	haRulesKeep haRuleMode = iota
	// haRulesOff (placement_rules = false): no rule of its own; the group rules peers put it
	// in are theirs.
	haRulesOff
	// haRulesLeave: out of every rule of this provider, before its HA resource goes or while
	// HA ignores it.
	haRulesLeave
)

// ruleMode is the mode the block asks for.
func ruleMode(h *HAModel) haRuleMode {
	switch {
	case !HAManaged(h):
		return haRulesLeave
	case h.PlacementRules.Equal(types.BoolValue(false)):
		return haRulesOff
	}
	return haRulesKeep
}

// haUpdateMode is the mode of an update from the block prior to the block h: a VM whose rules
// are turned off leaves the rules it was in, which nobody else may keep (every member of its
// group turned off); a peer that keeps its rules puts it back into the group's rule.
func haUpdateMode(h, prior *HAModel) haRuleMode {
	mode := ruleMode(h)
	if mode == haRulesOff && prior != nil && ruleMode(prior) == haRulesKeep {
		return haRulesLeave
	}
	return mode
}

// haPolicy is what a VM's wanted rules are computed from.
type haPolicy struct {
	Profile *scheduler.Profile
	req     scheduler.Request
	Name    string
	// node is where the VM is about to run, "" for where the cluster view shows it.
	node string
	// placing says the provider places the VM on node (a create, a pinned move): its new
	// home, which its rules are computed from (harules.Home).
	placing bool
	// strict is ha.failover = "strict".
	strict bool
}

// haSnapshot is the cluster view a VM's rules are computed from: read after since when the
// rules depend on other guests (group members registered before this VM must show) or on
// where the VM runs (a domain it must stay in, which a migration of this apply may have
// changed); else the shared view, for the nodes alone.
func (r *Resource) haSnapshot(ctx context.Context, p haPolicy, since time.Time) (scheduler.Snapshot, error) {
	if !p.hasGroups() && !p.hasDomains() {
		since = time.Now().Add(-r.Data.MaxAge)
	}
	return r.Data.SnapshotSince(ctx, since)
}

// hasGroups tells whether the policy has required terms over nodes, whose groups' members
// make resource-affinity rules.
func (p haPolicy) hasGroups() bool {
	return slices.ContainsFunc(p.req.VMAntiAffinity, requiredOver(true)) || slices.ContainsFunc(p.req.VMAffinity, requiredOver(true))
}

// hasDomains tells whether the policy keeps the VM in the domain it runs in: required terms
// over another topology key.
func (p haPolicy) hasDomains() bool {
	spread := func(c scheduler.SpreadConstraint) bool {
		return c.WhenUnsatisfiable == "DoNotSchedule" && c.TopologyKey != "node"
	}
	return slices.ContainsFunc(p.req.VMAntiAffinity, requiredOver(false)) || slices.ContainsFunc(p.req.VMAffinity, requiredOver(false)) ||
		slices.ContainsFunc(p.req.TopologySpread, spread)
}

// requiredOver matches required terms over nodes (node true) or over another key.
func requiredOver(node bool) func(scheduler.VMGroupTerm) bool {
	return func(t scheduler.VMGroupTerm) bool { return t.Weight == 0 && (t.TopologyKey == "node") == node }
}

// wantedRules are the rules the VM vmid (running on node, "" before it exists) must be in,
// and, to keep, the nodes of its current rules that lost a key the rules need (harules.LostKeys):
// then want must not be written.
func wantedRules(mode haRuleMode, p haPolicy, vmid int, node string, snap scheduler.Snapshot, v config.HAView) ([]harules.Rule, []harules.Lost) {
	switch mode {
	case haRulesKeep:
		held := harules.Held(vmid, p.req.Tags, p.strict, v.Rules.Rules, snap, v.Managed)
		in := harules.Input{VMID: vmid, Name: p.Name, Node: node, Request: p.req, Snap: snap, Managed: v.Managed,
			PolicyNodes: harules.NodeRuleNodes(p.Profile, snap, p.req), Strict: p.strict, Lenient: harules.Lenient(v.Rules.Rules),
			PairedBy: pairedBy(vmid, held), Placing: p.placing && node != "", Rules: v.Rules.Rules}
		want := harules.Want(in)
		home := node
		if !in.Placing {
			home = harules.Home(vmid, node, v.Rules.Rules)
		}
		want = keepDownNodes(want, v.Rules.Rules, snap, vmid, home)
		for _, held := range held {
			if !slices.ContainsFunc(want, func(w harules.Rule) bool { return strings.EqualFold(w.Name, held.Name) }) {
				want = append(want, held)
			}
		}
		sort.Slice(want, func(i, j int) bool { return want[i].Name < want[j].Name })
		return want, harules.LostKeys(in, v.Rules.Rules)
	case haRulesOff:
		var kept []harules.Rule
		for _, r := range v.Rules.Rules {
			if strings.HasPrefix(r.Name, harules.Prefix) && r.Type == scheduler.HAResourceAffinity && slices.Contains(r.VMIDs, vmid) {
				kept = append(kept, harules.Rule{HARule: r})
			}
		}
		return kept, nil
	}
	return nil, nil
}

// lostKeyMessages explain each lost key (wantedRules) of the VM name (vmid), with the node's
// Notes lines that were ignored or skipped and how to give the node its label back.
func lostKeyMessages(lost []harules.Lost, name string, vmid int, np *config.NodePolicy) []string {
	out := make([]string, 0, len(lost))
	for _, l := range lost {
		domain, example := "its domain", l.Key+"=<value>"
		if l.Value != "" {
			domain, example = l.Key+"="+l.Value, l.Key+"="+l.Value
		}
		notes := fmt.Sprintf("no provider node block and no Notes line %s gives it", nodelabels.NotesLabels)
		if problems := np.NotesProblems(l.Node); len(problems) > 0 {
			notes = "its Notes: " + strings.Join(problems, "; ")
		}
		anew := fmt.Sprintf("would leave %s out, and a failover could not use it", l.Node)
		if l.VMNode {
			anew = fmt.Sprintf("would keep the VM in no domain of %s and list every node, and a failover could put it anywhere", l.Key)
		}
		out = append(out, fmt.Sprintf("HA rule %s keeps VM %s (%d) in %s (%s) and lists node %s, which has no label %s now (%s). "+
			"Written anew, the rule %s; it is left unchanged. "+
			"Give %s its label back: fix its Notes in the PVE UI (Node > Notes), a line such as `%s %s`, or set it in the provider's node block for %s. "+
			"To take the node out of the domain on purpose, give it another value of %s. %s",
			l.Rule, name, vmid, domain, l.Policy, l.Node, l.Key, notes, anew, l.Node, nodelabels.NotesLabels, example, l.Node, l.Key, changeset.DestroyAnyway))
	}
	return out
}

// Refusals are the problems PVE would refuse the written rules for, one message each naming
// the rule, the VM policy it keeps and the rule it conflicts with.
func Refusals(changes []harules.Change, cur []scheduler.HARule, nodes int) []string {
	after := harules.Apply(cur, changes)
	var out []string
	for _, p := range harules.Check(after, nodes) {
		for _, c := range changes {
			if c.Op != harules.Delete && strings.EqualFold(c.Rule.Name, p.Rule) {
				policy := "leaving it"
				if c.Policy != "" {
					policy = "keeping " + c.Policy
				}
				out = append(out, fmt.Sprintf("HA rule %s (%s): %s", p.Rule, policy, p))
				break
			}
		}
	}
	return out
}

// planHARules checks at plan time the rules the VM would be written into against what PVE
// refuses, and plans ha.rules (plannedRules): unknown when the last refresh found a write due
// (rec.due), such as after a rule was deleted or changed outside Terraform. It returns which of
// the wanted rules the VM's placement breaks (ruleBreaks).
func (r *Resource) planHARules(ctx context.Context, resp *resource.ModifyPlanResponse, plan, state *Model, creating bool, rec RulesRecord,
	snap scheduler.Snapshot, p haPolicy) (breaks string) {
	if plan.HA == nil || plan.HA.PlacementRules.IsUnknown() {
		return ""
	}
	view, err := r.Data.HA.Read(ctx, r.Data.Client, time.Now().Add(-r.Data.MaxAge))
	if err != nil {
		resp.Diagnostics.AddError("Cannot read the HA rules", err.Error())
		return ""
	}
	vmid, node := int(plan.VMID.ValueInt64()), ""
	if !creating {
		node, _ = proxmox.LocateIn(snap, vmid)
		// A changed pin moves the VM: its apply writes the rules for the target
		// (haBeforeMove), and PVE's checks below must see those.
		if kit.Known(plan.Node) && !plan.Node.Equal(state.Node) {
			node, p.placing = plan.Node.ValueString(), true
		}
	} else if plan.VMID.IsUnknown() {
		vmid = 0 // not chosen yet: no guest has it
	}
	mode := haUpdateMode(plan.HA, state.HA)
	want, lost := wantedRules(mode, p, vmid, node, snap, view)
	for _, msg := range lostKeyMessages(lost, p.Name, vmid, r.Data.Nodes) {
		resp.Diagnostics.AddAttributeError(path.Root("ha").AtName("placement_rules"), "A node lost a label the VM's HA rule needs", msg)
	}
	if !view.Rules.Supported {
		// A required term over nodes wants a rule once its group has two HA members, which the
		// create of a group's VMs has not yet: its plan warns all the same.
		if mode == haRulesKeep && (len(want) > 0 || p.hasGroups()) {
			r.Data.HA.WarnPVE8(&resp.Diagnostics)
		}
		want = nil
	}
	changes := harules.Changes(vmid, want, view.Rules.Rules, view.Managed)
	for _, msg := range harules.NoTarget(vmid, p.Name, want, snap, harules.NodeRuleNodes(p.Profile, snap, p.req)) {
		resp.Diagnostics.AddAttributeWarning(path.Root("ha").AtName("failover"), "An HA rule leaves the VM no failover target",
			msg+`. To let the HA manager run it elsewhere when that happens, set ha.failover = "preferred"; or allow the VM more nodes.`)
	}
	for _, msg := range Refusals(changes, view.Rules.Rules, len(snap.Nodes)) {
		resp.Diagnostics.AddAttributeError(path.Root("ha").AtName("placement_rules"), "Proxmox VE would refuse an HA rule for this VM",
			msg+". Change the VM's placement policy or the conflicting rule, or set ha.placement_rules = false. "+changeset.DestroyAnyway)
	}
	if creating {
		return ""
	}
	if haPinMoves(plan, state) && config.HasResourceAffinity(view.Rules.Rules) {
		// Only for a changed pin: the peers the HA manager is moving, one read.
		if snap.HAMoves, err = r.Data.Client.HAMoves(ctx); err != nil {
			resp.Diagnostics.AddError("Cannot read the HA manager status", err.Error())
			return ""
		}
	}
	snap.HAFailbackOff = view.FailbackOff
	CheckHAMove(snap, view.Rules.Rules, plan, state, vmid, &resp.Diagnostics)
	same := r.RulesInputsSame(ctx, plan, state, p.req, rec)
	planned := PlannedRules(plan.HA.Rules, state.HA, rec.due, same, decidedRules(mode, p, want, vmid))
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("ha").AtName("rules"), planned)...)
	return ruleBreaks(want, snap, vmid, node)
}

// RulesInputsSame tells whether an update leaves alone everything the VM's rules are computed
// from: its mode (HA membership, placement_rules), its profile and plugin config, and the
// parts of its scheduling request (planned, the plan's) the rules read — its terms, its
// node-level rules, its size in vCPUs, its name and pin, and its tags where a group selects by
// them (its own terms, or the terms the last refresh found in the cluster's placement
// records, rec.groupTags). Its rules then plan as the state has them: an update of the
// description, the memory or a tag no group reads shows no change of ha.rules. It reads the
// configuration, the state and the private state alone, never the cluster: the plan
// Terraform makes again at apply, after peers wrote, must come out the same. What peers of
// the same apply do to the group the VM records with its next refresh, as an untouched
// member does.
func (r *Resource) RulesInputsSame(ctx context.Context, plan, state *Model, planned scheduler.Request, rec RulesRecord) bool {
	if state.HA == nil || ruleMode(plan.HA) != ruleMode(state.HA) || !plan.HA.Failover.Equal(state.HA.Failover) || plan.Tags.IsUnknown() {
		return false
	}
	if !plan.Profile.Equal(state.Profile) || !plan.PluginConfigYAML.Equal(state.PluginConfigYAML) || !reflect.DeepEqual(plan.PluginConfig, state.PluginConfig) {
		return false
	}
	var d diag.Diagnostics
	prior, _, complete := r.Request(ctx, state, false, &d)
	before, after := ruleInputs(prior), ruleInputs(planned)
	if rec.TagsKnown && !groupTagChanged(before.Tags, after.Tags, slices.Concat(rec.GroupTags, harules.GroupTags(planned.VMAffinity, planned.VMAntiAffinity))) {
		before.Tags, after.Tags = nil, nil
	}
	return complete && !d.HasError() && reflect.DeepEqual(before, after)
}

// groupTagChanged tells whether a tag that groups select by (groupTags, lower case) is in one
// of the tag lists before and after and not in the other.
func groupTagChanged(before, after, groupTags []string) bool {
	has := func(list []string, tag string) bool {
		return slices.ContainsFunc(list, func(t string) bool { return strings.EqualFold(t, tag) })
	}
	for _, tag := range groupTags {
		if has(before, tag) != has(after, tag) {
			return true
		}
	}
	return false
}

// ruleInputs is req without what no HA rule reads: memory (NodeRuleNodes counts vCPUs alone),
// disks and storage.
func ruleInputs(req scheduler.Request) scheduler.Request {
	req.MemoryMiB, req.DiskBytes, req.Storage, req.CloneFrom = 0, 0, "", ""
	return req
}

// rulesDueKey is the private state's record that the last refresh found the VM's HA rules not
// as it wants them (rulesDue): its plan then plans ha.rules unknown, a change.
const rulesDueKey = "ha_rules_due"

// groupTagsKey is the private state's record, by the last refresh, of the tags the cluster's
// group terms select by (clusterGroupTags), a JSON list: a change of the VM's other tags moves
// it into or out of no group rule.
const groupTagsKey = "ha_group_tags"

// RulesRecord is what the last refresh recorded of the VM's rules in the private state.
type RulesRecord struct {
	// due: the rules need a write (rulesDueKey).
	due bool
	// GroupTags (groupTagsKey), known only when recorded: not before the VM's first refresh.
	GroupTags []string
	TagsKnown bool
}

// rulesRecordIn reads the records of rulesDueKey and groupTagsKey.
func rulesRecordIn(ctx context.Context, priv kit.PrivateState, diags *diag.Diagnostics) RulesRecord {
	raw, d := priv.GetKey(ctx, rulesDueKey)
	diags.Append(d...)
	rec := RulesRecord{due: string(raw) == "true"}
	raw, d = priv.GetKey(ctx, groupTagsKey)
	diags.Append(d...)
	rec.TagsKnown = len(raw) > 0 && json.Unmarshal(raw, &rec.GroupTags) == nil
	return rec
}

// setGroupTags records the tags the cluster's group terms select by; nil forgets them.
func setGroupTags(ctx context.Context, priv kit.PrivateState, tags []string, diags *diag.Diagnostics) {
	var raw []byte
	if tags != nil {
		raw, _ = json.Marshal(tags) // a list of strings always marshals
	}
	diags.Append(priv.SetKey(ctx, groupTagsKey, raw)...)
}

// clusterGroupTags are the tags the group terms of the guests' placement records select by
// (harules.GroupTags), this VM's own included; never nil.
func clusterGroupTags(snap scheduler.Snapshot) []string {
	out := []string{}
	for _, g := range snap.Guests {
		if g.Recorded != nil {
			out = append(out, harules.GroupTags(g.Recorded.Policy.VMAffinity, g.Recorded.Policy.VMAntiAffinity)...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// setRulesDue records whether the VM's rules need a write.
func setRulesDue(ctx context.Context, priv kit.PrivateState, due bool, diags *diag.Diagnostics) {
	var raw []byte
	if due {
		raw = []byte("true")
	}
	diags.Append(priv.SetKey(ctx, rulesDueKey, raw)...)
}

// readRulesDue, on a refresh, records whether the VM's rules need a write and the tags the
// cluster's groups select by (rulesDue).
func (r *Resource) readRulesDue(ctx context.Context, m *Model, priv kit.PrivateState, diags *diag.Diagnostics) {
	if m.HA == nil || diags.HasError() {
		return
	}
	due, tags, err := r.RulesDue(ctx, m)
	if err != nil {
		diags.AddError("Cannot read the HA rules", err.Error())
		return
	}
	setRulesDue(ctx, priv, due, diags)
	setGroupTags(ctx, priv, tags, diags)
}

// RulesDue tells whether the cluster's rules are not what the VM, as m has it, wants: a rule
// deleted or changed outside Terraform, a write that failed. A refresh decides it, for the
// plans that follow (plannedRules). A policy that cannot be read is no write due here: the
// plan of the same configuration reports why. groupTags are the tags the cluster's groups
// select by (clusterGroupTags; none where the VM keeps no rules, which no tag changes), nil
// when the policy cannot be read.
func (r *Resource) RulesDue(ctx context.Context, m *Model) (due bool, groupTags []string, err error) {
	mode := ruleMode(m.HA)
	var p haPolicy
	if mode == haRulesKeep {
		var d diag.Diagnostics
		var ok bool
		if p, ok = r.HAPolicy(ctx, m, &d); !ok {
			return false, nil, nil
		}
	}
	shared := time.Now().Add(-r.Data.MaxAge)
	s, err := r.haChanges(ctx, mode, p, int(m.VMID.ValueInt64()), shared, shared)
	return len(s.changes) > 0, clusterGroupTags(s.snap), err
}

// haSync is what a VM wants of the cluster's rules and the writes that bring them there, and
// the views they were computed from.
type haSync struct {
	view    config.HAView
	snap    scheduler.Snapshot
	want    []harules.Rule
	lost    []harules.Lost
	changes []harules.Change
}

// haChanges is what the VM vmid wants in mode under the policy p, from the HA rules read after
// rulesSince and, to keep, a view of the cluster read after since (haSnapshot). A cluster
// without rules (view.rules.Supported false) wants none.
func (r *Resource) haChanges(ctx context.Context, mode haRuleMode, p haPolicy, vmid int, rulesSince, since time.Time) (s haSync, err error) {
	if s.view, err = r.Data.HA.Read(ctx, r.Data.Client, rulesSince); err != nil || !s.view.Rules.Supported {
		return s, err
	}
	if mode == haRulesKeep {
		if s.snap, err = r.haSnapshot(ctx, p, since); err != nil {
			return s, err
		}
		// The VMs this process placed or will create count in their groups: else the first VMs
		// of a count would be written with rules that the next refresh finds changed.
		// The set first: a create decided in between is then in the ledger.
		s.snap = r.Data.Changes.Pending(s.snap)
		r.Data.Ledger.AddTo(&s.snap)
	}
	node := p.node
	if node == "" {
		node, _ = proxmox.LocateIn(s.snap, vmid)
	}
	s.want, s.lost = wantedRules(mode, p, vmid, node, s.snap, s.view)
	s.changes = harules.Changes(vmid, s.want, s.view.Rules.Rules, s.view.Managed)
	return s, nil
}

// ruleBreaks tells which wanted resource-affinity rules the VM vmid on node breaks with its
// peers where they run (a negative peer on its node, a positive one elsewhere): the HA manager
// migrates a service that breaks a rule, so writing such a rule moves the VM or a peer,
// although placement is otherwise sticky. "" when none does.
func ruleBreaks(want []harules.Rule, snap scheduler.Snapshot, vmid int, node string) string {
	var out []string
	for _, r := range want {
		if r.Type != scheduler.HAResourceAffinity || node == "" {
			continue
		}
		var with []string
		for _, m := range r.VMIDs {
			if at, err := proxmox.LocateIn(snap, m); err == nil && m != vmid && (r.Affinity == scheduler.HANegative) == (at == node) {
				with = append(with, fmt.Sprintf("VM %d on %s", m, at))
			}
		}
		if len(with) > 0 {
			out = append(out, fmt.Sprintf("HA rule %s (%s resource affinity) holds it with %s", r.Name, r.Affinity, strings.Join(with, ", ")))
		}
	}
	return strings.Join(out, "; ")
}

// haPinMoves tells a changed pin of a VM that stays HA-managed: the HA manager carries out
// the migration.
func haPinMoves(plan, state *Model) bool {
	return HAManaged(state.HA) && HAManaged(plan.HA) && kit.Known(plan.Node) && !plan.Node.Equal(state.Node)
}

// CheckHAMove fails the plan of a changed pin that the HA manager would refuse to carry out
// (the migration goes through it) or undo: a node outside a node-affinity rule other than the
// VM's own, or of a lower priority than one it can use (failback, unless off in
// snap.HAFailbackOff), next to a negative peer (or one the HA manager is moving there,
// snap.HAMoves), or away from its positive peers.
func CheckHAMove(snap scheduler.Snapshot, rules []scheduler.HARule, plan, state *Model, vmid int, diags *diag.Diagnostics) {
	target := plan.Node.ValueString()
	if !haPinMoves(plan, state) {
		return
	}
	where := func(id int) (string, string, bool) {
		node, err := proxmox.LocateIn(snap, id)
		return node, snap.HAMoves[id], err == nil
	}
	// The VM's own node rule is rewritten for the target before the move (haBeforeMove).
	if why := scheduler.HARefusal(&snap, harules.MoveConstraints(vmid, rules), vmid, target, where); why != "" {
		diags.AddAttributeError(path.Root("node"), "Cannot migrate to "+target,
			fmt.Sprintf("The HA manager would refuse to move VM %d to %s: %s. Choose another node, or change the rule. %s", vmid, target, why, changeset.DestroyAnyway))
	}
}

// syncHARules brings the cluster's rules to what the VM vmid wants in mode and records the
// ids it is in as m's ha.rules (m nil: the VM leaves its rules). Each attempt reads the rules
// and HA resources anew (and, to keep, a view of the cluster read after since, which shows the
// group's members registered before this VM), checks what PVE would refuse, and writes; a lost
// race starts over.
func (r *Resource) syncHARules(ctx context.Context, m *Model, vmid int, mode haRuleMode, p haPolicy, since time.Time) error {
	setRules := func(rules []harules.Rule) {
		if m != nil && m.HA != nil {
			m.HA.Rules = rulesValue(rules)
		}
	}
	setRules(nil)
	for attempt := 1; ; attempt++ {
		s, err := r.haChanges(ctx, mode, p, vmid, time.Now(), since)
		if err != nil || !s.view.Rules.Supported {
			return err
		}
		if lost := lostKeyMessages(s.lost, p.Name, vmid, r.Data.Nodes); len(lost) > 0 {
			return errors.New(strings.Join(lost, "; "))
		}
		if refused := Refusals(s.changes, s.view.Rules.Rules, len(s.snap.Nodes)); len(refused) > 0 && mode == haRulesKeep {
			return fmt.Errorf("the HA rules of VM %d would be refused by Proxmox VE: %s", vmid, strings.Join(refused, "; "))
		}
		done, err := r.writeHARules(ctx, s.changes, s.view.Rules.Digest)
		if err == nil && done {
			setRules(s.want)
			return nil
		}
		if err != nil && (!errors.Is(err, proxmox.ErrHARuleConflict) || attempt == maxHARuleAttempts) {
			return err
		}
	}
}

// writeHARules writes changes, the first update with the digest the rules were read with;
// done is false when a second update waits for a new read (the first changed the digest).
// PVE's create and delete take no digest: a create that finds the rule made meanwhile is a
// conflict and starts over, but a delete (the last-but-one member leaving) can drop a member
// that joined between the read and the delete. That VM's next plan then shows the change on
// ha.rules, and its apply writes the rule again.
func (r *Resource) writeHARules(ctx context.Context, changes []harules.Change, digest string) (done bool, err error) {
	c := r.Data.Client
	updated := false
	defer func() {
		if len(changes) > 0 {
			r.Data.HA.Drop()
		}
	}()
	for _, ch := range changes {
		switch ch.Op {
		case harules.Create:
			err = c.CreateHARule(ctx, ch.Rule)
		case harules.Delete:
			err = c.DeleteHARule(ctx, ch.Rule.Name)
		default:
			if updated {
				return false, nil
			}
			updated, err = true, c.UpdateHARule(ctx, ch.Rule, digest)
		}
		if err != nil {
			return false, err
		}
	}
	return true, nil
}

// HAPolicy is the plan's policy for the rules, read only when they are kept; ok is false
// when it cannot be had (diags say why). Its own diagnostics decide: an error the caller met
// before (a failed read back) must not stop the rules.
func (r *Resource) HAPolicy(ctx context.Context, m *Model, diags *diag.Diagnostics) (p haPolicy, ok bool) {
	if ruleMode(m.HA) != haRulesKeep {
		return haPolicy{}, true
	}
	var d diag.Diagnostics
	req, _, _ := r.Request(ctx, m, false, &d)
	profile := r.Data.Pipeline(ctx, &m.SchedulingModel, &d)
	diags.Append(d...)
	return haPolicy{Profile: profile, req: req, Name: m.Name.ValueString(), strict: failoverStrict(m.HA)},
		profile != nil && !d.HasError()
}

// haBeforeMove, before an update moves an HA-managed VM to a new pinned node, rewrites its
// rules for that node: its node rule follows the domain it moves to, and the HA manager must
// not take it back to the old one.
func (r *Resource) haBeforeMove(ctx context.Context, plan, state *Model, vmid int, diags *diag.Diagnostics) error {
	if !HAManaged(state.HA) || ruleMode(plan.HA) != haRulesKeep || !kit.Known(plan.Node) || plan.Node.Equal(state.Node) {
		return nil
	}
	p, ok := r.HAPolicy(ctx, plan, diags)
	if !ok {
		return errors.New("the VM's placement policy cannot be read (see the other errors)")
	}
	p.node, p.placing = plan.Node.ValueString(), true
	since := time.Now()
	if err := r.syncHARules(ctx, nil, vmid, haRulesKeep, p, since); err != nil {
		return err
	}
	r.syncPeers(ctx, vmid, p, since, diags)
	return nil
}

// syncPeers rewrites the rules of the peers whose classes count the VM vmid, just placed
// (syncPeerRules); a failure is a warning: the VM itself is as planned, and each peer's own
// plan shows what its rules still need.
func (r *Resource) syncPeers(ctx context.Context, vmid int, p haPolicy, since time.Time, diags *diag.Diagnostics) {
	if err := r.syncPeerRules(ctx, vmid, p, since); err != nil {
		diags.AddWarning("Cannot rewrite the HA rules of the VM's peers",
			fmt.Sprintf("VM %d has a new home, which the priority classes of the other members of its groups count; their rules could not be rewritten: %v. "+
				"The plan of each such VM shows the change of its ha.rules, and its next apply writes it.", vmid, err))
	}
}

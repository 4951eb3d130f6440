package datasources

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/rebalance"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// The values of move_existing.
const (
	moveNone       = "none"
	moveViolations = "violations"
)

type violationOut struct {
	Name types.String `tfsdk:"name"`
	Rule types.String `tfsdk:"rule"`
	Why  types.String `tfsdk:"why"`
}

// existingGuests finds the VM each request names: the only guest carrying its name
// (templates and this plan's assumed guests aside) whose VMID agrees with a pinned one; nil
// when there is none. A name several guests carry names none of them (warnSharedNames).
func existingGuests(snap scheduler.Snapshot, reqs []scheduler.Request) []*scheduler.Guest {
	byName := map[string]*scheduler.Guest{}
	count := map[string]int{}
	for i := range snap.Guests {
		if g := &snap.Guests[i]; !g.Template && !g.Assumed {
			byName[g.Name] = g
			count[g.Name]++
		}
	}
	out := make([]*scheduler.Guest, len(reqs))
	for i, r := range reqs {
		if g := byName[r.Name]; count[r.Name] == 1 && (r.VMID == 0 || r.VMID == g.VMID) {
			out[i] = g
		}
	}
	return out
}

// planned is what the rebalance planner decided for the existing VMs, by VMID: the moves, and
// why each VM that should move stays.
type planned struct {
	moves map[int]rebalance.Move
	kept  map[int]string
}

// moveViolations plans the moves of the existing VMs that break their rules with the
// rebalance data source's planner, defaults and HA view, limited to these VMs, and returns
// them with the snapshot as the moves leave it. ok is false after an error.
func (d *placementDataSource) moveViolations(ctx context.Context, snap scheduler.Snapshot, profile *scheduler.Profile, policy scheduler.Request,
	ex []*scheduler.Guest, perGroup int, diags *diag.Diagnostics) (decided planned, after scheduler.Snapshot, ok bool) {
	only := map[int]bool{}
	for _, g := range ex {
		if g != nil {
			only[g.VMID] = true
		}
	}
	in := rebalance.Input{Snapshot: snap, Profile: profile, Policy: policy, Profiles: d.data.RecordProfiles(), Only: only,
		RemovePolicyViolations: true, MaxMoves: defaultMaxMoves, MaxMovesPerNode: defaultMaxMovesPerNode, MaxMovesPerGroup: perGroup, MinGain: defaultMinGain,
		Disks: guestDisks(ctx, d.data)}
	if !readHAState(ctx, d.data, &in.Snapshot, diags) {
		return planned{}, snap, false
	}
	plan, err := rebalance.PlanMoves(in)
	if err != nil {
		diags.AddError("Cannot plan the moves of the existing VMs", err.Error())
		return planned{}, snap, false
	}
	for _, w := range plan.Warnings {
		diags.AddWarning("Placement record not fully honoured", w)
	}
	decided = planned{moves: map[int]rebalance.Move{}, kept: map[int]string{}}
	for _, mv := range plan.Moves {
		decided.moves[mv.VMID] = mv
	}
	for _, k := range plan.Kept {
		decided.kept[k.VMID] = k.Reason
	}
	// A copy: the snapshot's guests are shared with the provider's cached view.
	snap.Guests = append([]scheduler.Guest(nil), snap.Guests...)
	for i := range snap.Guests {
		if mv, moved := decided.moves[snap.Guests[i].VMID]; moved {
			snap.Guests[i].Node = mv.To
		}
	}
	return decided, snap, true
}

// answerExisting answers the existing VM g of request r where it runs, or where the planned
// moves take it (decided is empty when no move was asked), with the rules it breaks there; candidates only
// when asked (the first name's).
func answerExisting(checker *scheduler.Checker, snap scheduler.Snapshot, policy scheduler.Request, r scheduler.Request, g *scheduler.Guest,
	decided planned, withCandidates bool) (scheduler.Placement, []violationOut) {
	req := rebalance.GuestRequest(g, policy)
	var violations []violationOut
	for _, reason := range checker.Check(req, g.Node, g.VMID) {
		rule, why, found := strings.Cut(reason, ": ")
		if !found || strings.ContainsAny(rule, " ") {
			rule, why = "policy", reason
		}
		violations = append(violations, violationOut{Name: types.StringValue(r.Name), Rule: types.StringValue(rule), Why: types.StringValue(why)})
	}
	// Its disks are where they are (PreferStorage, read from its config) unless pinned.
	sr := req
	sr.Storage, sr.PreferStorage = r.Storage, r.PreferStorage
	storage := checker.Storage(sr, g.Node, g.VMID)
	p := scheduler.Placement{Name: r.Name, Node: g.Node, VMID: g.VMID, Storage: storage,
		Summary: fmt.Sprintf("%s: existing VM %d stays on %s, storage %s", r.Name, g.VMID, g.Node, storage)}
	mv, moved := decided.moves[g.VMID]
	switch {
	case moved:
		p.Summary = fmt.Sprintf("%s: existing VM %d moves from %s to %s (move_existing = %q): %s", r.Name, g.VMID, mv.From, mv.To, moveViolations, mv.Reason)
	case len(violations) == 0:
	case decided.kept[g.VMID] != "":
		p.Summary += "; it breaks its rules there (violations) and stays: " + decided.kept[g.VMID]
	case decided.moves == nil:
		p.Summary += fmt.Sprintf("; it breaks its rules there (violations): move_existing = %q moves it as qemuscheduler_rebalance would", moveViolations)
	default:
		p.Summary += "; it breaks its rules there (violations) since the planned moves"
	}
	if withCandidates {
		p.Candidates = inNodeOrder(snap, checker, req, g.VMID)
	}
	return p, violations
}

// inNodeOrder is every node's verdict for the existing VM, its own usage left out, in the
// snapshot's node order as a new VM's candidates are; none when a pre-filter rejects it.
func inNodeOrder(snap scheduler.Snapshot, checker *scheduler.Checker, req scheduler.Request, vmid int) []scheduler.Candidate {
	ranked, err := checker.Rank(req, vmid)
	if err != nil {
		return nil
	}
	byNode := make(map[string]scheduler.Candidate, len(ranked))
	for _, c := range ranked {
		byNode[c.Node] = c
	}
	out := make([]scheduler.Candidate, 0, len(ranked))
	for _, n := range snap.Nodes {
		if c, ok := byNode[n.Name]; ok {
			out = append(out, c)
		}
	}
	return out
}

// decide answers every name: the existing VMs where they run (or where move_existing moves
// them), the others placed with the plan's other placement data sources, whose refusal is the
// error; other failures are in diags.
func (d *placementDataSource) decide(ctx context.Context, m *placementModel, snap scheduler.Snapshot, profile *scheduler.Profile,
	reqs []scheduler.Request, diags *diag.Diagnostics) (scheduler.Decision, []violationOut, error) {
	ex := existingGuests(snap, reqs)
	policy, _ := m.Request(ctx, diags) // a read only runs on a known config
	d.data.WithDefaults(m.Profile, &policy)
	var decided planned
	if m.MoveExisting.ValueString() == moveViolations && anyGuest(ex) {
		var ok bool
		if decided, snap, ok = d.moveViolations(ctx, snap, profile, policy, ex, int(int64Or(m.MaxMovesPerGroup, defaultMaxMovesPerGroup)), diags); !ok {
			return scheduler.Decision{}, nil, nil
		}
		ex = existingGuests(snap, reqs) // the same guests, on the nodes the moves take them to
	}
	var fresh []scheduler.Request
	for i, r := range reqs {
		switch {
		case ex[i] == nil:
			fresh = append(fresh, r)
		case r.Node != "" && r.Node != ex[i].Node:
			diags.AddAttributeWarning(path.Root("node"), fmt.Sprintf("%q exists on %s: node pins new VMs only", r.Name, ex[i].Node),
				fmt.Sprintf("VM %d %q runs on %s and is answered there, not on %s. To move it, set the node of the resource that manages it, "+
					"or let move_existing = \"violations\" move it when it breaks its rules; to place a new VM on %s, give it a new name.",
					ex[i].VMID, r.Name, ex[i].Node, r.Node, r.Node))
		}
	}
	var placed scheduler.Decision
	if len(fresh) > 0 {
		var err error
		// Decided with the plan's other placement data sources: distinct VMIDs and capacity.
		if placed, err = d.data.Changes.Read(ctx, snap, profile, fresh); err != nil {
			return scheduler.Decision{}, nil, err
		}
	}
	checker := profile.NewChecker(&snap)
	violations := []violationOut{}
	out := scheduler.Decision{Placements: make([]scheduler.Placement, len(reqs))}
	for i, r := range reqs {
		if ex[i] == nil {
			out.Placements[i], placed.Placements = placed.Placements[0], placed.Placements[1:]
			continue
		}
		p, v := answerExisting(checker, snap, policy, r, ex[i], decided, i == 0)
		out.Placements[i] = p
		violations = append(violations, v...)
	}
	return out, violations, nil
}

func anyGuest(gs []*scheduler.Guest) bool {
	for _, g := range gs {
		if g != nil {
			return true
		}
	}
	return false
}

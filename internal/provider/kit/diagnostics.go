package kit

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// AddPlanError is addSchedulerError for a plan-time placement (a new VM, a data source read):
// a refusal also says how to destroy anyway, as terraform destroy plans the configuration
// first and a provider cannot tell that plan from any other. planned is the new VM whose plan
// this is ("" for a data source): when the plan's set fails on another of its VMs, the
// diagnostic, which Terraform shows on planned's resource, says why it names that one. hint
// ends a refusal (changeset.Set.Hint).
func AddPlanError(diags *diag.Diagnostics, err error, planned, hint string) {
	var ue *scheduler.UnschedulableError
	var ie *scheduler.InputError
	if errors.As(err, &ie) && ie.Cluster {
		copied := *ie
		copied.Message += ".\n\n" + changeset.DestroyAnyway
		err = &copied
	}
	if !errors.As(err, &ue) {
		AddSchedulerError(diags, err)
		return
	}
	var se *scheduler.SetError
	isSet := errors.As(err, &se)
	if (!isSet || se.Alone) && strings.HasPrefix(hint, changeset.PlanStops) {
		// Refused on its own (the plan's only new VM, or one that fits nowhere even without
		// the others): at plan time fewer VMs would not help, and the node reasons say whether
		// room would (a pinned node in maintenance has none to make).
		hint = changeset.AloneHint
	}
	detail := ue.Message + ExplainCandidates(ue.Candidates) + "\n\n" + hint
	// Terraform shows the error on planned's address: its header names that VM.
	header := ue.Request
	if isSet && planned != "" && planned != ue.Request {
		header = planned
		detail = fmt.Sprintf("%q is placed together with the plan's other new VMs, all or nothing, and they do not all fit; below, why %q does not.\n\n%s",
			planned, ue.Request, detail)
	}
	diags.AddError("No placement for "+quoteOr(header, "the VM"), detail)
}

// AddSchedulerError turns a scheduler error into a diagnostic on the attribute to blame.
func AddSchedulerError(diags *diag.Diagnostics, err error) {
	AddSchedulerErrorAt(diags, path.Empty(), err)
}

// AddSchedulerErrorAt is addSchedulerError for attributes nested under base (a profile block).
func AddSchedulerErrorAt(diags *diag.Diagnostics, base path.Path, err error) {
	var ie *scheduler.InputError
	var ue *scheduler.UnschedulableError
	switch {
	case errors.As(err, &ie):
		p := base.AtName(ie.Attribute)
		if ie.Attribute == "annotations" && ie.Key != "" {
			p = p.AtMapKey(ie.Key)
		}
		diags.AddAttributeError(p, "Invalid "+ie.Attribute, ie.Message)
	case errors.As(err, &ue):
		diags.AddError("No placement for "+quoteOr(ue.Request, "the VM"), ue.Message+ExplainCandidates(ue.Candidates))
	default:
		diags.AddError("Scheduling failed", err.Error())
	}
}

func quoteOr(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return `"` + s + `"`
}

func ExplainCandidates(cands []scheduler.Candidate) string {
	if len(cands) == 0 {
		return ""
	}
	out := "\n\nPer node:"
	for _, c := range cands {
		out += "\n  " + c.Node + ": "
		if c.Feasible {
			out += "feasible, score " + scheduler.FormatNumber(c.Score)
			continue
		}
		for i, r := range c.Reasons {
			if i > 0 {
				out += "; "
			}
			out += r
		}
	}
	return out
}

// AddSetError reports a new VM's refused plan (addPlanError), reduce saying what to place fewer
// of. Every new VM the set refuses fails its plan with the set's explanation, and Terraform
// shows each: the first is reported in full, the others point at it (count = 10 past what
// fits showed seven copies of the same 40 lines).
func AddSetError(diags *diag.Diagnostics, c *changeset.Set, err error, planned, reduce string) {
	var ue *scheduler.UnschedulableError
	if c.ReportedBefore(err) && errors.As(err, &ue) {
		diags.AddError("No placement for "+quoteOr(planned, "the VM"),
			fmt.Sprintf("%q is placed together with the plan's other new VMs, all or nothing, and they do not all fit: another error of this "+
				"plan, on another of them, explains why %q does not and what to do.", planned, ue.Request))
		return
	}
	AddPlanError(diags, err, planned, c.Hint(reduce))
}

// CheckNodeExists fails the plan on a pinned node the cluster does not have: a typo, not a
// full cluster, so not a placement error that says to make room.
func CheckNodeExists(node string, snap scheduler.Snapshot, diags *diag.Diagnostics) {
	if slices.ContainsFunc(snap.Nodes, func(n scheduler.Node) bool { return n.Name == node }) {
		return
	}
	names := make([]string, len(snap.Nodes))
	for i, n := range snap.Nodes {
		names[i] = n.Name
	}
	diags.AddAttributeError(path.Root("node"), "Node does not exist",
		fmt.Sprintf("node = %q: the cluster has no such node (nodes: %s). Fix the name, or remove node to let the scheduler choose. %s",
			node, ListOrNone(names), changeset.DestroyAnyway))
}

package changeset

import (
	"errors"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/planhints"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// PlanStops begins every refusal's hint that may come from a plan (not the apply's hint, once
// this process has created VMs). Terraform plans each create again at apply, just before it,
// and a provider cannot tell that plan from terraform plan's: the hint says what holds in
// each, since at apply the creates of the VMs that still fit go on while this one is refused.
const PlanStops = "If this is a plan (terraform plan, tofu plan), or the plan step of an apply, nothing has been created. "

// What a refused placement can place fewer of: a qemuscheduler_vm's new VMs, or the names a
// qemuscheduler_placement data source places.
const (
	ReduceNewVMs = "the plan's new VMs (count, for_each)"
	ReduceNames  = "the names the plan's qemuscheduler_placement data sources place (their names, or their count)"
	ReduceEither = "the plan's new VMs (count, for_each) or the names of its qemuscheduler_placement data sources"
)

// DestroyHint is what a refused set adds, reduce saying what to place fewer of, since
// terraform destroy plans the configuration first and a provider cannot tell that plan from
// any other.
func DestroyHint(reduce string) string {
	return PlanStops + "Reduce " + reduce + " or make room, then plan again. " + Replanned + " " + DestroyAnyway
}

// AloneHint replaces destroyHint when the VM fits on no node even alone.
const AloneHint = PlanStops + Replanned + " " + DestroyAnyway

// Replanned is the part of a refusal for the apply: Terraform plans each create again just
// before it, and that plan cannot be told from the first one either.
const Replanned = "If this is the apply of a plan that passed, the cluster changed since that plan: the VMs that still fit are created (they stay in the state), the others are not."

// ApplyHint replaces destroyHint in an apply that has created VMs already: the cluster changed
// since its plan.
func ApplyHint(reduce string) string {
	return "The cluster changed since the plan: the VMs this apply created so far stay in the state, and the rest are not created. " +
		"Make room or reduce " + reduce + ", then apply again; or " + DestroyRefreshFalse + " to remove what was created."
}

// NoPlanHint replaces applyHint in an apply that found no placements of its plan: its creates
// beyond the first wave were decided as they came, so an earlier one may have taken the room
// the plan gave this one, whether or not the cluster changed.
func NoPlanHint(reduce string) string {
	return "This apply found no placements kept by its plan (a saved plan applied on another machine, or after " + planhints.DirEnv + " changed), " +
		"so its creates beyond the first wave were decided as they came and an earlier one may have taken the room the plan gave this VM; " +
		"or the cluster changed since the plan. The VMs this apply created so far stay in the state: apply again, which places the rest beside " +
		"them if they fit; else make room or reduce " + reduce + ", or " + DestroyRefreshFalse + " and apply again keeping the plan's " +
		"placements: set " + planhints.DirEnv + " to a directory kept with the plan file for both commands, or apply with -parallelism at least " +
		"the number of new VMs."
}

// ReportedBefore tells whether the set's refusal err (a SetError) was reported before, and
// marks it reported: every new VM the set refuses fails its plan with the set's explanation,
// and the first is reported in full, the others point at it (addSetError).
func (c *Set) ReportedBefore(err error) bool {
	var ue *scheduler.UnschedulableError
	var se *scheduler.SetError
	if !errors.As(err, &se) || !errors.As(err, &ue) {
		return false
	}
	key := ue.Request + "\x00" + ue.Message
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := c.reported[key]
	c.reported[key] = true
	return seen
}

// Hint is the line a refused placement ends with, reduce (reduceNewVMs, reduceNames) saying
// what to place fewer of: applyHint once this process has decided a create (noPlanHint when it
// found no placements of its plan), destroyHint before.
func (c *Set) Hint(reduce string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.decided && c.noPlan:
		return NoPlanHint(reduce)
	case c.decided:
		return ApplyHint(reduce)
	}
	return DestroyHint(reduce)
}

// DestroyAnyway ends every plan-time error that the cluster's state (not the configuration's
// syntax) causes: terraform destroy plans the configuration first, and a provider cannot tell
// that plan from any other.
const DestroyAnyway = "If this is a destroy (terraform destroy, tofu destroy), which plans the configuration first, run " + DestroyRefreshFalse + "."

// DestroyRefreshFalse is the command that destroys without planning the configuration, the one
// place that names it, for both CLIs (CLI).
const DestroyRefreshFalse = "terraform destroy -refresh=false (tofu destroy -refresh=false under OpenTofu)"

// CLI names the command args of both CLIs, as every message that names a command does: the
// provider cannot tell whether Terraform or OpenTofu runs it.
func CLI(args string) string {
	return "terraform " + args + " (tofu " + args + " under OpenTofu)"
}

// TaintedPredecessor is the VM a new VM with a pinned VMID replaces when Terraform plans it as
// a plain create: a tainted VM's replacement comes with no prior state or private data, so the
// guest already holding the pinned VMID under the same name is taken as that VM, destroyed
// before its replacement is created. Any other guest of the VMID is not (0): the VMID is taken.
func TaintedPredecessor(snap scheduler.Snapshot, r scheduler.Request) int {
	if r.VMID == 0 {
		return 0
	}
	for _, g := range snap.Guests {
		if g.VMID == r.VMID && g.Name == r.Name && !g.Template && g.Type == scheduler.GuestQEMU {
			return g.VMID
		}
	}
	return 0
}

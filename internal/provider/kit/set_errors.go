package kit

import (
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// addSetError reports a new VM's refused plan (addPlanError), reduce saying what to place fewer
// of. Every new VM the set refuses fails its plan with the set's explanation, and Terraform
// shows each: the first is reported in full, the others point at it (count = 10 past what
// fits showed seven copies of the same 40 lines).
func AddSetError(diags *diag.Diagnostics, c *changeset.Set, err error, planned, reduce string) {
	var ue *scheduler.UnschedulableError
	if c.ReportedBefore(err) && errors.As(err, &ue) {
		diags.AddError("No placement for "+quoteOr(ue.Request, "the VM"),
			fmt.Sprintf("%q is placed together with the plan's other new VMs, all or nothing, and they do not all fit: another error of this "+
				"plan, on another of them, explains why %q does not and what to do.", planned, ue.Request))
		return
	}
	AddPlanError(diags, err, planned, c.Hint(reduce))
}

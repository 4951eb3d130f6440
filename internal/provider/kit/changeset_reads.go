package kit

import (
	"errors"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
)

// readReduce is what a refused read says to place fewer of: the data sources' names, or,
// when the plan's new VMs and the picks do not fit together (besidePicks), either.
func ReadReduce(err error) string {
	if errors.As(err, new(changeset.PickSetError)) {
		return changeset.ReduceEither
	}
	return changeset.ReduceNames
}

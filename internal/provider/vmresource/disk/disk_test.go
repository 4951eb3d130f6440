package disk

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// The disks of an existing VM that grow add their growth to their storage: a resized disk its
// difference, a new disk its size on the VM's storage, a shrink nothing.
func TestGrownDisks(t *testing.T) {
	d := func(slot, storage string, size int64) Model {
		return Model{Slot: types.StringValue(slot), Storage: types.StringValue(storage), Size: types.Int64Value(size)}
	}
	added := GrownDisks([]Model{d("scsi0", "local", 10), d("scsi1", "ceph", 50)},
		[]Model{d("scsi0", "local", 15), d("scsi1", "ceph", 40), {Slot: types.StringValue("scsi2"), Storage: types.StringUnknown(), Size: types.Int64Value(8)}}, "ceph")
	if fmt.Sprint(added) != fmt.Sprint(map[string]uint64{"local": 5 * scheduler.GiB, "ceph": 8 * scheduler.GiB}) {
		t.Errorf("grownDisks = %v, want 5 GiB on local (scsi0) and 8 on ceph (the new scsi2 on the VM's storage; scsi1's shrink adds nothing)", added)
	}
}

package kit

import (
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/types"
)

// storageOr is the storage a user-set storage attribute names, else fallback (the scheduler's
// choice): for a new disk, and for the disks of a full clone.
func StorageOr(v types.String, fallback string) string {
	if Known(v) {
		return v.ValueString()
	}
	return fallback
}

// diskStorage is the storage part of a disk value ("local-lvm:vm-100-disk-0,size=32G").
func DiskStorage(value string) string {
	s, _, _ := strings.Cut(value, ":")
	return s
}

package proxmox

import (
	"context"
	"regexp"
	"sort"
	"strings"
)

// diskKey matches the config keys that hold a VM's volumes.
var diskKey = regexp.MustCompile(`^(scsi|virtio|sata|ide|efidisk|tpmstate)\d+$`)

// DiskStorages lists, sorted, the storages a VM's volumes are on (CD-ROM drives and empty
// drives aside): what a live migration with local disks needs on the target node.
func (c *Client) DiskStorages(ctx context.Context, node string, vmid int) ([]string, error) {
	vm, err := c.GetVM(ctx, node, vmid)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for k, v := range vm.Config {
		if !diskKey.MatchString(k) || strings.Contains(v, "media=cdrom") {
			continue
		}
		volume, _, _ := strings.Cut(v, ",")
		storage, _, ok := strings.Cut(volume, ":")
		if !ok || seen[storage] {
			continue
		}
		seen[storage] = true
		out = append(out, storage)
	}
	sort.Strings(out)
	return out, nil
}

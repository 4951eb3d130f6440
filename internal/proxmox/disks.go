package proxmox

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// diskKey matches the config keys that hold a VM's volumes; containerDiskKey a container's.
var (
	diskKey          = regexp.MustCompile(`^(scsi|virtio|sata|ide|efidisk|tpmstate)\d+$`)
	containerDiskKey = regexp.MustCompile(`^(rootfs|mp\d+)$`)
)

// Disk is a guest's configured disk space on one storage.
type Disk struct {
	Storage string
	Bytes   uint64
}

// GuestDisks lists, by storage name, the storages a guest's volumes are on and their configured
// size (CD-ROM drives, empty drives and a container's bind mounts aside): what a migration
// with local disks needs on the target node. One request.
func (c *Client) GuestDisks(ctx context.Context, node string, vmid int, container bool) ([]Disk, error) {
	path, key := vmPath(node, vmid), diskKey
	if container {
		path, key = fmt.Sprintf("/nodes/%s/lxc/%d", node, vmid), containerDiskKey
	}
	var raw map[string]json.RawMessage
	if err := c.get(ctx, fmt.Sprintf("read the disks of guest %d on %s", vmid, node), path+"/config", nil, &raw); err != nil {
		return nil, err
	}
	bytes := map[string]uint64{}
	for k, v := range raw {
		text := stringify(v)
		if !key.MatchString(k) || strings.Contains(text, "media=cdrom") {
			continue
		}
		volume, opts, _ := strings.Cut(text, ",")
		storage, _, ok := strings.Cut(volume, ":")
		if !ok || strings.HasPrefix(volume, "/") {
			continue
		}
		bytes[storage] += volumeSize(opts)
	}
	out := make([]Disk, 0, len(bytes))
	for s, b := range bytes {
		out = append(out, Disk{s, b})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Storage < out[j].Storage })
	return out, nil
}

// driveKey matches the config keys of a VM's drives (EFI vars and TPM state aside).
var driveKey = regexp.MustCompile(`^(scsi|virtio|sata|ide)\d+$`)

// MainDiskStorage names the storage that holds most of a VM's disk space (CD-ROM drives, EFI
// vars and TPM state aside; a tie goes to the first name), "" when it has no disk: where a
// resource that gives a VM one storage for its disks (bpg's datastore_id) has them. It reads
// the config alone, one request.
func (c *Client) MainDiskStorage(ctx context.Context, node string, vmid int) (string, error) {
	config, err := c.vmConfig(ctx, fmt.Sprintf("read the disks of VM %d on %s", vmid, node), node, vmid)
	if err != nil {
		return "", err
	}
	return mainDiskStorage(config), nil
}

func mainDiskStorage(config map[string]string) string {
	bytes := map[string]uint64{}
	for k, v := range config {
		if !driveKey.MatchString(k) || strings.Contains(v, "media=cdrom") {
			continue
		}
		volume, opts, _ := strings.Cut(v, ",")
		storage, _, ok := strings.Cut(volume, ":")
		if !ok {
			continue
		}
		bytes[storage] += volumeSize(opts)
	}
	best := ""
	for s, b := range bytes {
		if best == "" || b > bytes[best] || b == bytes[best] && s < best {
			best = s
		}
	}
	return best
}

// volumeSize is the size=... option of a drive's options in bytes (PVE writes K, M, G or T;
// a bare number is bytes), 0 when absent or malformed.
func volumeSize(opts string) uint64 {
	for _, o := range strings.Split(opts, ",") {
		v, ok := strings.CutPrefix(o, "size=")
		if !ok || v == "" {
			continue
		}
		unit := map[byte]uint64{'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}[v[len(v)-1]]
		if unit == 0 {
			unit = 1
		} else {
			v = v[:len(v)-1]
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0
		}
		return uint64(f * float64(unit))
	}
	return 0
}

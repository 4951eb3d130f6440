package proxmox

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Release is a Proxmox VE release, major.minor, as GET /version reports it (pve-manager's
// version: "9.2.11"; PVE 7 wrote "7.4-3").
type Release struct{ Major, Minor int }

func (r Release) String() string { return fmt.Sprintf("%d.%d", r.Major, r.Minor) }

// AtLeast tells whether r is major.minor or later.
func (r Release) AtLeast(major, minor int) bool {
	return r.Major > major || r.Major == major && r.Minor >= minor
}

// HasAutoRebalance tells whether HA resources have the auto-rebalance flag: PVE 9.2 added it
// with the HA manager's automatic rebalancing (pve-ha-manager 5.2).
func (r Release) HasAutoRebalance() bool { return r.AtLeast(9, 2) }

// parseRelease reads major.minor at the start of pve-manager's version.
func parseRelease(version string) (Release, error) {
	major, rest, _ := strings.Cut(version, ".")
	end := strings.IndexFunc(rest, func(c rune) bool { return c < '0' || c > '9' })
	if end < 0 {
		end = len(rest)
	}
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(rest[:end])
	if err1 != nil || err2 != nil {
		return Release{}, fmt.Errorf("read the Proxmox VE version: %q is not major.minor[.patch]", version)
	}
	return Release{ma, mi}, nil
}

// Release reads the cluster's release (GET /version, open to every user) once per client.
func (c *Client) Release(ctx context.Context) (Release, error) {
	c.releaseMu.Lock()
	defer c.releaseMu.Unlock()
	if c.release != nil {
		return *c.release, nil
	}
	var v struct {
		Version string `json:"version"`
	}
	if err := c.get(ctx, "read the Proxmox VE version", "/version", nil, &v); err != nil {
		return Release{}, err
	}
	r, err := parseRelease(v.Version)
	if err != nil {
		return Release{}, err
	}
	c.release = &r
	return r, nil
}

package proxmox

import "testing"

// pve-manager's version as GET /version reports it, PVE 7 to 9, and the releases that have the
// HA resources' auto-rebalance flag (9.2 on).
func TestParseRelease(t *testing.T) {
	for _, tt := range []struct {
		version   string
		want      Release
		rebalance bool
	}{
		{"7.4-3", Release{7, 4}, false},
		{"8.2.4", Release{8, 2}, false},
		{"9.1.7", Release{9, 1}, false},
		{"9.2.11", Release{9, 2}, true},
		{"9.10.0", Release{9, 10}, true},
		{"10.0.1", Release{10, 0}, true},
	} {
		got, err := parseRelease(tt.version)
		if err != nil || got != tt.want || got.HasAutoRebalance() != tt.rebalance {
			t.Errorf("%q: %v (auto-rebalance %t) %v, want %v (%t)", tt.version, got, got.HasAutoRebalance(), err, tt.want, tt.rebalance)
		}
	}
	for _, bad := range []string{"", "9", "nine.two", "9.x"} {
		if r, err := parseRelease(bad); err == nil {
			t.Errorf("%q read as %v", bad, r)
		}
	}
}

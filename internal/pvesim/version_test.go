package pvesim_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// TestVersionPerRelease: GET /version answers with the release the cluster file stands for,
// in the shape of pve-manager's API2.pm version (PVE::pvecfg::version_info): exactly version
// (the pve-manager package version), release (x.y) and repoid (a 16-digit short git id);
// console only when datacenter.cfg sets it, which the simulated one does not. The node status
// reports the same build as pveversion ("pve-manager/VERSION/REPOID").
func TestVersionPerRelease(t *testing.T) {
	node := []pvesim.NodeSpec{{Name: "pve1", CPUs: 4, MemoryGiB: 8}}
	for _, tc := range []struct {
		name                     string
		cluster                  pvesim.Cluster
		version, release, repoid string
	}{
		{"PVE 8 (no ha_rules)", pvesim.Cluster{Nodes: node}, "8.2.4", "8.2", "faa83925c9641325"},
		{"PVE 9 (ha_rules)", pvesim.Cluster{Nodes: node, HARules: []pvesim.HARuleSpec{}}, "9.2.11", "9.2", "f6997e698c7933ea"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAPI(t, pvesim.NewTestServer(t, tc.cluster))
			got := a.ok(a.get("/version")).obj()
			if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, []string{"release", "repoid", "version"}) {
				t.Errorf("keys = %v, want release, repoid, version", keys)
			}
			want := map[string]any{"version": tc.version, "release": tc.release, "repoid": tc.repoid}
			if !maps.Equal(got, want) {
				t.Errorf("GET /version = %v, want %v", got, want)
			}
			status := a.ok(a.get("/nodes/pve1/status")).obj()
			if pv := status["pveversion"]; pv != "pve-manager/"+tc.version+"/"+tc.repoid {
				t.Errorf("pveversion = %v, want pve-manager/%s/%s", pv, tc.version, tc.repoid)
			}
		})
	}
}

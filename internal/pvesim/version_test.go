package pvesim_test

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// TestVersionPerRelease: GET /version answers with the release the cluster file stands for,
// in the shape of pve-manager's API2.pm version (PVE::pvecfg::version_info): exactly version
// (the pve-manager package version), release (x.y) and repoid (a 16-digit short git id);
// console only when datacenter.cfg sets it, which the simulated one does not. The node status
// reports the same build as pveversion ("pve-manager/VERSION/REPOID"), and the kernel of that
// release (API2/Nodes.pm status: kversion is uname's "sysname release version", current-kernel
// its fields): the build of the default kernel series published with it (pve-kernel: 6.8.8-1 of
// 2024-06-10 with pve-manager 8.2.4; PVE 9.2 made 7.0 the default, 7.0.14-12 of 2026-08-11 with
// 9.2.11), whose version debian/rules stamps "PMX <version> (<changelog date, UTC>)". The node
// status has memory.available only since pve-manager 9.0.0~19 ("api: node status: add the
// available memory"). A new VM's meta records the release's QEMU (pve-qemu-kvm 8.1.5 for PVE
// 8.2, 11.0.0 for PVE 9.2) as creation-qemu, and status/current of a running VM reports it as
// running-qemu with the newest machine of the VM's type for it (QMP query-machines).
func TestVersionPerRelease(t *testing.T) {
	node := []pvesim.NodeSpec{{Name: "pve1", CPUs: 4, MemoryGiB: 8}}
	for _, tc := range []struct {
		name                     string
		cluster                  pvesim.Cluster
		version, release, repoid string
		kernel, kernelVersion    string
		available                bool
		qemu, q35                string
	}{
		{"PVE 8 (no ha_rules)", pvesim.Cluster{Nodes: node}, "8.2.4", "8.2", "faa83925c9641325",
			"6.8.8-1-pve", "#1 SMP PREEMPT_DYNAMIC PMX 6.8.8-1 (2024-06-10T11:42Z)", false, "8.1.5", "pc-q35-8.1+pve0"},
		{"PVE 9 (ha_rules)", pvesim.Cluster{Nodes: node, HARules: []pvesim.HARuleSpec{}}, "9.2.11", "9.2", "f6997e698c7933ea",
			"7.0.14-12-pve", "#1 SMP PREEMPT_DYNAMIC PMX 7.0.14-12 (2026-08-11T11:05Z)", true, "11.0.0", "pc-q35-11.0+pve0"},
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
			// pve-manager API2/Nodes.pm version: the node's version_info, without console.
			if nodeVersion := a.ok(a.get("/nodes/pve1/version")).obj(); !maps.Equal(nodeVersion, want) {
				t.Errorf("GET /nodes/pve1/version = %v, want %v", nodeVersion, want)
			}
			status := a.ok(a.get("/nodes/pve1/status")).obj()
			if pv := status["pveversion"]; pv != "pve-manager/"+tc.version+"/"+tc.repoid {
				t.Errorf("pveversion = %v, want pve-manager/%s/%s", pv, tc.version, tc.repoid)
			}
			if kv, want := status["kversion"], "Linux "+tc.kernel+" "+tc.kernelVersion; kv != want {
				t.Errorf("kversion = %v, want %s", kv, want)
			}
			wantKernel := map[string]any{"sysname": "Linux", "release": tc.kernel, "version": tc.kernelVersion, "machine": "x86_64"}
			if ck, _ := status["current-kernel"].(map[string]any); !maps.Equal(ck, wantKernel) {
				t.Errorf("current-kernel = %v, want %v", status["current-kernel"], wantKernel)
			}
			mem, _ := status["memory"].(map[string]any)
			if _, ok := mem["available"]; ok != tc.available {
				t.Errorf("memory = %v: available present %v, want %v", mem, ok, tc.available)
			}
			for vmid, machine := range map[string]string{"150": "q35", "151": "pc-i440fx-8.0"} {
				if exit := a.task(a.form(http.MethodPost, "/nodes/pve1/qemu", url.Values{"vmid": {vmid}, "machine": {machine}, "start": {"1"}})); exit != "OK" {
					t.Fatalf("create %s: %s", vmid, exit)
				}
			}
			if meta := a.ok(a.get("/nodes/pve1/qemu/150/config")).obj()["meta"]; !strings.HasPrefix(fmt.Sprint(meta), "creation-qemu="+tc.qemu+",ctime=") {
				t.Errorf("meta = %v, want creation-qemu=%s", meta, tc.qemu)
			}
			for vmid, want := range map[string]string{"150": tc.q35, "151": "pc-i440fx-8.0+pve0"} {
				var cur map[string]any
				for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
					if cur = a.ok(a.get("/nodes/pve1/qemu/" + vmid + "/status/current")).obj(); cur["status"] == "running" {
						break
					}
				}
				if cur["running-qemu"] != tc.qemu || cur["running-machine"] != want {
					t.Errorf("VM %s status/current running-qemu %v, running-machine %v; want %s, %s", vmid, cur["running-qemu"], cur["running-machine"], tc.qemu, want)
				}
			}
		})
	}
}

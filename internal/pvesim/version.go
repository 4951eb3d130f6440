package pvesim

import "net/http"

// versionInfo is pve-manager's version as PVE::pvecfg::version_info gives it: the package
// version, the point release (x.y) and the 16-digit git revision it was built from; and the
// kernel the nodes of that release run, as uname(2) gives it (the node status' kversion and
// current-kernel).
type versionInfo struct {
	major                                                  int
	version, release, repoid, kernelRelease, kernelVersion string
}

// The releases the simulator models: PVE 8 before the HA rules, and PVE 9 as of pve-manager
// 9.2.11, the release whose HA manager (pve-ha-manager 5.2) and node rows (host-arch) pvesim
// follows; the repoid is the revision of its "bump version" commit. The kernel is the default
// series' build published with the release (pve-kernel: 6.8.8-1 on 2024-06-10 for 8.2.4; PVE 9.2
// made 7.0 the default, 7.0.14-12 on 2026-08-11 for 9.2.11), its version string as the kernel's
// debian/rules stamps it: "PMX <package version> (<changelog date, UTC>)".
var (
	pve8 = versionInfo{major: 8, version: "8.2.4", release: "8.2", repoid: "faa83925c9641325",
		kernelRelease: "6.8.8-1-pve", kernelVersion: "#1 SMP PREEMPT_DYNAMIC PMX 6.8.8-1 (2024-06-10T11:42Z)"}
	pve9 = versionInfo{major: 9, version: "9.2.11", release: "9.2", repoid: "f6997e698c7933ea",
		kernelRelease: "7.0.14-12-pve", kernelVersion: "#1 SMP PREEMPT_DYNAMIC PMX 7.0.14-12 (2026-08-11T11:05Z)"}
)

// pveVersion is the release the cluster file stands for (Cluster.release). The caller holds s.mu.
func (s *Server) pveVersion() versionInfo {
	return Cluster{HARules: s.haRules}.release()
}

// handleVersion answers as pve-manager's API2.pm version: version, release and repoid, plus
// datacenter.cfg's console when set (the simulated datacenter.cfg does not set it).
func (s *Server) handleVersion(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	v := s.pveVersion()
	s.mu.Unlock()
	writeData(w, map[string]any{"version": v.version, "release": v.release, "repoid": v.repoid})
}

package pvesim

import "net/http"

// versionInfo is pve-manager's version as PVE::pvecfg::version_info gives it: the package
// version, the point release (x.y) and the 16-digit git revision it was built from.
type versionInfo struct{ version, release, repoid string }

// The releases the simulator models: PVE 8 before the HA rules, and PVE 9 as of pve-manager
// 9.2.11, the release whose HA manager (pve-ha-manager 5.2) and node rows (host-arch) pvesim
// follows; the repoid is the revision of its "bump version" commit.
var (
	pve8 = versionInfo{version: "8.2.4", release: "8.2", repoid: "faa83925c9641325"}
	pve9 = versionInfo{version: "9.2.11", release: "9.2", repoid: "f6997e698c7933ea"}
)

// pveVersion is the release the cluster file stands for: with ha_rules PVE 9, without PVE 8.
func (s *Server) pveVersion() versionInfo {
	if s.haRules != nil {
		return pve9
	}
	return pve8
}

// handleVersion answers as pve-manager's API2.pm version: version, release and repoid, plus
// datacenter.cfg's console when set (the simulated datacenter.cfg does not set it).
func (s *Server) handleVersion(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	v := s.pveVersion()
	s.mu.Unlock()
	writeData(w, map[string]any{"version": v.version, "release": v.release, "repoid": v.repoid})
}

package pvesim

import (
	"net/http"
	"regexp"
	"strings"
)

// versionInfo is pve-manager's version as PVE::pvecfg::version_info gives it: the package
// version, the point release (x.y) and the 16-digit git revision it was built from; and the
// kernel the nodes of that release run, as uname(2) gives it (the node status' kversion and
// current-kernel), and the QEMU version of its pve-qemu-kvm.
type versionInfo struct {
	major                                                        int
	version, release, repoid, kernelRelease, kernelVersion, qemu string
}

// The releases the simulator models: PVE 8 before the HA rules, and PVE 9 as of pve-manager
// 9.2.11, the release whose HA manager (pve-ha-manager 5.2) and node rows (host-arch) pvesim
// follows; the repoid is the revision of its "bump version" commit. The kernel is the default
// series' build published with the release (pve-kernel: 6.8.8-1 on 2024-06-10 for 8.2.4; PVE 9.2
// made 7.0 the default, 7.0.14-12 on 2026-08-11 for 9.2.11), its version string as the kernel's
// debian/rules stamps it: "PMX <package version> (<changelog date, UTC>)". QEMU is the
// release's pve-qemu-kvm: 8.1.5 for PVE 8.2 (9.0 reached its repositories in July 2024), 11.0.0
// for PVE 9.2 (pve-qemu 11.0.0-2 of 2026-05-12).
var (
	pve8 = versionInfo{major: 8, version: "8.2.4", release: "8.2", repoid: "faa83925c9641325",
		kernelRelease: "6.8.8-1-pve", kernelVersion: "#1 SMP PREEMPT_DYNAMIC PMX 6.8.8-1 (2024-06-10T11:42Z)", qemu: "8.1.5"}
	pve9 = versionInfo{major: 9, version: "9.2.11", release: "9.2", repoid: "f6997e698c7933ea",
		kernelRelease: "7.0.14-12-pve", kernelVersion: "#1 SMP PREEMPT_DYNAMIC PMX 7.0.14-12 (2026-08-11T11:05Z)", qemu: "11.0.0"}
)

// pveVersion is the release the cluster file stands for (Cluster.release). The caller holds s.mu.
func (s *Server) pveVersion() versionInfo {
	return Cluster{HARules: s.haRules}.release()
}

// handleNodeVersion is GET /nodes/{node}/version (pve-manager API2/Nodes.pm version): the
// node's version_info, which is the cluster's release.
func (s *Server) handleNodeVersion(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.requireOnline(w, r) {
		return
	}
	writeData(w, s.pveVersion().info())
}

// info is PVE::pvecfg::version_info: version, release and repoid.
func (v versionInfo) info() map[string]any {
	return map[string]any{"version": v.version, "release": v.release, "repoid": v.repoid}
}

// handleVersion answers as pve-manager's API2.pm version: version, release and repoid, plus
// datacenter.cfg's console when set (the simulated datacenter.cfg does not set it).
func (s *Server) handleVersion(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	v := s.pveVersion()
	s.mu.Unlock()
	writeData(w, v.info())
}

// runningMachine is the machine QMP reports for a VM started with the configured machine on
// release v: a pinned version as configured, else the newest of its type for the release's
// QEMU (pc-i440fx-X.Y or pc-q35-X.Y), with PVE's +pve0 revision.
func (v versionInfo) runningMachine(machine string) string {
	typ, _, _ := strings.Cut(machine, ",")
	if m := pinnedMachine.FindStringSubmatch(typ); m != nil {
		if m[2] == "" {
			return typ + "+pve0"
		}
		return typ
	}
	family := "pc-i440fx-"
	if strings.Contains(typ, "q35") {
		family = "pc-q35-"
	}
	majorMinor := strings.Join(strings.SplitN(v.qemu, ".", 3)[:2], ".")
	return family + majorMinor + "+pve0"
}

// pinnedMachine is a machine type with a QEMU version, and its PVE revision if any.
var pinnedMachine = regexp.MustCompile(`^(pc-(?:i440fx|q35)-\d+\.\d+)(\+pve\d+)?$`)

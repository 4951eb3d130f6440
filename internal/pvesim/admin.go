package pvesim

// The admin endpoint acts on a running simulator, as an operator (or a failing host) acts on
// a real cluster, without restarting it and losing its guests. It lives outside the PVE API
// (under /pvesim/, which PVE does not have) and takes the simulator's API token or ticket.
// The `pvesim` command's subcommands call it.
//
//	POST /pvesim/nodes/{node}/maintenance  enable=1|0  HA maintenance on or off (the node's hastate);
//	                                                   its HA services are migrated away, and back
//	POST /pvesim/nodes/{node}/fail                     the node fails; the HA manager recovers its services
//	POST /pvesim/nodes/{node}/recover                  the node is back online
//	PUT  /pvesim/nodes/{node}/load  cpu_load=0.5 mem_used_gib=20   the host's own load
//	PUT  /pvesim/guests/{vmid}/load  cpu_cores=1.5 mem_used_gib=4  a running guest's load
//	PUT  /pvesim/crs  crs=ha=dynamic,ha-auto-rebalance=1           datacenter.cfg's crs ("" for none)
//	POST /pvesim/ha/rounds  rounds=N                                 N rounds of the HA manager
//
// Each answers {"data": {...}} with the node's state afterwards (and, for fail, where each
// recovered guest went; for maintenance, where each HA guest is being migrated), the guest's,
// the scheduler's (crs, and the node imbalance it sees), or what the rounds did (the
// rebalancing migrations they started); or an error with the reason.

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

const adminPrefix = "/pvesim/"

func (s *Server) adminRoutes() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("POST /pvesim/nodes/{node}/maintenance", s.handleAdminMaintenance)
	m.HandleFunc("POST /pvesim/nodes/{node}/fail", s.handleAdminFail)
	m.HandleFunc("POST /pvesim/nodes/{node}/recover", s.handleAdminRecover)
	m.HandleFunc("PUT /pvesim/nodes/{node}/load", s.handleAdminLoad)
	m.HandleFunc("PUT /pvesim/guests/{vmid}/load", s.handleAdminGuestLoad)
	m.HandleFunc("PUT /pvesim/crs", s.handleAdminCRS)
	m.HandleFunc("POST /pvesim/ha/rounds", s.handleAdminRounds)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no admin action %s %s (see pvesim's admin.go)", r.Method, r.URL.Path))
	})
	return m
}

// serveAdmin authenticates like the API, then runs an admin action.
func (s *Server) serveAdmin(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.authorized(w, r); !ok {
		return
	}
	s.admin.ServeHTTP(w, r)
}

// nodeState is what the admin actions answer about a node.
func (s *Server) nodeState(name string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.node(name)
	l := s.loads()[n.name]
	return map[string]any{"node": n.name, "online": b2i(n.online), "hastate": n.reportedHAState(),
		"cpu": l.cpu, "mem": l.mem, "maxmem": n.maxmem, "maxcpu": n.cpus}
}

func (s *Server) handleAdminMaintenance(w http.ResponseWriter, r *http.Request) {
	p, ok := readAllowedParams(w, r, "enable")
	if !ok {
		return
	}
	enable, valid := parseBool(p["enable"])
	if !valid {
		paramError(w, "enable", "give enable=1 (maintenance on) or enable=0 (off)")
		return
	}
	state := "online"
	if enable {
		state = "maintenance"
	}
	moves, err := s.setNodeHAState(r.PathValue("node"), state)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeData(w, s.nodeStateWith(r.PathValue("node"), "migrating", moves))
}

func (s *Server) handleAdminFail(w http.ResponseWriter, r *http.Request) {
	if _, ok := readAllowedParams(w, r); !ok {
		return
	}
	recovered, err := s.FailNode(r.PathValue("node"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeData(w, s.nodeStateWith(r.PathValue("node"), "recovered", recovered))
}

// nodeStateWith is nodeState with where the HA manager moved or is moving each guest, under
// key.
func (s *Server) nodeStateWith(name, key string, moves map[int]string) map[string]any {
	out := s.nodeState(name)
	byID := map[string]string{}
	for vmid, node := range moves {
		byID[strconv.Itoa(vmid)] = node
	}
	out[key] = byID
	return out
}

func (s *Server) handleAdminRecover(w http.ResponseWriter, r *http.Request) {
	if _, ok := readAllowedParams(w, r); !ok {
		return
	}
	if err := s.SetNodeOnline(r.PathValue("node"), true); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeData(w, s.nodeState(r.PathValue("node")))
}

func (s *Server) handleAdminLoad(w http.ResponseWriter, r *http.Request) {
	p, ok := readAllowedParams(w, r, "cpu_load", "mem_used_gib")
	if !ok {
		return
	}
	if len(p) == 0 {
		paramError(w, "cpu_load", "give cpu_load (0..1) and/or mem_used_gib")
		return
	}
	f, ok := adminFloats(w, p, "cpu_load", "mem_used_gib")
	if !ok {
		return
	}
	if err := s.SetNodeLoad(r.PathValue("node"), f[0], f[1]); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeData(w, s.nodeState(r.PathValue("node")))
}

// SetNodeLoad sets a node's own load, before its running guests: cpuLoad a fraction of its
// CPUs (0..1), memUsedGiB its host memory use. A negative value leaves that figure as it is.
// Live figures (/cluster/resources, /nodes, node status) add the running guests to it.
func (s *Server) SetNodeLoad(name string, cpuLoad, memUsedGiB float64) error {
	return s.withNode(name, func(n *node) error {
		switch {
		case cpuLoad > 1:
			return fmt.Errorf("pvesim: cpu_load %g is above 1 (all of the node's CPUs)", cpuLoad)
		case memUsedGiB*gib > float64(n.maxmem):
			return fmt.Errorf("pvesim: mem_used_gib %g is above the node's %g GiB", memUsedGiB, float64(n.maxmem)/gib)
		}
		if cpuLoad >= 0 {
			n.baseCPU = cpuLoad
		}
		if memUsedGiB >= 0 {
			n.baseMem = uint64(memUsedGiB * gib)
		}
		return nil
	})
}

func isAdminPath(path string) bool { return strings.HasPrefix(path, adminPrefix) }

// adminFloats reads the admin action's numeric parameters (each a number >= 0; -1 when not
// given), answering and returning false when one is not.
func adminFloats(w http.ResponseWriter, p map[string]string, keys ...string) ([]float64, bool) {
	out := make([]float64, len(keys))
	for i, key := range keys {
		out[i] = -1
		v, set := p[key]
		if !set {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			paramError(w, key, fmt.Sprintf("%q is not a number >= 0", v))
			return nil, false
		}
		out[i] = f
	}
	return out, true
}

func (s *Server) handleAdminGuestLoad(w http.ResponseWriter, r *http.Request) {
	p, ok := readAllowedParams(w, r, "cpu_cores", "mem_used_gib")
	if !ok {
		return
	}
	vmid, err := strconv.Atoi(r.PathValue("vmid"))
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("pvesim: %q is not a VMID", r.PathValue("vmid")))
		return
	}
	if len(p) == 0 {
		paramError(w, "cpu_cores", "give cpu_cores (the vCPUs busy) and/or mem_used_gib")
		return
	}
	f, ok := adminFloats(w, p, "cpu_cores", "mem_used_gib")
	if !ok {
		return
	}
	if err := s.SetGuestLoad(vmid, f[0], f[1]); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.guests[vmid]
	cpu, mem := g.liveUsage()
	writeData(w, map[string]any{"vmid": vmid, "node": g.node, "status": g.status, "cpu_cores": cpu, "mem": mem, "maxmem": g.memoryBytes(), "maxcpu": s.maxCPU(g)})
}

func (s *Server) handleAdminCRS(w http.ResponseWriter, r *http.Request) {
	p, ok := readAllowedParams(w, r, "crs")
	if !ok {
		return
	}
	if _, set := p["crs"]; !set {
		paramError(w, "crs", `give crs, datacenter.cfg's property string (e.g. "ha=static,ha-rebalance-on-start=1"; empty for none)`)
		return
	}
	if err := s.SetCRS(p["crs"]); err != nil {
		paramError(w, "crs", strings.TrimPrefix(err.Error(), "pvesim: "))
		return
	}
	writeData(w, s.crsState())
}

// crsState is what the admin actions answer about the scheduler: datacenter.cfg's crs, the
// scheduler in use and the node imbalance it sees.
func (s *Server) crsState() map[string]any {
	imb := s.HAImbalance()
	s.mu.Lock()
	defer s.mu.Unlock()
	return map[string]any{"crs": s.crs.config.String(), "scheduler": s.crs.config.mode(), "imbalance": imb}
}

// maxAdminRounds bounds one rounds action (a round is quick; a typo of 10^9 is not).
const maxAdminRounds = 10000

func (s *Server) handleAdminRounds(w http.ResponseWriter, r *http.Request) {
	p, ok := readAllowedParams(w, r, "rounds")
	if !ok {
		return
	}
	n, err := strconv.Atoi(p["rounds"])
	if err != nil || n < 1 || n > maxAdminRounds {
		paramError(w, "rounds", fmt.Sprintf("give rounds, the number of HA rounds to run (1-%d), not %q", maxAdminRounds, p["rounds"]))
		return
	}
	moves := []string{}
	for _, m := range s.RunHARounds(n) {
		moves = append(moves, m.String())
	}
	out := s.crsState()
	out["rounds"], out["rebalanced"] = n, moves
	writeData(w, out)
}

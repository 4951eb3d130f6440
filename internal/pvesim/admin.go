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
//
// Each answers {"data": {...}} with the node's state afterwards (and, for fail, where each
// recovered guest went; for maintenance, where each HA guest is being migrated), or an error
// with the reason.

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
	cpu, mem := -1.0, -1.0
	for key, dst := range map[string]*float64{"cpu_load": &cpu, "mem_used_gib": &mem} {
		v, set := p[key]
		if !set {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			paramError(w, key, fmt.Sprintf("%q is not a number >= 0", v))
			return
		}
		*dst = f
	}
	if err := s.SetNodeLoad(r.PathValue("node"), cpu, mem); err != nil {
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

package pvesim

// Resource pools as pve-manager's API2/Pool.pm serves them. A guest's pool is its membership
// (user.cfg's pool vms); pools hold no storage in the simulator.

import (
	"fmt"
	"net/http"
	"strings"
)

// handlePools is GET /pools: the pools the caller may audit (all), each with its comment only
// when it has one.
func (s *Server) handlePools(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows := []map[string]any{}
	for _, p := range sortedKeys(s.pools) {
		rows = append(rows, s.poolEntry(p))
	}
	writeData(w, rows)
}

func (s *Server) poolEntry(pool string) map[string]any {
	row := map[string]any{"poolid": pool}
	if c := s.poolComments[pool]; c != "" {
		row["comment"] = c
	}
	return row
}

// handlePool is GET /pools/{poolid} (read_pool): the pool's members, its guests as
// /cluster/resources shows them, filtered by type (qemu, lxc, storage).
func (s *Server) handlePool(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := readAllowedParams(w, r, "type")
	if !ok {
		return
	}
	pool, typ := r.PathValue("poolid"), p["type"]
	switch {
	case typ != "" && !contains([]string{"qemu", "lxc", "storage"}, typ):
		paramError(w, "type", fmt.Sprintf("value '%s' does not have a value in the enumeration 'qemu, lxc, storage'", typ))
		return
	case !s.pools[pool]:
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("pool '%s' does not exist", pool))
		return
	}
	members := []any{}
	for _, g := range s.sortedGuests() {
		if g.pool == pool && (typ == "" || typ == g.typ) {
			members = append(members, s.guestRow(g))
		}
	}
	out := s.poolEntry(pool)
	out["members"] = members
	writeData(w, out)
}

// handlePoolUpdate is PUT /pools/{poolid} (update_pool_deprecated, what bpg calls when a VM's
// pool changes): comment, then vms added, moved from another pool with allow-move, or
// removed with delete. Errors come as lock_user_config reports them, after "update pools
// failed: ". Storage membership is not simulated.
func (s *Server) handlePoolUpdate(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := readAllowedParams(w, r, "comment", "vms", "allow-move", "delete")
	if !ok {
		return
	}
	pool := r.PathValue("poolid")
	fail := func(format string, args ...any) {
		writeError(w, http.StatusInternalServerError, "update pools failed: "+fmt.Sprintf(format, args...))
	}
	if !s.pools[pool] {
		fail("pool '%s' does not exist", pool)
		return
	}
	var guests []*guest
	for _, v := range strings.FieldsFunc(p["vms"], func(r rune) bool { return r == ',' || r == ';' || r == ' ' }) {
		id, valid := parseVMID(v)
		if !valid {
			paramError(w, "vms", fmt.Sprintf("invalid format - value '%s' does not look like a valid VM ID", v))
			return
		}
		g := s.guests[id]
		del := boolParam(p["delete"])
		switch {
		case del && (g == nil || g.pool != pool):
			fail("VM %d is not a pool member", id)
			return
		case del:
		case g == nil:
			// user.cfg may name a VMID that has no guest; the simulator keeps membership on guests.
			fail("VM %d does not exist in the simulated cluster", id)
			return
		case g.pool == pool:
			fail("VM %d is already a pool member", id)
			return
		case g.pool != "" && !boolParam(p["allow-move"]):
			fail("VM %d belongs already to pool '%s' and 'allow-move' is not set", id, g.pool)
			return
		}
		guests = append(guests, g)
	}
	if c, set := p["comment"]; set {
		s.poolComments[pool] = c
	}
	for _, g := range guests {
		g.pool = pool
		if boolParam(p["delete"]) {
			g.pool = ""
		}
	}
	writeData(w, nil)
}

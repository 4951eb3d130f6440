package pvesim

// HA groups as PVE 8's pve-ha-manager serves them (API2/HA/Groups.pm): the bpg provider's
// hagroup resource creates, reads, updates and deletes them, and HA resources name one in
// their group option (bpg's haresource, Telmate's hagroup). PVE 9 migrated groups to HA
// rules: with rules (the cluster file's ha_rules) every group call fails as PVE 9 answers
// once groups.cfg is empty. The simulated HA manager places the services of a group as PVE 8
// does, through the node-affinity rule PVE 9 turns the group into (groupRules).

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// haGroup is one groups.cfg section: the node list as given ("pve1:2,pve2") and the options.
type haGroup struct {
	nodes string
	opts  map[string]string // restricted, nofailback, comment
}

// haGroupProps are the group options besides nodes, with their schema.
var haGroupProps = map[string]prop{"restricted": boolProp(), "nofailback": boolProp(), "comment": strProp().maxLen(4096)}

// haNodeEntry is pve_verify_ha_node: a node name with an optional :priority.
var haNodeEntry = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?(:\d+)?$`)

// groupsAPI serves a groups request under the lock, or PVE 9's refusal (verb: "index",
// "read", "create", "update", "delete").
func (s *Server) groupsAPI(verb string, handle http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.haRules != nil {
			noun := "group"
			if verb == "index" {
				noun = "groups"
			}
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("cannot %s %s: ha groups have been migrated to rules", verb, noun))
			return
		}
		handle(w, r)
	}
}

// haGroupDigest is the SHA-1 of groups.cfg as the simulator writes it.
func (s *Server) haGroupDigest() string {
	h := sha1.New()
	for _, id := range slices.Sorted(maps.Keys(s.haGroups)) {
		g := s.haGroups[id]
		fmt.Fprintf(h, "group: %s\n\tnodes %s\n", id, g.nodes)
		for _, k := range sortedKeys(g.opts) {
			fmt.Fprintf(h, "\t%s %s\n", k, g.opts[k])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (s *Server) haGroupRow(id string) map[string]any {
	g := s.haGroups[id]
	row := map[string]any{"group": id, "type": "group", "nodes": g.nodes, "digest": s.haGroupDigest()}
	for k, v := range g.opts {
		row[k] = v
		if haGroupProps[k].typ == tBoolean {
			row[k] = atoi(v)
		}
	}
	return row
}

func (s *Server) handleHAGroups(w http.ResponseWriter, r *http.Request) {
	if _, ok := readAllowedParams(w, r); !ok {
		return
	}
	rows := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(s.haGroups)) {
		rows = append(rows, s.haGroupRow(id))
	}
	writeData(w, rows)
}

func (s *Server) handleHAGroupGet(w http.ResponseWriter, r *http.Request) {
	if _, ok := readAllowedParams(w, r); !ok {
		return
	}
	id := r.PathValue("group")
	if s.haGroups[id] == nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("no such ha group '%s'", id))
		return
	}
	writeData(w, s.haGroupRow(id))
}

// checkHAGroupParams validates group options as the section config schema does; false after
// answering. nodes is required when required is set (create).
func checkHAGroupParams(w http.ResponseWriter, p map[string]string, required bool) bool {
	problems := map[string]string{}
	if nodes, set := p["nodes"]; set {
		for _, n := range strings.FieldsFunc(nodes, func(r rune) bool { return r == ',' || r == ';' || r == ' ' }) {
			if !haNodeEntry.MatchString(n) {
				problems["nodes"] = "invalid format - value does not look like a valid ha node\n"
			}
		}
	} else if required {
		problems["nodes"] = "property is missing and it is not optional"
	}
	if t, set := p["type"]; set && t != "group" {
		problems["type"] = fmt.Sprintf("value '%s' does not have a value in the enumeration 'group'", t)
	}
	for k, prop := range haGroupProps {
		if _, set := p[k]; set {
			if msg := checkTyped(p, k, prop); msg != "" {
				problems[k] = msg
			}
		}
	}
	if len(problems) > 0 {
		writeParamError(w, problems)
		return false
	}
	return true
}

func (s *Server) handleHAGroupCreate(w http.ResponseWriter, r *http.Request) {
	p, ok := readAllowedParams(w, r, "group", "type", "nodes", "restricted", "nofailback", "comment")
	if !ok || !checkHAGroupParams(w, p, true) {
		return
	}
	id := p["group"]
	switch {
	case id == "":
		paramError(w, "group", "property is missing and it is not optional")
		return
	case checkConfigID(id) != "":
		paramError(w, "group", checkConfigID(id))
		return
	case s.haGroups[id] != nil:
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("create ha group failed: ha group ID '%s' already defined", id))
		return
	}
	g := &haGroup{nodes: p["nodes"], opts: map[string]string{}}
	for k := range haGroupProps {
		if v, set := p[k]; set {
			g.opts[k] = v
		}
	}
	s.haGroups[id] = g
	writeData(w, nil)
}

func (s *Server) handleHAGroupUpdate(w http.ResponseWriter, r *http.Request) {
	p, ok := readAllowedParams(w, r, "type", "nodes", "restricted", "nofailback", "comment", "delete", "digest")
	if !ok || !checkHAGroupParams(w, p, false) {
		return
	}
	id := r.PathValue("group")
	g := s.haGroups[id]
	switch {
	case p["digest"] != "" && p["digest"] != s.haGroupDigest():
		writeError(w, http.StatusInternalServerError, "update ha group failed: detected modified configuration - file changed by other user? Try again.")
		return
	case g == nil:
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("update ha group failed: no such ha group '%s'", id))
		return
	}
	del := strings.FieldsFunc(p["delete"], func(r rune) bool { return r == ',' || r == ';' || r == ' ' })
	for _, k := range del {
		switch _, optional := haGroupProps[k]; {
		case k == "nodes":
			writeError(w, http.StatusInternalServerError, "update ha group failed: unable to delete required option 'nodes'")
			return
		case !optional:
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("update ha group failed: no such option '%s'", k))
			return
		}
	}
	if nodes, set := p["nodes"]; set {
		g.nodes = nodes
	}
	for k := range haGroupProps {
		if v, set := p[k]; set {
			g.opts[k] = v
		}
	}
	for _, k := range del {
		delete(g.opts, k)
	}
	writeData(w, nil)
}

func (s *Server) handleHAGroupDelete(w http.ResponseWriter, r *http.Request) {
	if _, ok := readAllowedParams(w, r); !ok {
		return
	}
	id := r.PathValue("group")
	for _, res := range s.sortedHAResources() {
		if res.opts["group"] == id {
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("delete ha group failed: ha group is used by service '%s'", res.sid))
			return
		}
	}
	delete(s.haGroups, id)
	writeData(w, nil)
}

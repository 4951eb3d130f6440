package pvesim

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// haNodeStates are the HA manager's node states (manager_status node_status).
var haNodeStates = []string{"online", "maintenance", "unknown", "fence", "gone"}

// maxNodeDescription is the node config description's maxLength (64 KiB).
const maxNodeDescription = 64 * 1024

// nodeConfigProperties is GET /nodes/{node}/config's property enum.
var nodeConfigProperties = []string{"acme", "acmedomain0", "acmedomain1", "acmedomain2", "acmedomain3", "acmedomain4",
	"ballooning-target", "description", "startall-onboot-delay", "wakeonlan"}

// setHAState records an HA node state; "online" is stored as "" so the row follows the node
// going offline (the HA manager then reports it unknown).
func (n *node) setHAState(state string) {
	if state == "online" {
		state = ""
	}
	n.haState = state
}

// SetNodeHAState sets a node's HA state at run time (online, maintenance, unknown, fence or
// gone), as `ha-manager crm-command node-maintenance enable|disable` or a fence would. From then
// on HA counts as running: every node row carries hastate. Entering maintenance migrates the
// node's started HA services away, leaving it brings them back (see maintenanceStep); an
// offline node cannot enter it (an error, as the CRM drops the command).
func (s *Server) SetNodeHAState(name, state string) error {
	_, err := s.setNodeHAState(name, state)
	return err
}

// SetNodeNotes sets a node's Notes as an admin would in the PVE UI (Node > Notes), even while
// the node is offline: PUT /nodes/{node}/config would answer 595 then.
func (s *Server) SetNodeNotes(name, notes string) error {
	return s.withNode(name, func(n *node) error {
		if d := storedDescription(notes); d != "" {
			n.config["description"] = d
		} else {
			delete(n.config, "description")
		}
		return nil
	})
}

// withNode runs change on node name under s.mu, or says there is no such node.
func (s *Server) withNode(name string, change func(*node) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.node(name)
	if n == nil {
		return fmt.Errorf("pvesim: no node %q", name)
	}
	return change(n)
}

// reportedHAState is the node's hastate as the HA manager reports it. The caller holds s.mu.
func (n *node) reportedHAState() string {
	switch {
	case n.haState != "":
		return n.haState
	case n.online:
		return "online"
	}
	return "unknown"
}

// withNodeFacts adds what /cluster/resources (and not /nodes) puts on a node row: host-arch
// when known, hastate when HA has run. The caller holds s.mu.
func (s *Server) withNodeFacts(row map[string]any, n *node) map[string]any {
	if n.arch != "" {
		row["host-arch"] = n.arch
	}
	if s.haActive {
		row["hastate"] = n.reportedHAState()
	}
	return row
}

// handleHAManagerStatus is GET /cluster/ha/status/manager_status: an empty manager_status
// until HA has run, then node_status per node, the maintenance requests, the CRM's state of
// each service (serviceStatus) and each LRM's mode.
func (s *Server) handleHAManagerStatus(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	local := ""
	if len(s.nodes) > 0 {
		local = s.nodes[0].name
	}
	out := map[string]any{"manager_status": map[string]any{}, "quorum": map[string]any{"node": local, "quorate": 1}}
	if !s.haActive {
		writeData(w, out)
		return
	}
	now := time.Now().Unix()
	nodeStatus, requests, lrm := map[string]any{}, map[string]any{}, map[string]any{}
	master := ""
	for _, n := range s.nodes {
		state := n.reportedHAState()
		nodeStatus[n.name] = state
		mode, lrmState, stamp := "active", "wait_for_agent_lock", now
		if state == "maintenance" {
			mode, lrmState = "maintenance", "maintenance"
			requests[n.name] = map[string]any{"maintenance": 1}
		}
		if !n.online {
			stamp = now - 3600 // the LRM stopped writing its status
		} else if master == "" {
			master = n.name
		}
		lrm[n.name] = map[string]any{"mode": mode, "state": lrmState, "timestamp": stamp, "results": map[string]any{}}
	}
	out["manager_status"] = map[string]any{"master_node": master, "node_status": nodeStatus, "node_request": requests,
		"service_status": s.serviceStatus(), "timestamp": now}
	out["lrm_status"] = lrm
	writeData(w, out)
}

// storedDescription is a description as PVE reads it back after writing it: each line becomes
// a "#" comment line of the node config, and reading joins them with a newline after each, so
// trailing empty lines vanish and a trailing newline appears. "" means no description.
func storedDescription(d string) string {
	lines := strings.Split(d, "\n")
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// encodeText is PVE::Tools::encode_text: control characters, ':' and non-ASCII bytes
// percent-encoded, as description lines are stored.
func encodeText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == ':' || c > 0x7e {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// configFile renders /etc/pve/nodes/<node>/config as PVE writes it: the description as comment
// lines first, then the other keys sorted. Its SHA-1 is the config digest.
func (n *node) configFile() string {
	var b strings.Builder
	if d := n.config["description"]; d != "" {
		for _, line := range strings.Split(strings.TrimSuffix(d, "\n"), "\n") {
			b.WriteString("#" + encodeText(line) + "\n")
		}
	}
	for _, k := range sortedKeys(n.config) {
		if k != "description" {
			fmt.Fprintf(&b, "%s: %s\n", k, n.config[k])
		}
	}
	return b.String()
}

// handleNodeConfigGet is GET /nodes/{node}/config: the config with its digest ({} with no
// digest while the node has none), or {property: value} without digest for ?property=.
func (s *Server) handleNodeConfigGet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.onlineParams(w, r, "property")
	if !ok {
		return
	}
	n := s.node(r.PathValue("node"))
	out := map[string]any{}
	if prop, set := p["property"]; set {
		if !contains(nodeConfigProperties, prop) {
			paramError(w, "property", fmt.Sprintf("value '%s' does not have a value in the enumeration '%s'", prop, strings.Join(nodeConfigProperties, ", ")))
			return
		}
		if v, has := n.config[prop]; has {
			out[prop] = nodeConfigValue(prop, v)
		}
		writeData(w, out)
		return
	}
	file := n.configFile()
	if file == "" {
		writeData(w, out)
		return
	}
	for k, v := range n.config {
		out[k] = nodeConfigValue(k, v)
	}
	sum := sha1.Sum([]byte(file))
	out["digest"] = hex.EncodeToString(sum[:])
	writeData(w, out)
}

// nodeConfigValue types a node config value for JSON: the integer keys as numbers.
func nodeConfigValue(key, v string) any {
	if key == "startall-onboot-delay" || key == "ballooning-target" {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return v
}

var macAddr = regexp.MustCompile(`^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$`)

// handleNodeConfigSet is PUT /nodes/{node}/config: sets, then deletes, under the digest check.
// ACME settings are not simulated (400 as unknown parameters).
func (s *Server) handleNodeConfigSet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.onlineUncheckedParams(w, r)
	if !ok {
		return
	}
	problems := checkParams(p, "description", "wakeonlan", "startall-onboot-delay", "ballooning-target", "delete", "digest")
	checkInt := func(key string, lo, hi int) {
		v, set := p[key]
		if !set {
			return
		}
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			problems[key] = fmt.Sprintf("type check ('integer') failed - got '%s'", v)
		case n < lo:
			problems[key] = fmt.Sprintf("value must have a minimum value of %d", lo)
		case n > hi:
			problems[key] = fmt.Sprintf("value must have a maximum value of %d", hi)
		}
	}
	checkInt("startall-onboot-delay", 0, 300)
	checkInt("ballooning-target", 0, 100)
	if d := p["description"]; len(d) > maxNodeDescription {
		problems["description"] = fmt.Sprintf("value may only be %d characters long", maxNodeDescription)
	}
	if mac, set := p["wakeonlan"]; set && !macAddr.MatchString(mac) {
		problems["wakeonlan"] = "value does not look like a valid MAC address"
	}
	if len(p["digest"]) > 40 {
		problems["digest"] = "value may only be 40 characters long"
	}
	if len(problems) > 0 {
		writeParamError(w, problems)
		return
	}
	n := s.node(r.PathValue("node"))
	if d := p["digest"]; d != "" {
		file := n.configFile()
		sum := sha1.Sum([]byte(file))
		if file == "" || d != hex.EncodeToString(sum[:]) {
			writeError(w, http.StatusInternalServerError, "detected modified configuration - file changed by other user? Try again.")
			return
		}
	}
	for k, v := range p {
		if k != "delete" && k != "digest" {
			n.config[k] = v
		}
	}
	for _, k := range strings.FieldsFunc(p["delete"], func(r rune) bool { return r == ',' || r == ';' || r == ' ' }) {
		delete(n.config, k)
	}
	if d, set := n.config["description"]; set {
		if d = storedDescription(d); d == "" {
			delete(n.config, "description")
		} else {
			n.config["description"] = d
		}
	}
	writeData(w, nil)
}

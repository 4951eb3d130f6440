package pvesim

// HA resources (/cluster/ha/resources) and the HA manager acting on them. The manager (CRM
// and LRMs) runs one round after every GET the simulator answers: a new resource is picked up
// in the round after its creation (until then status/current shows it "queued" and a migrate
// request for it is dropped, as the CRM ignores commands for services it does not know), and
// a request (a state change, hastart, hastop, hamigrate) is seen in one round and carried out
// in the next. So a client sees its hastart task end while the VM is still stopped, and must
// poll the guest as it must with PVE.

import (
	"cmp"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
)

type haResource struct {
	sid  string // vm:100
	typ  string // vm or ct
	vmid int
	// opts are the keys resources.cfg holds: state, max_restart, max_relocate, comment,
	// failback, auto-rebalance, group.
	opts map[string]string
	// pickedUp: the CRM knows the service (status/current shows its crm_state), since its
	// round pickedIn (see usedNodes).
	pickedUp bool
	pickedIn int
	// seen: the CRM has seen the current request and carries it out next round.
	seen bool
	// crmStopped: the CRM had the service stopped when its start was requested; its state
	// stays stopped until the round that sees the request (Manager.pm next_state_stopped moves
	// it to request_start, and on to started in the same round).
	crmStopped bool
	// migrateTo is a migrate or relocate command, queued, then carried out while the guest is
	// locked "migrate"; relocate stops the VM first.
	migrateTo string
	relocate  bool
	// startBalance: the move places the stopped service on the best node before its start
	// (ha-rebalance-on-start, Manager.pm request_start_balance).
	startBalance bool
	// recovering: its node failed and the CRM has found no node the rules allow yet.
	recovering bool
	// maintenanceNode is the node the service was moved off for maintenance, where it returns
	// (Manager.pm maintenance_node).
	maintenanceNode string
	// failedNodes are the nodes where starting it failed since its last start (Manager.pm
	// failed_nodes); errored: its relocation policy ran out, it is in the error state until
	// requested disabled (see ha_start.go).
	failedNodes []string
	errored     bool
	// faults are the failures SetHAFaults sets; startTries and migrateTries count the attempts
	// of the start and the migration under way.
	faults                   HAFaults
	startTries, migrateTries int
	// stopFailed: disabled out of the error state a failed stop left it in, the CRM has it
	// stopped while its LRM keeps failing to stop the guest (next_state_error, and the stopped
	// state, whose LRM results the CRM does not read).
	stopFailed bool
	// frozen: its node shut down under the freeze policy, or the HA stack was disarmed in
	// freeze mode; the CRM leaves it there until the node is up again or the stack armed
	// (Manager.pm's freeze state).
	frozen bool
	// disarmedOn is the node the CRM last saw the service on when it disarmed in ignore mode:
	// until armed, it shows that node, wherever the guest is moved.
	disarmedOn string
}

// crmNode is the node the CRM has the service on: its guest's, unless the stack is disarmed
// in ignore mode. The caller holds s.mu.
func (s *Server) crmNode(res *haResource) string {
	if res.disarmedOn != "" {
		return res.disarmedOn
	}
	return s.guests[res.vmid].node
}

// requestState is the state resources.cfg requests as the HA stack reads it
// (read_and_check_resources_config): started when unset or enabled; disabled stays disabled.
func (r *haResource) requestState() string {
	if st := r.opts["state"]; st != "" && st != "enabled" {
		return st
	}
	return "started"
}

// state is the requested state, with PVE's defaults and aliases (enabled = started).
func (r *haResource) state() string {
	switch st := r.opts["state"]; st {
	case "", "enabled":
		return "started"
	case "disabled":
		return "stopped"
	default:
		return st
	}
}

// managed is PVE's vm_is_ha_managed: configured and not ignored. The caller holds s.mu.
func (s *Server) haManaged(vmid int) *haResource {
	if r := s.haResourceOf(vmid); r != nil && r.state() != "ignored" {
		return r
	}
	return nil
}

func (s *Server) haResourceOf(vmid int) *haResource {
	for _, r := range s.haResources {
		if r.vmid == vmid {
			return r
		}
	}
	return nil
}

// haResourceProps are the writable resource options.
var haResourceProps = map[string]prop{
	"auto-rebalance": boolProp(), "comment": strProp().maxLen(4096), "failback": boolProp(), "group": checkedProp(checkConfigID),
	"max_relocate": intProp().atLeast(0), "max_restart": intProp().atLeast(0),
	"state": enumProp("started", "stopped", "enabled", "disabled", "ignored"), "type": enumProp("ct", "vm"),
}

// haPropKnown tells whether the release's schema has resource option k. failback came with
// PVE 9's HA rules (pve-ha-manager 5.0), auto-rebalance with PVE 9.2 (default on: the
// automatic rebalancing may migrate the resource); PVE 8 knows neither.
func (s *Server) haPropKnown(k string) bool {
	_, known := haResourceProps[k]
	return known && (s.haRules != nil || k != "failback" && k != "auto-rebalance")
}

// checkHAParams validates resource options as the API schema does; false after answering.
func (s *Server) checkHAParams(w http.ResponseWriter, p map[string]string, extra ...string) bool {
	problems := map[string]string{}
	for k := range p {
		prop := haResourceProps[k]
		switch {
		case contains(extra, k):
		case !s.haPropKnown(k):
			problems[k] = "property is not defined in schema and the schema does not allow additional properties"
		default:
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

// parseSID is PVE::HA::Config::parse_sid: vm:100, ct:100 or a bare VMID of a listed guest.
func (s *Server) parseSID(sid string) (typ string, vmid int, msg string) {
	if id, err := strconv.Atoi(sid); err == nil && strconv.Itoa(id) == sid {
		g, ok := s.guests[id]
		if !ok {
			// PVE 8's parse_sid says "do" (pve-ha-manager 4.0, Config.pm); PVE 9 fixed it.
			verb := "to"
			if s.haRules == nil {
				verb = "do"
			}
			return "", 0, fmt.Sprintf("unable %s detect SID from VMID - VM/CT %d does not exist", verb, id)
		}
		if g.typ == "lxc" {
			return "ct", id, ""
		}
		return "vm", id, ""
	}
	t, name, ok := strings.Cut(sid, ":")
	id, err := strconv.Atoi(name)
	if !ok || t == "" || name == "" || strings.ContainsAny(sid, " \t") {
		return "", 0, fmt.Sprintf("unable to parse service id '%s'", sid)
	}
	if err != nil || (t != "vm" && t != "ct") {
		return "", 0, fmt.Sprintf("unable to parse service id '%s'", sid)
	}
	return t, id, ""
}

// haDigest is the SHA-1 of resources.cfg as the simulator writes it.
func (s *Server) haDigest() string {
	var b strings.Builder
	for _, r := range s.sortedHAResources() {
		fmt.Fprintf(&b, "%s: %d\n", r.typ, r.vmid)
		for _, k := range sortedKeys(r.opts) {
			fmt.Fprintf(&b, "\t%s %s\n", k, r.opts[k])
		}
	}
	sum := sha1.Sum([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

func (s *Server) sortedHAResources() []*haResource {
	list := make([]*haResource, 0, len(s.haResources))
	for _, r := range s.haResources {
		list = append(list, r)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].sid < list[j].sid })
	return list
}

// haRow is a resource as GET /cluster/ha/resources/{sid} shows it: only the options set.
func (s *Server) haRow(r *haResource, digest string) map[string]any {
	row := map[string]any{"sid": r.sid, "type": r.typ, "digest": digest}
	for k, v := range r.opts {
		if k == "max_restart" || k == "max_relocate" || k == "failback" || k == "auto-rebalance" {
			row[k] = atoi(v)
		} else {
			row[k] = v
		}
	}
	return row
}

func (s *Server) handleHAResources(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	typ := r.URL.Query().Get("type")
	if typ != "" && typ != "vm" && typ != "ct" {
		paramError(w, "type", fmt.Sprintf("value '%s' does not have a value in the enumeration 'ct, vm'", typ))
		return
	}
	digest := s.haDigest()
	rows := []map[string]any{}
	for _, res := range s.sortedHAResources() {
		if typ == "" || res.typ == typ {
			row := s.haRow(res, digest)
			// The index flags a group that does not exist (PVE 8 creates a resource naming
			// any group; Resources.pm index).
			if id := res.opts["group"]; id != "" && s.haGroups[id] == nil {
				row["errors"] = map[string]string{"group": fmt.Sprintf("group '%s' does not exist", id)}
			}
			rows = append(rows, row)
		}
	}
	writeData(w, rows)
}

// pathSID parses the request's {sid} into its canonical form, answering like PVE when it
// cannot.
func (s *Server) pathSID(w http.ResponseWriter, r *http.Request) (sid string, vmid int, ok bool) {
	typ, vmid, msg := s.parseSID(r.PathValue("sid"))
	if msg != "" {
		writeError(w, http.StatusInternalServerError, msg)
		return "", 0, false
	}
	return fmt.Sprintf("%s:%d", typ, vmid), vmid, true
}

// haResourceFor finds the resource {sid} names, answering like PVE when it cannot.
func (s *Server) haResourceFor(w http.ResponseWriter, r *http.Request) *haResource {
	sid, _, ok := s.pathSID(w, r)
	if !ok {
		return nil
	}
	res := s.haResources[sid]
	if res == nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("no such resource '%s'", sid))
	}
	return res
}

func (s *Server) handleHAResourceGet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if res := s.haResourceFor(w, r); res != nil {
		writeData(w, s.haRow(res, s.haDigest()))
	}
}

func (s *Server) handleHAResourceCreate(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := readParams(w, r)
	if !ok || !s.checkHAParams(w, p, "sid") {
		return
	}
	if p["sid"] == "" {
		paramError(w, "sid", "property is missing and it is not optional")
		return
	}
	typ, vmid, msg := s.parseSID(p["sid"])
	g := s.guests[vmid]
	switch {
	case msg != "":
	case p["type"] != "" && p["type"] != typ:
		msg = "types does not match"
	case p["group"] != "" && s.haRules != nil:
		msg = "invalid parameter 'group': ha groups have been migrated to rules"
	case g == nil:
		msg = fmt.Sprintf("resource '%s:%d' does not exist in cluster", typ, vmid)
	case typ == "vm" && g.typ != "qemu":
		msg = fmt.Sprintf("resource 'vm:%d' - guest with ID %d is not a VM", vmid, vmid)
	case typ == "ct" && g.typ != "lxc":
		msg = fmt.Sprintf("resource 'ct:%d' - guest with ID %d is not a CT", vmid, vmid)
	case s.haResources[fmt.Sprintf("%s:%d", typ, vmid)] != nil:
		msg = fmt.Sprintf("create resource failed: resource ID '%s:%d' already defined", typ, vmid)
	}
	if msg != "" {
		writeError(w, http.StatusInternalServerError, msg)
		return
	}
	res := &haResource{sid: fmt.Sprintf("%s:%d", typ, vmid), typ: typ, vmid: vmid, opts: map[string]string{}}
	for k, v := range p {
		if k != "sid" && k != "type" {
			res.opts[k] = v
		}
	}
	s.haResources[res.sid] = res
	s.haActive = true
	writeData(w, nil)
}

func (s *Server) handleHAResourceUpdate(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := readParams(w, r)
	if !ok || !s.checkHAParams(w, p, "delete", "digest") {
		return
	}
	res := s.haResourceFor(w, r)
	switch {
	case res == nil:
		return
	case errorStateMsg(res) != "" && p["state"] != "disabled":
		writeError(w, http.StatusInternalServerError, errorStateMsg(res))
		return
	case p["type"] != "" && p["type"] != res.typ:
		writeError(w, http.StatusInternalServerError, "types does not match")
		return
	case p["digest"] != "" && p["digest"] != s.haDigest():
		writeError(w, http.StatusInternalServerError, "detected modified configuration - file changed by other user? Try again.")
		return
	case p["group"] != "" && s.haRules != nil:
		writeError(w, http.StatusInternalServerError, "invalid parameter 'group': ha groups have been migrated to rules")
		return
	case p["group"] != "" && s.haGroups[p["group"]] == nil:
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("HA group '%s' does not exist", p["group"]))
		return
	}
	s.newRequest(res)
	for _, k := range splitList(p["delete"]) {
		if !s.haPropKnown(k) || k == "type" {
			paramError(w, "delete", fmt.Sprintf("invalid option '%s'", k))
			return
		}
		delete(res.opts, k)
	}
	for k, v := range p {
		if k != "delete" && k != "digest" && k != "type" {
			res.opts[k] = v
		}
	}
	writeData(w, nil)
}

func (s *Server) handleHAResourceDelete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := readAllowedParams(w, r, "purge")
	if !ok {
		return
	}
	purge, valid := parseBool(cmp.Or(p["purge"], "1"))
	if !valid {
		paramError(w, "purge", fmt.Sprintf("type check ('boolean') failed - got '%s'", p["purge"]))
		return
	}
	sid, _, ok := s.pathSID(w, r)
	if !ok {
		return
	}
	if s.haResources[sid] == nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("cannot delete service '%s', not HA managed!", sid))
		return
	}
	delete(s.haResources, sid)
	if purge {
		s.purgeFromHARules(sid)
	}
	writeData(w, nil)
}

// handleHAMove is POST .../{sid}/migrate or .../relocate: a command queued for the CRM.
func (s *Server) handleHAMove(relocate bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		p, ok := readAllowedParams(w, r, "node")
		if !ok {
			return
		}
		if p["node"] == "" {
			paramError(w, "node", "property is missing and it is not optional")
			return
		}
		sid, vmid, ok := s.pathSID(w, r)
		if !ok {
			return
		}
		res := s.haManaged(vmid)
		if res == nil || res.sid != sid {
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("resource '%s' is not HA managed", sid))
			return
		}
		if msg := errorStateMsg(res); msg != "" {
			writeError(w, http.StatusInternalServerError, msg)
			return
		}
		if s.haRules == nil {
			s.queueMove(res, p["node"], relocate)
			writeData(w, nil) // PVE 8 answers null
			return
		}
		answer := map[string]any{"sid": sid, "requested-node": p["node"]}
		// PVE 9 names the services in positive affinity, which move along, and those in negative
		// affinity on an online target, for which the CRM refuses the move
		// (get_resource_motion_info).
		if peers := s.comigrated(res); len(peers) > 0 {
			answer["comigrated-resources"] = peers
		}
		var blocking []string
		if t := s.node(p["node"]); t != nil && t.reportedHAState() == "online" {
			blocking = s.motionBlockers(res, t.name)
		}
		if len(blocking) > 0 {
			rows := make([]map[string]any, len(blocking))
			for i, b := range blocking {
				rows[i] = map[string]any{"sid": b, "cause": "resource-affinity"}
			}
			answer["blocking-resources"] = rows
		} else {
			s.queueMove(res, p["node"], relocate)
		}
		writeData(w, answer)
	}
}

// newRequest marks res's configuration as about to change (a state, hastart, hastop): the CRM
// has not seen it yet, and keeps its own state meanwhile, stopped included. The caller holds
// s.mu.
func (s *Server) newRequest(res *haResource) {
	res.seen, res.crmStopped = false, s.crmState(res) == "stopped"
}

// queueMove hands the CRM a migrate command, which it drops for a service it has not picked
// up yet, and for one in recovery (next_state_recovery ignores it, and the service's next
// state change clears it).
func (s *Server) queueMove(res *haResource, node string, relocate bool) {
	if !res.pickedUp || res.recovering {
		return
	}
	res.migrateTo, res.relocate, res.seen = node, relocate, false
}

// verboseState is PVE's get_verbose_service_state for a resource.
func (s *Server) verboseState(res *haResource) string {
	g := s.guests[res.vmid]
	want := res.state()
	switch {
	case want == "ignored":
		return "ignored"
	case g == nil:
		return "not found"
	case !res.pickedUp:
		return "queued"
	case res.errored && res.requestState() == "disabled":
		return "clearing error flag"
	case res.errored:
		return "error"
	case res.frozen:
		return "freeze"
	case res.stopFailed:
		return res.requestState()
	case res.recovering:
		return "recovery"
	case res.migrateTo != "":
		if res.relocate {
			return "relocate"
		}
		return "migrate"
	case want == "started" && g.status != "running":
		return "starting"
	case want == "stopped" && g.status == "running" && !res.seen:
		return "stopping" // Tools.pm: the CRM still has it started, the stop is requested
	case want == "stopped" && g.status == "running":
		return "request_stop" // Tools.pm shows the CRM's state once it has taken the stop
	}
	return res.requestState() // stopped shows as disabled when disabled was requested
}

// serviceStatus is the manager status's service_status: each service the CRM has picked up,
// by sid, with its node, its CRM state (Manager.pm: started, request_stop, stopped, migrate,
// relocate, recovery) and uid, and for a move under way its target, the node the HA manager
// counts it on besides its own (Usage.pm get_used_service_nodes). The caller holds s.mu.
func (s *Server) serviceStatus() map[string]any {
	out := map[string]any{}
	for _, res := range s.sortedHAResources() {
		g := s.guests[res.vmid]
		state := s.crmState(res)
		if state == "" {
			continue
		}
		sum := sha1.Sum([]byte(res.sid + " " + state + " " + g.node + " " + res.migrateTo))
		entry := map[string]any{"node": s.crmNode(res), "state": state, "uid": hex.EncodeToString(sum[:8])}
		if res.migrateTo != "" {
			entry["target"] = res.migrateTo
		}
		if res.maintenanceNode != "" {
			entry["maintenance_node"] = res.maintenanceNode
		}
		out[res.sid] = entry
	}
	return out
}

// crmState is the CRM's state of res (Manager.pm: started, request_stop, stopped, migrate,
// relocate, recovery, error), "" while the CRM does not list it (not picked up yet, ignored,
// or its guest gone). The caller holds s.mu.
func (s *Server) crmState(res *haResource) string {
	g := s.guests[res.vmid]
	if g == nil || !res.pickedUp || res.state() == "ignored" {
		return ""
	}
	switch state := res.state(); {
	case res.errored:
		return "error"
	case res.frozen:
		return "freeze"
	case res.stopFailed:
		return "stopped"
	case res.recovering:
		return "recovery"
	case res.migrateTo != "" && res.relocate:
		return "relocate"
	case res.migrateTo != "":
		return "migrate"
	case state == "stopped" && g.status == "running" && res.seen:
		return "request_stop" // next_state_started took the stop; the LRM stops it next
	case state == "stopped" && g.status == "running":
		return "started" // the stop is requested, the CRM has not seen it yet
	case state == "started" && g.status != "running" && res.crmStopped:
		return "stopped" // the start is requested, the CRM has not seen it yet
	default:
		return state
	}
}

// handleHAStatus is GET /cluster/ha/status/current: quorum, master, one lrm row per node
// once HA runs, and a service row per resource (crm_state once the CRM has picked it up).
func (s *Server) handleHAStatus(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	local := s.nodes[0].name
	rows := []map[string]any{{"id": "quorum", "type": "quorum", "node": local, "status": "OK", "quorate": 1}}
	if s.haActive {
		master := ""
		for _, n := range s.nodes {
			if n.online && master == "" {
				master = n.name
			}
		}
		rows = append(rows, map[string]any{"id": "master", "type": "master", "node": master, "status": master + " (active)"})
		for _, n := range s.nodes {
			state := "active"
			if !n.online {
				state = "old timestamp - dead?"
			}
			rows = append(rows, map[string]any{"id": "lrm:" + n.name, "type": "lrm", "node": n.name,
				"status": fmt.Sprintf("%s (%s)", n.name, state)})
		}
	}
	for _, res := range s.sortedHAResources() {
		node := "---"
		if g := s.guests[res.vmid]; g != nil {
			node = g.node
		}
		state := s.verboseState(res)
		row := map[string]any{"id": "service:" + res.sid, "type": "service", "sid": res.sid, "node": node, "state": state,
			"status": fmt.Sprintf("%s (%s, %s)", res.sid, node, state), "request_state": res.requestState()}
		// crm_state is the CRM's own state (Status.pm: $ss->{state}), state the verbose one.
		if crm := s.crmState(res); crm != "" {
			row["crm_state"] = crm
		}
		for _, k := range []string{"max_restart", "max_relocate", "failback", "auto-rebalance"} {
			if v, set := res.opts[k]; set {
				row[k] = atoi(v)
			}
		}
		for _, k := range []string{"group", "comment"} {
			if v := res.opts[k]; v != "" {
				row[k] = v
			}
		}
		rows = append(rows, row)
	}
	writeData(w, rows)
}

// crmRound is one round of the HA manager: it picks up new resources, and carries out the
// requests it saw in the previous round. The caller holds s.mu.
func (s *Server) crmRound() {
	// The LRMs carry out the moves the CRM orders once its round is over: until then they are
	// under way, counting on both nodes for the round's later choices. Tasks a test holds stay
	// held.
	if !s.holding {
		s.holding = true
		defer s.finishHeld()
	}
	for _, n := range s.nodes {
		s.nodeBack(n)
	}
	// Disarming, the round goes on only for the services being recovered or moved.
	deferred := s.haDisarm != "" && s.disarmRound()
	if s.haDisarm != "" && !deferred {
		return
	}
	s.crmRounds++
	if s.haDisarm == "" {
		s.autoRebalance()
	}
	for _, res := range s.sortedHAResources() {
		g := s.guests[res.vmid]
		switch {
		case g == nil || res.state() == "ignored" || deferred && !res.recovering:
			continue
		case res.errored:
			// next_state_error: only a request to disable it leaves the error state.
			if res.opts["state"] == "disabled" {
				res.errored, res.failedNodes = false, nil
				res.stopFailed = g.status == "running"
			}
			continue
		case res.stopFailed:
			if res.state() != "started" {
				continue
			}
			res.stopFailed = false
		case !res.pickedUp:
			// Manager.pm adds a service requested stopped as request_stop: the stop is taken.
			res.pickedUp, res.seen, res.pickedIn = true, res.state() == "stopped" && g.status == "running", s.crmRounds
			continue
		case res.frozen:
			continue
		case res.recovering:
			// Disabled, a service no node can take leaves recovery as stopped
			// (next_state_recovery).
			if !s.recover(res) && res.requestState() == "disabled" {
				res.recovering = false
			}
			continue
		case s.fenced(res):
			// A service requested (back) on a failed node: the CRM fences and recovers it.
			res.recovering, res.migrateTo = true, ""
			s.recover(res)
			continue
		}
		node := s.node(g.node)
		if node == nil || g.lock != "" || s.maintenanceStep(res) != "" || !node.online {
			continue
		}
		pending := res.migrateTo != "" || (res.state() == "started") != (g.status == "running")
		if !pending {
			res.crmStopped = false
			if target := s.ruleTarget(res); target != "" {
				s.haMigrate(res, target, res.typ == "ct") // a container is relocated
			}
			continue
		}
		if !res.seen {
			s.rebalanceStart(res)
			res.seen, res.crmStopped = true, false
			continue
		}
		res.seen = false
		if target, relocate := res.migrateTo, res.relocate; target != "" {
			res.migrateTo = ""
			// The CRM refuses a move next to a service in negative affinity, and moves those in
			// positive affinity along (queue_resource_motion).
			if len(s.motionBlockers(res, target)) == 0 {
				s.haMigrate(res, target, relocate)
				for _, sid := range s.comigrated(res) {
					if peer := s.haResources[sid]; peer.migrateTo == "" && s.guests[peer.vmid].node != target {
						s.haMigrate(peer, target, relocate)
					}
				}
			}
			continue
		}
		switch {
		case res.state() == "started":
			s.lrmStart(res, g)
		case res.faults.Stops:
			res.errored = true // next_state_request_stop: "service ... stop failed"
		default:
			g.status = "stopped"
		}
	}
}

// haMigrate is the LRM carrying out a move the CRM ordered: qemu-server's migration
// (startMigration: a qmigrate task, the guest locked "migrate", online when it runs); a
// relocate shuts the guest down first and starts it again on target. Until the task ends the
// service shows the move and counts on both nodes. Disks on local storage move along
// (PVEVM.pm migrate passes with-local-disks). A move the LRM cannot do is dropped: a target
// that is unknown, not online for the HA manager or the guest's own node, or lacks the
// storage of a local disk. It tells whether the move started. The caller holds s.mu.
func (s *Server) haMigrate(res *haResource, target string, relocate bool) bool {
	g, t := s.guests[res.vmid], s.node(target)
	res.migrateTo, res.relocate, res.startBalance = "", false, false
	if t == nil || t.reportedHAState() != "online" || t.name == g.node {
		return false
	}
	// PVEVM's migrate calls migrate_vm with with-local-disks: local disks move along when the
	// target has their storage, and the migration fails (the service stays) when it has not.
	moves, msg := s.localDiskMoves(g, t, "")
	if msg != "" || res.faults.tries(&res.migrateTries, res.faults.Migrations, g.node) {
		return false
	}
	restart := relocate && g.status == "running"
	if restart {
		g.status = "stopped"
	}
	res.migrateTo, res.relocate = t.name, relocate
	s.startMigration(nil, g, t, moves, true, func(ok bool) {
		res.migrateTo, res.relocate, res.startBalance = "", false, false
		if restart {
			s.lrmStart(res, g)
		}
	})
	return true
}

// FailOver plays a node failure and the HA manager's recovery of an HA-managed guest on it:
// the guest's node goes offline (fenced), and the CRM recovers the guest on target, where it
// boots afresh when its requested state is started (a start that fails as on PVE: disks on
// storage target does not share are not there, see ha_start.go) and stays stopped otherwise.
// It refuses what PVE would not recover: a guest that is no HA-managed resource the CRM
// knows, a target that is unknown, offline or the guest's own node, and a target the HA rules
// forbid (recoveryNodes; FailNode lets the HA manager choose). SetNodeOnline brings the failed node back; the
// guest stays where it was recovered unless a node-affinity rule ranks the failed node higher
// (failback, ruleTarget), as in PVE.
func (s *Server) FailOver(vmid int, target string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, res, t := s.guests[vmid], s.haManaged(vmid), s.node(target)
	switch {
	case g == nil:
		return fmt.Errorf("pvesim: no guest %d to fail over", vmid)
	case res == nil || !res.pickedUp:
		return fmt.Errorf("pvesim: guest %d is no HA-managed resource the CRM knows", vmid)
	case t == nil || !t.online || t.name == g.node:
		return fmt.Errorf("pvesim: guest %d cannot be recovered on %q: not an online node other than %s", vmid, target, g.node)
	}
	n := s.node(g.node)
	n.online, res.recovering = false, true
	if !slices.Contains(s.recoveryNodes(res), target) {
		n.online, res.recovering = true, false
		return fmt.Errorf("pvesim: the HA rules do not let guest %d be recovered on %s", vmid, target)
	}
	res.recovering = false
	g.node, g.lock, g.status = t.name, "", "stopped"
	res.migrateTo, res.seen, res.crmStopped = "", false, false
	if res.state() == "started" {
		s.lrmStart(res, g)
	}
	return nil
}

// haTask runs a start, stop or migrate of an HA-managed VM as PVE does: a task (hastart,
// hastop, hamigrate) that only hands the request to the HA manager. The caller holds s.mu.
func (s *Server) haTask(w http.ResponseWriter, r *http.Request, res *haResource, typ, target string) {
	writeData(w, s.startTask(r, s.guests[res.vmid].node, typ, res.vmid, func() outcome {
		// The task runs ha-manager, whose request an errored service refuses.
		if msg := errorStateMsg(res); msg != "" && typ != "hastop" {
			cmd := map[string]string{"hastart": "set " + res.sid + " --state started", "hamigrate": "migrate " + res.sid + " " + target}[typ]
			return taskError("command 'ha-manager %s' failed: exit code 255", cmd)
		}
		switch typ {
		case "hastart":
			s.newRequest(res)
			res.opts["state"] = "started"
		case "hastop":
			s.newRequest(res)
			res.opts["state"] = "stopped"
		case "hamigrate":
			s.queueMove(res, target, false)
		}
		return taskOK()
	}, nil))
}

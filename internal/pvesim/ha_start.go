package pvesim

// The HA stack starting a service and recovering from a failed start, as pve-ha-manager does:
// the LRM starts the guest (PVEVM start, vm_start's checks: too many vCPUs, a missing cicustom
// snippet, a disk left behind on another node's local storage), retrying max_restart times on the
// node; then the CRM relocates it to another node, max_relocate times, and after that puts it
// into the error state, where it stays until it is requested disabled.

import (
	"fmt"
)

// policy is the resource's max_restart or max_relocate, 1 unless set (Config.pm
// read_and_check_resources_config).
func (r *haResource) policy(key string) int {
	if v, set := r.opts[key]; set {
		return atoi(v)
	}
	return 1
}

// lrmStart starts res's guest on its node as the LRM does: pending changes applied, then
// vm_start's checks (startProblem), which fail alike every time, and the failures SetHAFaults
// sets. The LRM retries a failed start max_restart times on the same node (LRM.pm
// handle_service_exitcode); then the node reports the error and the CRM applies its
// relocation policy (startFailed). It tells whether the guest runs. The caller holds s.mu.
func (s *Server) lrmStart(res *haResource, g *guest) bool {
	g.applyPending()
	for range 1 + res.policy("max_restart") {
		if s.startProblem(g) == "" && !res.faults.tries(&res.startTries, res.faults.Starts, g.node) {
			g.boot()
			res.failedNodes = nil
			return true
		}
	}
	s.startFailed(res, g)
	return false
}

// HAFaults are failures of the HA stack's actions on a guest, as pve-ha-manager's fake failing
// services (Sim/Resources/VirtFail.pm) play them: the first Starts attempts of every start and
// the first Migrations attempts of every migration fail (on Node only, when set; an action that
// succeeds, or one elsewhere, starts the count again), and with Stops every stop fails.
type HAFaults struct {
	Starts, Migrations int
	Stops              bool
	Node               string
}

// tries counts an attempt of an action that fails its first limit attempts on node (any node
// when HAFaults.Node is ""), and tells whether this one fails.
func (f HAFaults) tries(count *int, limit int, node string) bool {
	if limit > 0 && (f.Node == "" || f.Node == node) {
		*count++
		if *count <= limit {
			return true
		}
	}
	*count = 0
	return false
}

// SetHAFaults makes the HA stack's starts, migrations or stops of guest vmid fail as f says; the
// LRM's retries and the CRM's relocation policy and error state answer as in PVE.
func (s *Server) SetHAFaults(vmid int, f HAFaults) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	res := s.haResourceOf(vmid)
	switch {
	case res == nil:
		return fmt.Errorf("pvesim: guest %d is no HA resource", vmid)
	case f.Node != "" && s.node(f.Node) == nil:
		return fmt.Errorf("pvesim: no node %q", f.Node)
	case f.Starts < 0 || f.Migrations < 0:
		return fmt.Errorf("pvesim: %d start and %d migration attempts to fail: give 0 or more", f.Starts, f.Migrations)
	}
	res.faults, res.startTries, res.migrateTries = f, 0, 0
	return nil
}

// startFailed is the CRM's relocation policy after a failed start (Manager.pm
// next_state_started): the node joins the service's failed nodes; while they are at most
// max_relocate, the stopped service is migrated to the best node the rules allow where it has
// not failed (select_service_node 'try-next'), or it is retried where it is when there is
// none ("Tried all available nodes"); beyond max_relocate it enters the error state
// ("recovery policy for service ... failed, entering error state"). The caller holds s.mu.
func (s *Server) startFailed(res *haResource, g *guest) {
	res.failedNodes = append(res.failedNodes, g.node)
	if len(res.failedNodes) > res.policy("max_relocate") {
		res.errored = true
		return
	}
	// try-next: the best node left once those it failed on are set aside.
	for _, n := range s.byScore(res, s.candidates(res, res.failedNodes)) {
		if s.haMigrate(res, n, false) {
			return
		}
	}
}

// errorStateMsg is check_service_state's refusal (API2/HA/Resources.pm) of any request but
// state disabled for a service in the error state, "" when res is not in it.
func errorStateMsg(res *haResource) string {
	if !res.errored {
		return ""
	}
	return fmt.Sprintf("service '%s' in error state, must be disabled and fixed first", res.sid)
}

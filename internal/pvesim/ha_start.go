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
// vm_start's checks (startProblem). The LRM retries a failed start max_restart times on the
// same node (LRM.pm handle_service_exitcode); the simulator's starts fail alike every time, so
// the node then reports the error and the CRM applies its relocation policy (startFailed).
// It tells whether the guest runs. The caller holds s.mu.
func (s *Server) lrmStart(res *haResource, g *guest) bool {
	g.applyPending()
	if s.startProblem(g) != "" {
		s.startFailed(res, g)
		return false
	}
	g.boot()
	res.failedNodes = nil
	return true
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
	for _, n := range s.byScore(s.candidates(res, res.failedNodes)) {
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

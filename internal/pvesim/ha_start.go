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
// vm_start's checks (startProblem), which fail alike every time, and the failures FailHAStarts
// sets. The LRM retries a failed start max_restart times on the same node (LRM.pm
// handle_service_exitcode); then the node reports the error and the CRM applies its
// relocation policy (startFailed). It tells whether the guest runs. The caller holds s.mu.
func (s *Server) lrmStart(res *haResource, g *guest) bool {
	g.applyPending()
	for range 1 + res.policy("max_restart") {
		if s.startProblem(g) == "" && !res.startFails(g.node) {
			g.boot()
			res.failedNodes = nil
			return true
		}
	}
	s.startFailed(res, g)
	return false
}

// startFails tells whether a start attempt on node fails by FailHAStarts: the first attempts
// of each start, on its node when one is set; a start that succeeds, or one on another node,
// makes the next start fail again.
func (r *haResource) startFails(node string) bool {
	if r.failStarts > 0 && (r.failStartsOn == "" || r.failStartsOn == node) {
		r.startTries++
		if r.startTries <= r.failStarts {
			return true
		}
	}
	r.startTries = 0
	return false
}

// FailHAStarts makes the HA stack's starts of guest vmid fail: the first attempts of every
// start, attempts of them (on node only, when not ""), as a service failing on a resource it
// lacks would; the LRM's retries and the CRM's relocation policy answer as in PVE.
func (s *Server) FailHAStarts(vmid, attempts int, node string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	res := s.haResourceOf(vmid)
	switch {
	case res == nil:
		return fmt.Errorf("pvesim: guest %d is no HA resource", vmid)
	case node != "" && s.node(node) == nil:
		return fmt.Errorf("pvesim: no node %q", node)
	case attempts < 0:
		return fmt.Errorf("pvesim: %d start attempts to fail: give 0 or more", attempts)
	}
	res.failStarts, res.failStartsOn, res.startTries = attempts, node, 0
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

package pvesim

// Disarming the HA stack (pve-ha-manager 5.2, Manager.pm handle_disarm): the CRM stops acting
// on services, freezing them in place (freeze) or leaving them untracked (ignore), and the LRMs
// release their watchdogs, so that no node is fenced meanwhile; arming it again resumes the
// state machine, which unfreezes the services where they are.

import "fmt"

// DisarmHA plays `ha-manager crm-command disarm-ha <mode>`, mode freeze or ignore. The CRM
// takes it in its next round once no service is being fenced, recovered or moved: a move only
// queued is dropped, and with freeze every service is frozen (CRM state freeze, its guest left
// as it is); with ignore, the CRM shows each service on its node of then, wherever its guest is
// moved (SetGuestNode). Until ArmHA it starts, stops, moves, recovers and fails back nothing, and refuses
// node maintenance. A second disarm is ignored by the CRM: an error says so.
func (s *Server) DisarmHA(mode string) error {
	if mode != "freeze" && mode != "ignore" {
		return fmt.Errorf("pvesim: disarm-ha mode %q is not freeze or ignore", mode)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.haDisarm != "" {
		return fmt.Errorf("pvesim: the HA stack is disarmed already (%s), and PVE's CRM ignores the command: disarm-ha %s", s.haDisarm, mode)
	}
	s.haDisarm, s.haDisarmed, s.haActive = mode, false, true
	return nil
}

// ArmHA plays `ha-manager crm-command arm-ha`: the CRM resumes, unfreezing the services on
// nodes that are up (started ones run on, the others are stopped), and in ignore mode taking
// the nodes guests were moved to meanwhile. The CRM ignores it when the
// stack is not disarmed: an error says so.
func (s *Server) ArmHA() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.haDisarm == "" {
		return fmt.Errorf("pvesim: the HA stack is not disarmed, and PVE's CRM ignores the command: arm-ha")
	}
	s.haDisarm, s.haDisarmed = "", false
	for _, res := range s.haResources {
		// From ignore mode, the CRM takes the node the guest was moved to meanwhile.
		res.disarmedOn = ""
		if g := s.guests[res.vmid]; g != nil && res.frozen && s.haShutdown[g.node] == "" {
			res.frozen = false
		}
	}
	return nil
}

// disarmRound is the CRM's round while disarm is requested: it lets the services being fenced,
// recovered or moved finish (the round goes on for them only) and then disarms: a queued move
// is dropped, and in freeze mode every service is frozen. It tells whether the CRM still runs
// the state machine for some services (deferred). The caller holds s.mu.
func (s *Server) disarmRound() (deferred bool) {
	if s.haDisarmed {
		return false
	}
	for _, res := range s.haResources {
		if g := s.guests[res.vmid]; g != nil && (res.recovering || g.lock == "migrate") {
			return true
		}
	}
	for _, res := range s.haResources {
		if res.pickedUp && res.state() != "ignored" {
			res.migrateTo, res.relocate, res.seen = "", false, false
			res.frozen = res.frozen || s.haDisarm == "freeze" && !res.errored
			if s.haDisarm == "ignore" {
				res.disarmedOn = s.guests[res.vmid].node
			}
		}
	}
	s.haDisarmed = true
	return false
}

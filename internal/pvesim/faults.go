package pvesim

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

type fault struct {
	endpoint string // "POST /nodes/{node}/qemu"
	left     int
	// rate, when set, fails that fraction of requests instead of the next left ones.
	rate    float64
	status  int
	message string
	// lose serves the request, then drops the connection: the client never hears that it
	// succeeded.
	lose bool
	// served serves the request, then answers status and message instead (a proxy in
	// between that fails after PVE acted).
	served bool
	// always fails every request from now on (a missing permission).
	always bool
	// taskType, when set, limits the fault to requests about tasks of that type (their UPID
	// names it), and skip lets that many of them through first.
	taskType string
	skip     int
	// moveTo, when set, is no failure: before the request about guest vmid is served, the
	// HA manager moves that guest there (MoveBefore).
	vmid   int
	moveTo string
}

// taskStatus is the endpoint a client polls while it waits for a task.
const taskStatus = "GET /nodes/{node}/tasks/{upid}/status"

// FailTaskPolls makes status polls of tasks of type taskType (qmcreate, qmclone, ...) fail:
// the first after polls are answered, the next n get status and message (595 "No route to
// host" plays a node that drops out for a moment). The task itself runs on.
func (s *Server) FailTaskPolls(taskType string, after, n, status int, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &fault{endpoint: taskStatus, taskType: taskType, skip: after, left: n, status: status, message: message})
}

// LoseTaskPolls is FailTaskPolls with answers that never arrive: the connection drops.
func (s *Server) LoseTaskPolls(taskType string, after, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &fault{endpoint: taskStatus, taskType: taskType, skip: after, left: n, lose: true})
}

// FailRequests makes the next n requests to endpoint (e.g. "POST /nodes/{node}/qemu") fail
// with status and message; 503 "Service Unavailable" simulates a transient proxy error.
func (s *Server) FailRequests(endpoint string, n, status int, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &fault{endpoint: endpoint, left: n, status: status, message: message})
}

// FailRate makes a fraction (0..1) of the requests to endpoint fail with status and message,
// drawn from the server's seeded random source, so a run is repeatable.
func (s *Server) FailRate(endpoint string, rate float64, status int, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &fault{endpoint: endpoint, rate: rate, status: status, message: message})
}

// ReplaceResponses makes the next n requests to endpoint take effect, but answers them with
// status and message: a proxy that fails after PVE acted.
func (s *Server) ReplaceResponses(endpoint string, n, status int, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &fault{endpoint: endpoint, left: n, served: true, status: status, message: message})
}

// LoseResponses makes the next n requests to endpoint take effect but never answer: the
// connection drops, as when a proxy or the network fails after PVE acted.
func (s *Server) LoseResponses(endpoint string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &fault{endpoint: endpoint, left: n, lose: true})
}

// Forbid makes every later request to endpoint answer 403 as PVE does for a user or token
// without privilege on path, e.g. Forbid("GET /nodes/{node}/config", "/", "Sys.Audit").
func (s *Server) Forbid(endpoint, path, privilege string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &fault{endpoint: endpoint, always: true, status: http.StatusForbidden,
		message: fmt.Sprintf("Permission check failed (%s, %s)", path, privilege)})
}

func (s *Server) takeFault(endpoint, path string) *fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.faults {
		switch {
		case f.endpoint != endpoint:
		case f.vmid != 0 && !aboutGuest(path, f.vmid):
		case f.taskType != "" && !strings.Contains(path, ":"+f.taskType+":"):
		case f.skip > 0:
			f.skip--
			return nil
		case f.always:
			return f
		case f.rate > 0:
			if s.rng.Float64() < f.rate {
				return f
			}
		case f.left > 0:
			f.left--
			return f
		}
	}
	return nil
}

// MoveBefore plays PVE's HA manager moving HA-managed guest vmid to target just before the
// next request to endpoint about that guest is served: the move a client races between its
// lookup of the guest and its write (the CRM acts every ~10 s, and at once on a rule just
// written). The move is the CRM's migration (a qmigrate task, the guest locked "migrate" on
// its source until it ends; HoldTasks keeps it running); one the HA manager cannot make
// (haMigrate) is dropped. It refuses a guest that is no HA resource the CRM knows.
func (s *Server) MoveBefore(endpoint string, vmid int, target string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if res := s.haManaged(vmid); res == nil || !res.pickedUp {
		return fmt.Errorf("pvesim: guest %d is no HA-managed resource the CRM knows", vmid)
	}
	s.faults = append(s.faults, &fault{endpoint: endpoint, left: 1, vmid: vmid, moveTo: target})
	return nil
}

// moveNow is the HA manager's move of MoveBefore; the caller holds s.mu.
func (s *Server) moveNow(f *fault) {
	if res := s.haManaged(f.vmid); res != nil && s.guests[f.vmid] != nil {
		s.haMigrate(res, f.moveTo, false)
	}
}

// aboutGuest tells whether an API path names guest vmid (/nodes/{node}/qemu/{vmid}/...).
func aboutGuest(path string, vmid int) bool {
	id := "/qemu/" + strconv.Itoa(vmid)
	return strings.HasSuffix(path, id) || strings.Contains(path, id+"/")
}

// FailNextTask makes the next task of the given type (qmcreate, qmclone, qmstart, ...) end
// with exitstatus message instead of OK.
func (s *Server) FailNextTask(taskType, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing[taskType] = message
}

// SetNodeOnline takes a node offline (every /nodes/{node}/... request answers 595) or back.
func (s *Server) SetNodeOnline(name string, online bool) error {
	return s.withNode(name, func(n *node) error {
		n.online = online
		return nil
	})
}

// TakeVMID plays an outside actor (another Terraform run, a human) creating a stopped VM named
// outsider-<vmid> with that id on the first node. It is a no-op when the id is already taken
// or the cluster has no nodes.
func (s *Server) TakeVMID(vmid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, taken := s.guests[vmid]; taken || len(s.nodes) == 0 {
		return
	}
	s.guests[vmid] = &guest{vmid: vmid, node: s.nodes[0].name, typ: "qemu", status: "stopped", hasStats: true,
		config: map[string]string{"name": fmt.Sprintf("outsider-%d", vmid), "memory": "512", "cores": "1"}}
}

// SetGuestNode moves a guest to another node at once, as an admin would (FailOver plays the
// HA manager's recovery).
func (s *Server) SetGuestNode(vmid int, nodeName string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, found := s.guests[vmid]
	switch {
	case !found:
		return fmt.Errorf("pvesim: no guest %d to move", vmid)
	case s.node(nodeName) == nil:
		return fmt.Errorf("pvesim: no node %q to move guest %d to", nodeName, vmid)
	}
	g.node = nodeName
	return nil
}

// SetTaskDuration changes how long tasks started from now on take.
func (s *Server) SetTaskDuration(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taskDuration = d
}

// HoldTasks keeps tasks started from now on running until ReleaseTasks, so a test can act
// while a task is in flight (take its vmid, move its VM) without racing a timer: a held task
// has taken its locks, and its worker does its work at release (a migration's target found
// down then fails the first step, "migration aborted"). With types, only tasks of those
// types (qmigrate, ...) are held.
func (s *Server) HoldTasks(types ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holding, s.holdTypes = true, types
}

// ReleaseTasks stops holding and completes the held tasks in the order they started; a task
// one of them starts (a create's autostart) is not held.
func (s *Server) ReleaseTasks() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finishHeld()
}

// finishHeld stops holding and completes the held tasks in the order they started. The caller
// holds s.mu.
func (s *Server) finishHeld() {
	held := s.held
	s.held, s.holding, s.holdTypes = nil, false, nil
	for _, finish := range held {
		finish()
	}
}

// Tick publishes stats for every guest, ending the lag simulated by WithStatsLag.
func (s *Server) Tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.guests {
		g.hasStats = true
	}
}

// DeleteGuest removes a guest behind Terraform's back.
func (s *Server) DeleteGuest(vmid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.guests, vmid)
}

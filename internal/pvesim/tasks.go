package pvesim

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

type task struct {
	upid      string
	node      string
	typ       string
	id        string
	user      string
	pid       int
	start     time.Time
	done      bool
	exit      string
	startTime int64
}

// startTask mints a UPID and runs action when the task completes: at once, or after the task
// duration. action runs under s.mu and returns "" for OK or the error text. holds, when set, is
// the guest the task locked; a failed task releases the lock (a successful action does so
// itself). The caller holds s.mu.
func (s *Server) startTask(nodeName, typ string, id int, holds *guest, action func() string) string {
	s.pid++
	now := time.Now()
	user := "root@pam"
	t := &task{node: nodeName, typ: typ, id: strconv.Itoa(id), user: user, pid: s.pid, start: now, startTime: now.Unix()}
	t.upid = fmt.Sprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", nodeName, t.pid, s.pid*7, t.startTime, typ, t.id, user)
	s.tasks[t.upid] = t
	if s.firstTaskStart.IsZero() {
		s.firstTaskStart = now
	}
	finish := func() {
		if msg, ok := s.failing[typ]; ok {
			delete(s.failing, typ)
			t.exit = msg
		} else if err := action(); err != "" {
			t.exit = err
		} else {
			t.exit = "OK"
		}
		t.done = true
		s.lastTaskEnd = time.Now()
		if t.exit != "OK" && holds != nil {
			holds.lock = ""
		}
	}
	if s.taskDuration <= 0 {
		finish()
		return t.upid
	}
	time.AfterFunc(s.taskDuration, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		finish()
	})
	return t.upid
}

func (s *Server) handleTaskStatus(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.requireOnline(w, r) {
		return
	}
	t, ok := s.tasks[r.PathValue("upid")]
	if !ok {
		writeStatus(w, http.StatusBadRequest, "Parameter verification failed.", map[string]string{"upid": "no such task"})
		return
	}
	status := map[string]any{
		"upid": t.upid, "node": t.node, "pid": t.pid, "pstart": t.pid * 7, "starttime": t.startTime,
		"type": t.typ, "id": t.id, "user": t.user, "status": "running",
	}
	if t.done {
		status["status"] = "stopped"
		status["exitstatus"] = t.exit
	}
	writeData(w, status)
}

// TaskWindow returns when the first task started and the last one finished: the wall time a
// client kept the cluster busy, without its own planning before the first task.
func (s *Server) TaskWindow() (first, last time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.firstTaskStart, s.lastTaskEnd
}

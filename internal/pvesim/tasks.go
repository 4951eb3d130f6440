package pvesim

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

type task struct {
	upid      string
	node      string
	typ       string
	id        string
	user      string
	pid       int
	pstart    int
	startTime int64
	endTime   int64
	done      bool
	exit      string
	log       []string
	// finish ends the task with its action's outcome, or with interrupted's when the task
	// was stopped first; it does nothing once the task is done.
	finish      func()
	interrupted bool
}

// outcome is what a task's action reports: "" for OK, or the error text; log are lines the
// worker printed; warnings are logged lines that turn an OK into "WARNINGS: n".
type outcome struct {
	err      string
	log      []string
	warnings []string
}

func taskOK() outcome { return outcome{} }

func taskError(format string, a ...any) outcome { return outcome{err: fmt.Sprintf(format, a...)} }

// startTask mints a UPID for a worker of type typ on nodeName, started by the request's user,
// and runs action when the task completes: at once, or after the task duration. An injected
// failure (FailNextTask) replaces the action. release, when set, runs after either, to drop
// the locks the task held; ok says whether the task succeeded. Both run under s.mu, which
// the caller holds.
func (s *Server) startTask(r *http.Request, nodeName, typ string, id int, action func() outcome, release func(ok bool)) string {
	return s.startWorker(r, nodeName, typ, strconv.Itoa(id), action, release)
}

// startWorker is startTask for a worker whose id is not a VMID: a storage's (imgdel
// "100@local"), a file name (download), or none (imgcopy).
func (s *Server) startWorker(r *http.Request, nodeName, typ, id string, action func() outcome, release func(ok bool)) string {
	s.pid++
	now := time.Now()
	t := &task{node: nodeName, typ: typ, id: id, user: requestUser(r), pid: s.pid, pstart: s.pid * 7, startTime: now.Unix()}
	t.upid = fmt.Sprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", nodeName, t.pid, t.pstart, t.startTime, typ, t.id, t.user)
	s.tasks[t.upid] = t
	if s.firstTaskStart.IsZero() {
		s.firstTaskStart = now
	}
	t.finish = func() {
		if t.done {
			return
		}
		var res outcome
		switch msg, failing := s.failing[typ]; {
		case t.interrupted:
			// fork_worker's SIGTERM handler dies, so the worker's action never completes.
			res = outcome{err: "received interrupt"}
		case failing:
			delete(s.failing, typ)
			res = outcome{err: msg}
		default:
			res = action()
		}
		t.log = append(append(t.log, res.log...), res.warnings...)
		switch {
		case res.err != "":
			t.exit = res.err
			t.log = append(t.log, "TASK ERROR: "+res.err)
		case len(res.warnings) > 0:
			t.exit = fmt.Sprintf("WARNINGS: %d", len(res.warnings))
			t.log = append(t.log, "TASK "+t.exit)
		default:
			t.exit = "OK"
			t.log = append(t.log, "TASK OK")
		}
		// The task ends (and enters the task index) before a worker it forks on its way out
		// (a create's autostart, started by release) can.
		t.done = true
		s.lastTaskEnd = time.Now()
		t.endTime = s.lastTaskEnd.Unix()
		s.archived = append(s.archived, t)
		if release != nil {
			release(res.err == "")
		}
	}
	switch {
	case s.holds(typ):
		s.held = append(s.held, t.finish)
		return t.upid
	case s.taskDuration <= 0:
		t.finish()
		return t.upid
	}
	time.AfterFunc(s.taskDuration, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		t.finish()
	})
	return t.upid
}

var upidPattern = regexp.MustCompile(`^UPID:([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?):([0-9A-Fa-f]{8}):([0-9A-Fa-f]{8,9}):([0-9A-Fa-f]{8}):([^:\s/]+):([^:\s/]*):([^:\s/]+):$`)

// taskFor finds the task named in the path, answering like PVE when the UPID is malformed or
// unknown on that node. The caller holds s.mu.
func (s *Server) taskFor(w http.ResponseWriter, r *http.Request) *task {
	if !s.requireOnline(w, r) {
		return nil
	}
	upid := r.PathValue("upid")
	if !upidPattern.MatchString(upid) {
		paramError(w, "upid", "unable to parse worker upid")
		return nil
	}
	t, found := s.tasks[upid]
	if !found || t.node != r.PathValue("node") {
		paramError(w, "upid", "no such task")
		return nil
	}
	return t
}

// row is the task as the task calls show it: a token's tasks name the bare user and the
// token id separately (Tasks.pm convert_token_task).
func (t *task) row() map[string]any {
	row := map[string]any{
		"upid": t.upid, "node": t.node, "pid": t.pid, "pstart": t.pstart, "starttime": t.startTime,
		"type": t.typ, "id": t.id, "user": t.user,
	}
	if user, token, isToken := strings.Cut(t.user, "!"); isToken {
		row["user"], row["tokenid"] = user, token
	}
	return row
}

func (s *Server) handleTaskStatus(w http.ResponseWriter, r *http.Request, t *task) {
	status := t.row()
	status["status"] = "running"
	if t.done {
		status["status"] = "stopped"
		status["exitstatus"] = t.exit
	}
	writeData(w, status)
}

// handleTaskLog is GET /nodes/{node}/tasks/{upid}/log: numbered lines from start (0-based),
// at most limit (default 50), and the total.
func (s *Server) handleTaskLog(w http.ResponseWriter, r *http.Request, t *task) {
	start, limit := atoi(r.URL.Query().Get("start")), 50
	if l := r.URL.Query().Get("limit"); l != "" {
		limit = atoi(l)
	}
	lines := append([]string{fmt.Sprintf("%s %s started by %s", t.typ, t.id, t.user)}, t.log...)
	rows := []map[string]any{}
	for i := start; i < len(lines) && len(rows) < limit; i++ {
		rows = append(rows, map[string]any{"n": i + 1, "t": lines[i]})
	}
	writeEnvelope(w, map[string]any{"data": rows, "total": len(lines)})
}

// handleTaskStop is DELETE /nodes/{node}/tasks/{upid} (pve-manager API2/Tasks.pm stop_task,
// RESTEnvironment check_worker with killit): a running task gets SIGTERM, its worker dies
// "received interrupt" and the task ends with that error; a finished task is left as it is.
// Either way the answer is null. The simulator's users own every task (and are all-powerful),
// so the Sys.Modify check for another user's task always passes.
func (s *Server) handleTaskStop(w http.ResponseWriter, r *http.Request, t *task) {
	if _, ok := readAllowedParams(w, r); !ok {
		return
	}
	if !t.done {
		t.interrupted = true
		t.finish()
	}
	writeData(w, nil)
}

// TaskWindow returns when the first task started and the last one finished: the wall time a
// client kept the cluster busy, without its own planning before the first task.
func (s *Server) TaskWindow() (first, last time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.firstTaskStart, s.lastTaskEnd
}

// holds tells whether a task of type typ started now is held until ReleaseTasks: it has
// taken its locks, but its worker does its work only at release. The caller holds s.mu.
func (s *Server) holds(typ string) bool {
	return s.holding && (len(s.holdTypes) == 0 || contains(s.holdTypes, typ))
}

// taskListProps are the parameters of GET /nodes/{node}/tasks (pve-manager API2/Tasks.pm
// node_tasks).
var taskListProps = map[string]prop{
	"start": intProp().atLeast(0), "limit": intProp().atLeast(0), "userfilter": strProp(), "typefilter": strProp(),
	"vmid": intProp().between(100, 999999999), "errors": boolProp(), "source": enumProp("archive", "active", "all"),
	"since": intProp(), "until": intProp(), "statusfilter": checkedProp(checkTaskStatusList),
}

// checkTaskStatusList is the pve-task-status-type-list format.
func checkTaskStatusList(v string) string {
	for _, s := range splitList(v) {
		if !contains([]string{"ok", "error", "warning", "unknown"}, strings.ToLower(s)) {
			return fmt.Sprintf("invalid status '%s'", s)
		}
	}
	return ""
}

// taskStatusType is PVE::UPID normalize_status_type.
func taskStatusType(status string) string {
	switch {
	case status == "" || status == "unexpected status":
		return "unknown"
	case status == "OK":
		return "ok"
	case taskWarnings.MatchString(status):
		return "warning"
	}
	return "error"
}

var taskWarnings = regexp.MustCompile(`^WARNINGS: \d+$`)

// handleTaskList is GET /nodes/{node}/tasks (Tasks.pm node_tasks): the node's running tasks
// first with status RUNNING (source active or all), then its finished ones (source archive,
// the default, or all), most recently finished first, with their exit status as status;
// filtered by user (a substring, any case), type, vmid, start time and status type (errors: all
// but OK), then paged by start and limit (50); total counts the tasks that passed the filters.
// The simulator's users see every task, as a Sys.Audit holder does.
func (s *Server) handleTaskList(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.onlineParams(w, r, slices.Sorted(maps.Keys(taskListProps))...)
	if !ok {
		return
	}
	problems := map[string]string{}
	for k := range p {
		if msg := checkTyped(p, k, taskListProps[k]); msg != "" {
			problems[k] = msg
		}
	}
	if len(problems) > 0 {
		writeParamError(w, problems)
		return
	}
	node, start, limit := r.PathValue("node"), atoi(p["start"]), 50
	if v, set := p["limit"]; set {
		limit = atoi(v)
	}
	wanted := map[string]bool{"ok": true, "warning": true, "error": true, "unknown": true}
	switch {
	case p["errors"] == "1":
		wanted["ok"] = false
	case p["statusfilter"] != "":
		wanted = map[string]bool{}
		for _, f := range splitList(p["statusfilter"]) {
			wanted[strings.ToLower(f)] = true
		}
	}
	var candidates []*task
	if src := cmp.Or(p["source"], "archive"); src != "archive" {
		for _, t := range slices.SortedFunc(maps.Values(s.tasks), func(a, b *task) int { return a.pid - b.pid }) {
			if !t.done && t.node == node {
				candidates = append(candidates, t)
			}
		}
	}
	if p["source"] != "active" {
		for i := len(s.archived) - 1; i >= 0; i-- {
			if t := s.archived[i]; t.node == node {
				candidates = append(candidates, t)
			}
		}
	}
	rows, count := []map[string]any{}, 0
	for _, t := range candidates {
		row := t.row()
		status := t.exit // "" while running: unknown, as in PVE's filter
		switch {
		case p["userfilter"] != "" && !strings.Contains(strings.ToLower(row["user"].(string)), strings.ToLower(p["userfilter"])):
			continue
		case p["typefilter"] != "" && t.typ != p["typefilter"]:
			continue
		case p["vmid"] != "" && t.id != p["vmid"]:
			continue
		case p["since"] != "" && t.startTime < int64(atoi(p["since"])):
			continue
		case p["until"] != "" && t.startTime > int64(atoi(p["until"])):
			continue
		case !wanted[taskStatusType(status)]:
			continue
		}
		count++
		if count <= start || len(rows) >= limit {
			continue
		}
		if t.done {
			row["endtime"], row["status"] = t.endTime, t.exit
		} else {
			row["status"] = "RUNNING"
		}
		rows = append(rows, row)
	}
	writeEnvelope(w, map[string]any{"data": rows, "total": count})
}

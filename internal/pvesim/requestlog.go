package pvesim

import (
	"bufio"
	"net"
	"net/http"
	"strings"
)

// LoggedRequest is one API request as the server answered it.
type LoggedRequest struct {
	Method string
	// Path is the request path after /api2/json, empty segments skipped, without the query.
	Path   string
	Status int
}

// maxLoggedRequests bounds the request log of a long-running simulator: the newest are kept.
const maxLoggedRequests = 100000

// RequestLog returns the requests served so far (the newest 100,000), in the order they
// were answered: a test asserts, for instance, that a client met no 501 (an endpoint the
// simulator does not route).
func (s *Server) RequestLog() []LoggedRequest {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return append([]LoggedRequest(nil), s.requestLog...)
}

// WithRequestHook calls hook with every request as its answer is written, e.g. to print a log
// of the requests. The hook runs inside the request's handling: it must not call the Server.
func WithRequestHook(hook func(LoggedRequest)) Option {
	return func(s *Server) { s.requestHook = hook }
}

func (s *Server) logRequest(r *http.Request, status int) {
	entry := LoggedRequest{Method: r.Method, Path: strings.TrimPrefix(r.URL.Path, apiPrefix), Status: status}
	// Its own lock: handlers write their answers holding s.mu.
	s.logMu.Lock()
	if len(s.requestLog) >= maxLoggedRequests {
		s.requestLog = append(s.requestLog[:0], s.requestLog[len(s.requestLog)-maxLoggedRequests/2:]...)
	}
	s.requestLog = append(s.requestLog, entry)
	hook := s.requestHook
	s.logMu.Unlock()
	if hook != nil {
		hook(entry)
	}
}

// statusWriter remembers the status of an answer, also one written on the hijacked
// connection (writeRaw reports it), and logs the request as soon as the status is known:
// before the client can see the answer, so a client's next request is logged after it.
type statusWriter struct {
	http.ResponseWriter
	status int
	logged bool
	log    func(status int)
}

// setStatus records the answer's status and logs the request, once.
func (w *statusWriter) setStatus(code int) {
	if w.logged {
		return
	}
	w.status, w.logged = code, true
	w.log(code)
}

func (w *statusWriter) WriteHeader(code int) {
	w.setStatus(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.setStatus(http.StatusOK)
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, http.ErrNotSupported
	}
	return hj.Hijack()
}

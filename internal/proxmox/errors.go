package proxmox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
)

// Sentinel errors the provider acts on; match them with errors.Is.
var (
	ErrNotFound      = errors.New("not found")
	ErrAlreadyExists = errors.New("vmid already exists")
	ErrUnauthorized  = errors.New("authentication failed")
	ErrForbidden     = errors.New("permission denied")
	ErrNodeOffline   = errors.New("node offline")
	ErrTransient     = errors.New("transient failure")
	// ErrTaskFailed is a PVE task that ended with an error PVE explains only in its text.
	ErrTaskFailed = errors.New("task failed")
	// ErrTaskUnknown is a task whose end could not be read: it may have done its work.
	ErrTaskUnknown = errors.New("task outcome unknown")
)

// APIError is a failed PVE call: what we did, the HTTP status (0 for network errors and
// failed tasks) and PVE's own message.
type APIError struct {
	Op      string
	Status  int
	Message string
	kind    error
	cause   error
}

func (e *APIError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s: %s (HTTP %d)", e.Op, e.Message, e.Status)
	}
	return fmt.Sprintf("%s: %s", e.Op, e.Message)
}

// Is makes errors.Is(err, ErrNotFound) and friends work.
func (e *APIError) Is(target error) bool { return e.kind != nil && target == e.kind }

// Unwrap exposes the underlying transport error (a timeout, a refused connection), if any.
func (e *APIError) Unwrap() error { return e.cause }

// classify maps a PVE answer to a typed error. status and reason come from the HTTP status
// line, where PVE puts its message for every error but 400; err is what go-proxmox made of
// the answer (for 400 it holds PVE's per-parameter "errors" map).
func classify(op string, status int, reason string, err error) error {
	e := &APIError{Op: op, Status: status, Message: pveMessage(status, reason, err), cause: err}
	msg := e.Message
	switch {
	case status == 401:
		e.kind = ErrUnauthorized
		e.Message = msg + ": check api_token, or username and password"
	case status == 403:
		e.kind = ErrForbidden
	case status == 595:
		e.kind = ErrNodeOffline
		e.Message = "node is offline or unreachable (" + msg + ")"
	case status == 404 || strings.Contains(msg, "Configuration file") && strings.Contains(msg, "does not exist"):
		e.kind = ErrNotFound
	case strings.Contains(msg, "already exists"):
		e.kind = ErrAlreadyExists
	case status == 429 || status == 502 || status == 503 || status == 504 || transientText(msg):
		e.kind = ErrTransient
	case status == 0 && isNetworkError(err):
		e.kind = ErrTransient
	}
	return e
}

// pveMessage picks PVE's explanation out of an answer (or, for a task, its exit status).
func pveMessage(status int, reason string, err error) string {
	switch {
	case status == 400 && err != nil:
		// go-proxmox renders it as "bad request: 400 <reason> - {"param":"message",...}".
		if _, details, ok := strings.Cut(err.Error(), " - "); ok {
			if params := paramErrors(details); params != "" {
				return strings.TrimSuffix(reason, ".") + ": " + params
			}
		}
		return reason
	case reason != "" && (status >= 300 || err == nil):
		return reason
	case err != nil:
		// A 2xx whose body did not decode, or no answer at all.
		return err.Error()
	default:
		return fmt.Sprintf("HTTP status %d", status)
	}
}

// paramErrors renders PVE's {"param":"message"} map as "param: message; ...".
func paramErrors(details string) string {
	var m map[string]string
	if json.Unmarshal([]byte(details), &m) != nil || len(m) == 0 {
		return ""
	}
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + strings.TrimSpace(m[k])
	}
	return strings.Join(parts, "; ")
}

// transientText recognises PVE's lock and worker timeouts, which clear up on retry.
func transientText(msg string) bool {
	for _, s := range []string{"got timeout", "cfs-lock", "can't lock file", "got no worker upid"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func isNetworkError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && !errors.Is(err, context.Canceled)
}

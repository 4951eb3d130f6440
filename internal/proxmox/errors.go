package proxmox

import (
	"context"
	"errors"
	"fmt"
	"net"
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
	ErrTaskFailed    = errors.New("task failed")
)

// APIError is a failed PVE call: what we did, the HTTP status (0 for network errors and
// failed tasks) and PVE's own message.
type APIError struct {
	Op      string
	Status  int
	Message string
	kind    error
}

func (e *APIError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s: %s (HTTP %d)", e.Op, e.Message, e.Status)
	}
	return fmt.Sprintf("%s: %s", e.Op, e.Message)
}

// Is makes errors.Is(err, ErrNotFound) and friends work.
func (e *APIError) Is(target error) bool { return e.kind != nil && target == e.kind }

// classify maps a PVE answer to a typed error. status and reason come from the HTTP response
// (go-proxmox keeps only the status line for 500s and loses 595's meaning entirely).
func classify(op string, status int, reason string, err error) error {
	msg := reason
	if msg == "" && err != nil {
		msg = err.Error()
	}
	e := &APIError{Op: op, Status: status, Message: msg}
	switch {
	case status == 401:
		e.kind = ErrUnauthorized
		e.Message = msg + ": check api_token, or username and password"
	case status == 403:
		e.kind = ErrForbidden
	case status == 595:
		e.kind = ErrNodeOffline
		e.Message = "node is offline or unreachable (" + msg + ")"
	case status == 404 || strings.Contains(msg, "does not exist") && strings.Contains(msg, "Configuration file"):
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

// transientText recognises PVE's lock timeouts, which clear up on retry.
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

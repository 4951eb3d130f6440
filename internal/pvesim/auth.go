package pvesim

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// authorized accepts an API token (Authorization: PVEAPIToken=USER@REALM!ID=SECRET, "=" or a
// space after PVEAPIToken) or a ticket (cookie PVEAuthCookie, or Authorization:
// PVEAuthCookie=...) plus, on writes, the CSRF header. Otherwise it answers 401 as pveproxy
// does, without its 3 s delay. It returns the user tasks are started as.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) (string, bool) {
	auth := r.Header.Get("Authorization")
	if token, ok := apiToken(auth); ok {
		// pveproxy splits the token at its last "=": id, then secret.
		i := strings.LastIndex(token, "=")
		if i < 0 || token[:i] != s.tokenID || token[i+1:] != s.tokenSecret {
			writeError(w, http.StatusUnauthorized, "authentication failure")
			return "", false
		}
		return s.tokenID, true
	}
	ticket, ok := strings.CutPrefix(auth, "PVEAuthCookie=")
	if !ok {
		cookie, err := r.Cookie("PVEAuthCookie")
		if err != nil {
			writeError(w, http.StatusUnauthorized, "No ticket")
			return "", false
		}
		ticket = cookie.Value
	}
	s.mu.Lock()
	csrf, known := s.tickets[ticket]
	s.mu.Unlock()
	if !known {
		writeError(w, http.StatusUnauthorized, "authentication failure")
		return "", false
	}
	if r.Method != http.MethodGet && r.Header.Get("CSRFPreventionToken") != csrf {
		writeError(w, http.StatusUnauthorized, "Permission denied - invalid csrf token")
		return "", false
	}
	return s.username, true
}

func apiToken(header string) (string, bool) {
	for _, sep := range []string{"PVEAPIToken=", "PVEAPIToken "} {
		if i := strings.Index(header, sep); i >= 0 && (i == 0 || header[i-1] == ' ') {
			token, _, _ := strings.Cut(header[i+len(sep):], ";")
			return token, true
		}
	}
	return "", false
}

// handleTicket is POST /access/ticket: a login with username (USER@REALM, or USER plus realm)
// and password.
func (s *Server) handleTicket(w http.ResponseWriter, r *http.Request) {
	p, ok := readParams(w, r)
	if !ok {
		return
	}
	user := p["username"]
	if !strings.Contains(user, "@") && p["realm"] != "" {
		user += "@" + p["realm"]
	}
	if user != s.username || p["password"] != s.password {
		writeError(w, http.StatusUnauthorized, "authentication failure")
		return
	}
	stamp := fmt.Sprintf("%08X", time.Now().Unix())
	ticket := "PVE:" + user + ":" + stamp + "::" + randomHex(32)
	csrf := stamp + ":" + randomHex(20)
	s.mu.Lock()
	s.tickets[ticket] = csrf
	s.mu.Unlock()
	writeData(w, map[string]any{"username": user, "ticket": ticket, "CSRFPreventionToken": csrf,
		"cap": map[string]any{}, "clustername": "sim"})
}

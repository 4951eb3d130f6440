package pvesim

import (
	"net/http"
	"strings"
)

// authorized accepts an API token header, or a ticket cookie plus (on writes) the CSRF
// header, and answers 401 otherwise, as pveproxy does (without its 3 s delay).
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if auth := r.Header.Get("Authorization"); auth != "" {
		if strings.TrimPrefix(auth, "PVEAPIToken=") == s.APIToken() {
			return true
		}
		writeStatus(w, http.StatusUnauthorized, "authentication failure", nil)
		return false
	}
	cookie, err := r.Cookie("PVEAuthCookie")
	if err != nil {
		writeStatus(w, http.StatusUnauthorized, "No ticket", nil)
		return false
	}
	s.mu.Lock()
	csrf, ok := s.tickets[cookie.Value]
	s.mu.Unlock()
	if !ok {
		writeStatus(w, http.StatusUnauthorized, "authentication failure", nil)
		return false
	}
	if r.Method != http.MethodGet && r.Header.Get("CSRFPreventionToken") != csrf {
		writeStatus(w, http.StatusUnauthorized, "Permission denied - invalid csrf token", nil)
		return false
	}
	return true
}

func (s *Server) handleTicket(w http.ResponseWriter, r *http.Request) {
	p := params(r)
	user := p["username"]
	if !strings.Contains(user, "@") && p["realm"] != "" {
		user += "@" + p["realm"]
	}
	if user != s.username || p["password"] != s.password {
		writeStatus(w, http.StatusUnauthorized, "authentication failure", nil)
		return
	}
	ticket := "PVE:" + user + ":" + strings.ToUpper(randomHex(4)) + "::" + randomHex(32)
	csrf := strings.ToUpper(randomHex(4)) + ":" + randomHex(20)
	s.mu.Lock()
	s.tickets[ticket] = csrf
	s.mu.Unlock()
	writeData(w, map[string]any{"username": user, "ticket": ticket, "CSRFPreventionToken": csrf,
		"cap": map[string]any{}, "clustername": "sim"})
}

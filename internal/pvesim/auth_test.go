package pvesim_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// login posts to /access/ticket without credentials, as a client logging in does.
func login(t *testing.T, a *api, params url.Values) reply {
	t.Helper()
	anon := *a
	anon.header = http.Header{}
	return anon.form(http.MethodPost, "/access/ticket", params)
}

func TestTicketLogin(t *testing.T) {
	s, a := lab(t)
	user, pass := s.Credentials()
	name, realm, _ := strings.Cut(user, "@")
	tests := []struct {
		name   string
		params url.Values
		want   string
	}{
		{"user@realm", url.Values{"username": {user}, "password": {pass}}, "200 OK"},
		{"user and realm", url.Values{"username": {name}, "realm": {realm}, "password": {pass}}, "200 OK"},
		{"wrong password", url.Values{"username": {user}, "password": {"nope"}}, "401 authentication failure"},
		{"unknown user", url.Values{"username": {"bob@pve"}, "password": {pass}}, "401 authentication failure"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := login(t, a, tt.params)
			if r.status != tt.want {
				t.Fatalf("status %q, want %q", r.status, tt.want)
			}
			if r.code == http.StatusOK {
				d := r.obj()
				if !strings.HasPrefix(d["ticket"].(string), "PVE:"+user+":") || d["CSRFPreventionToken"] == "" || d["username"] != user {
					t.Fatalf("login answer %v", d)
				}
			}
		})
	}
}

func TestTicketAndTokenAuth(t *testing.T) {
	s, a := lab(t)
	user, pass := s.Credentials()
	d := a.ok(login(t, a, url.Values{"username": {user}, "password": {pass}})).obj()
	ticket, csrf := d["ticket"].(string), d["CSRFPreventionToken"].(string)
	id, secret, _ := strings.Cut(s.APIToken(), "=")

	tests := []struct {
		name   string
		header http.Header
		method string
		want   string
	}{
		{"cookie read", http.Header{"Cookie": {"PVEAuthCookie=" + ticket}}, http.MethodGet, "200 OK"},
		{"cookie in Authorization", http.Header{"Authorization": {"PVEAuthCookie=" + ticket}}, http.MethodGet, "200 OK"},
		{"write without CSRF token", http.Header{"Cookie": {"PVEAuthCookie=" + ticket}}, http.MethodPost, "401 Permission denied - invalid csrf token"},
		{"write with CSRF token", http.Header{"Cookie": {"PVEAuthCookie=" + ticket}, "Csrfpreventiontoken": {csrf}}, http.MethodPost, "200 OK"},
		{"forged ticket", http.Header{"Cookie": {"PVEAuthCookie=PVE:root@pam:00000000::forged"}}, http.MethodGet, "401 authentication failure"},
		{"token, space separated", http.Header{"Authorization": {"PVEAPIToken " + s.APIToken()}}, http.MethodGet, "200 OK"},
		{"token write needs no CSRF", http.Header{"Authorization": {"PVEAPIToken=" + s.APIToken()}}, http.MethodPost, "200 OK"},
		{"token with a wrong secret", http.Header{"Authorization": {"PVEAPIToken=" + id + "=" + secret + "x"}}, http.MethodGet, "401 authentication failure"},
		{"token of another user", http.Header{"Authorization": {"PVEAPIToken=admin@pve!sim=" + secret}}, http.MethodGet, "401 authentication failure"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := *a
			c.header = tt.header
			var r reply
			if tt.method == http.MethodGet {
				r = c.get("/nodes/pve2/qemu/102/config")
			} else {
				r = c.form(http.MethodPost, "/nodes/pve2/qemu/102/config", url.Values{"description": {tt.name}})
			}
			if r.status != tt.want {
				t.Fatalf("status %q, want %q", r.status, tt.want)
			}
		})
	}
}

// Tasks carry who started them: a token's full id in the UPID, split into user and tokenid in
// the task status.
func TestTaskUserAndLog(t *testing.T) {
	s, a := lab(t)
	user, pass := s.Credentials()
	tokenID, _, _ := strings.Cut(s.APIToken(), "=")

	upid := a.ok(a.form(http.MethodPost, "/nodes/pve2/qemu/102/status/stop", nil)).str()
	if !strings.HasSuffix(upid, ":qmstop:102:"+tokenID+":") || len(strings.Split(upid, ":")) != 9 {
		t.Fatalf("UPID %q: want 9 fields ending in the token id", upid)
	}
	st := a.wait(upid)
	if st["upid"] != upid || st["user"] != user || st["tokenid"] != "sim" || st["exitstatus"] != "OK" {
		t.Fatalf("task status %v", st)
	}
	for _, k := range []string{"pid", "pstart", "starttime"} {
		if _, isNumber := st[k].(float64); !isNumber {
			t.Errorf("task status %s = %v, want a number", k, st[k])
		}
	}
	log := a.ok(a.get("/nodes/pve2/tasks/" + upid + "/log"))
	lines := log.list()
	if log.env.Total == nil || *log.env.Total != len(lines) || lines[len(lines)-1]["t"] != "TASK OK" || lines[0]["n"] != 1.0 {
		t.Fatalf("task log %s", log.body)
	}

	d := a.ok(login(t, a, url.Values{"username": {user}, "password": {pass}})).obj()
	c := *a
	c.header = http.Header{"Cookie": {"PVEAuthCookie=" + d["ticket"].(string)}, "Csrfpreventiontoken": {d["CSRFPreventionToken"].(string)}}
	upid = c.ok(c.form(http.MethodPost, "/nodes/pve2/qemu/102/status/start", nil)).str()
	if st := c.wait(upid); st["user"] != user || st["tokenid"] != nil || !strings.HasSuffix(upid, ":"+user+":") {
		t.Fatalf("ticket task %s: status %v", upid, st)
	}

	for path, want := range map[string]string{
		"/nodes/pve2/tasks/UPID:pve2:bad/status": "unable to parse worker upid",
		"/nodes/pve3/tasks/" + upid + "/status":  "no such task",
	} {
		if r := a.get(path); r.code != http.StatusBadRequest || r.env.Errors["upid"] != want {
			t.Errorf("GET %s: %s %s, want 400 %q", path, r.status, r.body, want)
		}
	}
}

package pvesim

import (
	"fmt"
	"net/http"
	"regexp"
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

// adminPrivileges are the Administrator role's privileges in pve-access-control 8.1 (PVE 8.2):
// root@pam has every one on every path. A PVE 9 cluster reports them too, though
// pve-access-control 9.0 replaced VM.Monitor by VM.GuestAgent.* and added VM.Replicate.
var adminPrivileges = []string{"Datastore.Allocate", "Datastore.AllocateSpace", "Datastore.AllocateTemplate",
	"Datastore.Audit", "Group.Allocate", "Mapping.Audit", "Mapping.Modify", "Mapping.Use", "Permissions.Modify",
	"Pool.Allocate", "Pool.Audit", "Realm.Allocate", "Realm.AllocateUser", "SDN.Allocate", "SDN.Audit", "SDN.Use",
	"Sys.AccessNetwork", "Sys.Audit", "Sys.Console", "Sys.Incoming", "Sys.Modify", "Sys.PowerMgmt", "Sys.Syslog",
	"User.Modify", "VM.Allocate", "VM.Audit", "VM.Backup", "VM.Clone", "VM.Config.CDROM", "VM.Config.CPU",
	"VM.Config.Cloudinit", "VM.Config.Disk", "VM.Config.HWType", "VM.Config.Memory", "VM.Config.Network",
	"VM.Config.Options", "VM.Console", "VM.Migrate", "VM.Monitor", "VM.PowerMgmt", "VM.Snapshot", "VM.Snapshot.Rollback"}

var (
	userIDPattern        = regexp.MustCompile(`^([^\s:/]+)@([A-Za-z][A-Za-z0-9.\-_]+)$`)
	userIDOrTokenPattern = regexp.MustCompile(`^[^\s:/]+@[A-Za-z][A-Za-z0-9.\-_]+(![A-Za-z][A-Za-z0-9.\-_]+)?$`)
)

// The simulator has one user, root@pam, with one API token that is not privilege-separated
// (so it has root's privileges): every credential it accepts is all-powerful. The access
// endpoints say exactly that rather than invent ACLs.

// userEntry is root@pam's row of GET /access/users (pve-access-control API2/User.pm index):
// with full, its groups (none, joined to "") and its tokens.
func (s *Server) userEntry(full bool) map[string]any {
	row := map[string]any{"userid": s.username, "enable": 1, "expire": 0, "realm-type": "pam"}
	if full {
		_, token, _ := strings.Cut(s.tokenID, "!")
		row["groups"] = ""
		row["tokens"] = []map[string]any{{"tokenid": token, "privsep": 0, "expire": 0}}
	}
	return row
}

// handleUsers is GET /access/users: the users the caller may see, here root@pam.
func (s *Server) handleUsers(w http.ResponseWriter, r *http.Request) {
	p, ok := readAllowedParams(w, r, "enabled", "full")
	if !ok {
		return
	}
	for _, k := range []string{"enabled", "full"} {
		if v := p[k]; v != "" && !validBool(v) {
			paramError(w, k, fmt.Sprintf("type check ('boolean') failed - got '%s'", v))
			return
		}
	}
	rows := []map[string]any{}
	if v, set := p["enabled"]; !set || boolParam(v) {
		rows = append(rows, s.userEntry(boolParam(p["full"])))
	}
	writeData(w, rows)
}

// handleUser is GET /access/users/{userid}: the user's configuration with its tokens.
func (s *Server) handleUser(w http.ResponseWriter, r *http.Request) {
	if _, ok := readAllowedParams(w, r); !ok {
		return
	}
	id := r.PathValue("userid")
	switch {
	case !userIDPattern.MatchString(id) || len(id) > 64:
		paramError(w, "userid", fmt.Sprintf("invalid format - value '%s' does not look like a valid user name", id))
		return
	case id != s.username:
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("no such user ('%s')", id))
		return
	}
	_, token, _ := strings.Cut(s.tokenID, "!")
	writeData(w, map[string]any{"enable": 1, "expire": 0, "groups": []string{},
		"tokens": map[string]any{token: map[string]any{"privsep": 0, "expire": 0}}})
}

// handlePermissions is GET /access/permissions (pve-access-control API2/AccessControl.pm):
// a map path -> {privilege: propagate} for userid (default: the caller), over the default
// top-level paths and the pools' guests (RPCEnvironment get_effective_permissions), or for one
// path. root@pam and its token have every privilege everywhere; anyone else has none.
func (s *Server) handlePermissions(w http.ResponseWriter, r *http.Request) {
	p, ok := readAllowedParams(w, r, "userid", "path")
	if !ok {
		return
	}
	userid, set := p["userid"]
	if !set {
		userid = requestUser(r)
	}
	if !userIDOrTokenPattern.MatchString(userid) {
		paramError(w, "userid", "value does not match the regex pattern")
		return
	}
	all := map[string]int{}
	if userid == s.username || userid == s.tokenID {
		for _, priv := range adminPrivileges {
			all[priv] = 1
		}
	}
	out := map[string]any{}
	if path := p["path"]; path != "" {
		if len(all) > 0 {
			out[path] = all
		}
		writeData(w, out)
		return
	}
	if len(all) == 0 {
		writeData(w, out)
		return
	}
	for _, path := range []string{"/", "/access", "/access/groups", "/nodes", "/pool", "/sdn", "/storage", "/vms"} {
		out[path] = all
	}
	s.mu.Lock()
	for _, g := range s.guests {
		if g.pool != "" {
			out[fmt.Sprintf("/vms/%d", g.vmid)] = all
		}
	}
	s.mu.Unlock()
	writeData(w, out)
}

func validBool(v string) bool {
	_, ok := parseBool(v)
	return ok
}

package pvesim

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	mrand "math/rand"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

const apiPrefix = "/api2/json"

// Server is a simulated PVE cluster behind the PVE HTTP API. It is safe for concurrent use.
type Server struct {
	mu     sync.Mutex
	nodes  []*node
	guests map[int]*guest
	pools  map[string]bool
	// poolComments are the pools' comments, set by PUT /pools/{poolid}.
	poolComments map[string]string
	nextID       *NextIDSpec
	tasks        map[string]*task
	archived     []*task // finished tasks, in the order they ended (the task index)
	pid          int
	rng          *mrand.Rand
	mux          *http.ServeMux
	admin        *http.ServeMux // the admin endpoint, see admin.go
	counts       map[string]int
	failed       map[string]int // requests answered with an error, by endpoint
	faults       []*fault
	failing      map[string]string // task type -> exit status for the next task of that type
	// haActive: the HA manager has run, so node rows carry hastate.
	haActive bool
	// haRules are PVE 9 HA rules; nil = PVE 8, which has no rules endpoint.
	haRules []HARuleSpec
	// haGroups are PVE 8's HA groups by id; see ha_groups.go.
	haGroups map[string]*haGroup
	// haResources are the HA resources by sid (vm:100); see ha_resources.go.
	haResources map[string]*haResource
	// crs is datacenter.cfg's crs and the HA manager's scheduler state; see ha_crs.go.
	crs crsState
	// crmRounds counts the HA manager's rounds.
	crmRounds int
	// haShutdownPolicy is datacenter.cfg's ha shutdown_policy ("": conditional); haShutdown
	// are the nodes shut down under it, by the mode their LRM left in (freeze, failover,
	// maintenance), until they are up again (ha_shutdown.go).
	haShutdownPolicy string
	haShutdown       map[string]string
	// haDisarm is the disarm-ha mode requested (freeze or ignore, "" when armed); haDisarmed
	// that the CRM has disarmed (ha_disarm.go).
	haDisarm   string
	haDisarmed bool
	// agentDelay is how many guest agent calls after a start fail; brokenAgents never answer.
	agentDelay   int
	brokenAgents map[int]bool
	// remoteFiles is the simulated web download-url fetches from, by URL (storage_files.go).
	remoteFiles map[string]RemoteFileSpec

	firstTaskStart, lastTaskEnd time.Time
	logMu                       sync.Mutex // guards requestLog
	requestLog                  []LoggedRequest
	requestHook                 func(LoggedRequest)

	latency      time.Duration
	taskDuration time.Duration
	statsLag     bool
	strictJSON   bool
	holding      bool     // HoldTasks: tasks wait for ReleaseTasks
	holdTypes    []string // the task types held; none: every type
	held         []func() // their completions, in start order

	tokenID, tokenSecret string
	username, password   string
	tickets              map[string]string // ticket -> CSRF token

	url, caPEM string
}

// Option configures a Server.
type Option func(*Server)

// WithTaskDuration makes every task run for d before it completes (default: at once).
func WithTaskDuration(d time.Duration) Option { return func(s *Server) { s.taskDuration = d } }

// WithStatsLag makes new guests show only id/vmid/node/type/status "unknown" in
// /cluster/resources until Tick, as PVE does until its next stats broadcast.
func WithStatsLag() Option { return func(s *Server) { s.statsLag = true } }

// WithStrictJSON refuses a JSON request body that is not an object (such as the text null),
// as PVE 6 does (its JSON::XS decodes only objects and arrays at the top) and as strict
// proxies do; PVE 7 and later take null as no parameters.
func WithStrictJSON() Option { return func(s *Server) { s.strictJSON = true } }

// WithLatency delays every request by d.
func WithLatency(d time.Duration) Option { return func(s *Server) { s.latency = d } }

// SetLatency changes the delay of requests from now on.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

// New builds a server holding the cluster's state. Serve it with net/http or NewTestServer.
func New(c Cluster, opts ...Option) (*Server, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	s := &Server{
		guests: map[int]*guest{}, pools: map[string]bool{}, poolComments: map[string]string{}, tasks: map[string]*task{},
		counts: map[string]int{}, failed: map[string]int{}, failing: map[string]string{}, tickets: map[string]string{},
		rng: mrand.New(mrand.NewSource(1)), nextID: c.NextID, pid: 0x1000, haRules: c.HARules,
		tokenID: "root@pam!sim", tokenSecret: secretUUID(), username: "root@pam", password: randomHex(8),
		haResources: map[string]*haResource{}, haShutdown: map[string]string{}, haGroups: map[string]*haGroup{}, agentDelay: 1, brokenAgents: map[int]bool{},
		remoteFiles: map[string]RemoteFileSpec{},
	}
	for _, f := range c.RemoteFiles {
		s.remoteFiles[f.URL] = f
	}
	s.crs.config, _ = parseCRS(c.CRS, c.release()) // validate checked it
	for _, o := range opts {
		o(s)
	}
	shared := map[string]*storage{}
	for _, n := range c.Nodes {
		nd := &node{name: n.Name, cpus: n.CPUs, maxmem: uint64(n.MemoryGiB * gib), baseCPU: n.CPULoad,
			baseMem: uint64(n.MemUsedGiB * gib), online: !n.Offline, arch: n.Arch, config: map[string]string{}}
		nd.setHAState(n.HAState)
		s.haActive = s.haActive || n.HAState != ""
		if d := storedDescription(n.Notes); d != "" {
			nd.config["description"] = d
		}
		for _, spec := range c.Storages {
			if len(spec.Nodes) > 0 && !contains(spec.Nodes, n.Name) {
				continue
			}
			st := shared[spec.Name]
			if st == nil {
				st = &storage{name: spec.Name, typ: spec.Type, content: spec.Content, shared: spec.Shared,
					total: uint64(spec.SizeGiB * gib), used: uint64(spec.UsedGiB * gib), inactive: spec.Inactive,
					volumes: map[string]volumeSize{}}
				for _, f := range spec.Snippets {
					st.putSnippet(f, snippetSpecSize)
				}
				if spec.Shared {
					shared[spec.Name] = st
				}
			}
			nd.storages = append(nd.storages, st)
		}
		s.nodes = append(s.nodes, nd)
	}
	for _, p := range c.Pools {
		s.pools[p] = true
	}
	for _, gs := range c.Guests {
		g := guestFromSpec(gs)
		s.guests[gs.VMID] = g
		// The file's used_gib already counts the guests' disks: record them without adding.
		for _, v := range g.volumes() {
			if st := s.storageOf(g, v.storage); st != nil {
				bytes := uint64(sizeGiB(g.config[v.key]) * gib)
				st.volumes[v.name] = volumeSize{size: bytes, used: bytes}
			}
		}
	}
	s.routes()
	s.admin = s.adminRoutes()
	return s, nil
}

func guestFromSpec(gs GuestSpec) *guest {
	g := &guest{vmid: gs.VMID, node: gs.Node, typ: gs.Type, status: gs.Status, pool: gs.Pool, config: map[string]string{}, hasStats: true}
	if g.typ == "" {
		g.typ = "qemu"
	}
	if g.status == "" {
		g.status = "stopped"
	}
	for k, v := range gs.Config {
		g.config[k] = v
	}
	set := func(k, v string) {
		if _, ok := g.config[k]; !ok && v != "" && v != "0" {
			g.config[k] = v
		}
	}
	set("name", gs.Name)
	set("cores", fmt.Sprint(gs.Cores))
	set("sockets", fmt.Sprint(gs.Sockets))
	set("memory", fmt.Sprint(gs.MemoryMiB))
	if gs.Template {
		g.config["template"] = "1"
	}
	if len(gs.Tags) > 0 {
		g.config["tags"] = normalizeTags(strings.Join(gs.Tags, ";"))
	}
	return g
}

// APIToken returns a valid API token, USER@REALM!TOKENID=SECRET.
func (s *Server) APIToken() string { return s.tokenID + "=" + s.tokenSecret }

// Credentials returns a valid username and password for ticket login.
func (s *Server) Credentials() (string, string) { return s.username, s.password }

// URL is the server's base URL (without /api2/json), set once it listens.
func (s *Server) URL() string { return s.url }

// CACertPEM is the PEM of the TLS certificate clients must trust.
func (s *Server) CACertPEM() string { return s.caPEM }

// SetListener records where the server is reachable, for URL and CACertPEM.
func (s *Server) SetListener(url, caPEM string) { s.url, s.caPEM = url, caPEM }

// Requests returns how many requests hit an endpoint, e.g. "GET /cluster/resources" or
// "GET /nodes/{node}/qemu/{vmid}/config".
func (s *Server) Requests(endpoint string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[endpoint]
}

// FailedRequests returns how many requests to an endpoint were answered with an error
// (status 400 or above), e.g. writes that lost a race.
func (s *Server) FailedRequests(endpoint string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed[endpoint]
}

// TotalRequests returns how many API requests were served, login included.
func (s *Server) TotalRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := 0
	for _, n := range s.counts {
		total += n
	}
	return total
}

// ResetRequests zeroes the request counters.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts, s.failed = map[string]int{}, map[string]int{}
}

// ServeHTTP applies latency, counting, auth and faults, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	latency := s.latency
	s.mu.Unlock()
	if latency > 0 {
		time.Sleep(latency)
	}
	if isAdminPath(r.URL.Path) {
		s.serveAdmin(w, r)
		return
	}
	if !strings.HasPrefix(r.URL.Path, apiPrefix+"/") {
		writeError(w, http.StatusNotImplemented, "no such uri")
		return
	}
	r.URL.Path, r.URL.RawPath = skipEmptySegments(r.URL.Path), skipEmptySegments(r.URL.RawPath)
	sw := &statusWriter{ResponseWriter: w, log: func(status int) { s.logRequest(r, status) }}
	w = sw
	defer sw.setStatus(0) // a request that got no answer (a lost response) is logged with 0
	_, pattern := s.mux.Handler(r)
	endpoint := strings.Replace(pattern, apiPrefix, "", 1)
	s.mu.Lock()
	s.counts[endpoint]++
	s.mu.Unlock()
	defer func() {
		if sw.status >= 400 {
			s.mu.Lock()
			s.failed[endpoint]++
			s.mu.Unlock()
		}
	}()
	if (r.Method == http.MethodGet || r.Method == http.MethodDelete) && r.ContentLength > 0 {
		writeError(w, http.StatusNotImplemented, fmt.Sprintf("Unexpected content for method '%s'", r.Method))
		return
	}
	user := ""
	if endpoint != "POST /access/ticket" {
		var ok bool
		if user, ok = s.authorized(w, r); !ok {
			return
		}
	}
	r = r.WithContext(context.WithValue(r.Context(), userKey{}, user))
	if s.strictJSON && !objectBody(w, r) {
		return
	}
	f := s.takeFault(endpoint, r.URL.Path)
	if r.Method == http.MethodGet {
		defer s.haRound()
	}
	switch {
	case f == nil:
		s.mux.ServeHTTP(w, r)
	case f.moveTo != "":
		s.mu.Lock()
		s.moveNow(f)
		s.mu.Unlock()
		s.mux.ServeHTTP(w, r)
	case f.served:
		s.mux.ServeHTTP(discard{header: http.Header{}}, r)
		writeError(w, f.status, f.message)
	case f.lose:
		s.mux.ServeHTTP(discard{header: http.Header{}}, r)
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
			}
		}
	default:
		writeError(w, f.status, f.message)
	}
}

// skipEmptySegments drops the empty segments of a path ("/nodes/pve1/qemu/100/" is
// "/nodes/pve1/qemu/100"), as pve-common's RESTHandler find_handler does before it looks the
// path up.
func skipEmptySegments(path string) string {
	if path == "" {
		return ""
	}
	var parts []string
	for _, p := range strings.Split(path, "/") {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return "/" + strings.Join(parts, "/")
}

// haRound lets the HA manager run once after a read (see ha_resources.go).
func (s *Server) haRound() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.crmRound()
}

// userKey carries the authenticated user (USER@REALM or USER@REALM!TOKEN) in the request
// context, for the tasks it starts.
type userKey struct{}

func requestUser(r *http.Request) string {
	if r == nil {
		return "root@pam" // a task the HA manager runs
	}
	if u, _ := r.Context().Value(userKey{}).(string); u != "" {
		return u
	}
	return "root@pam"
}

// secretUUID is an API token secret, a uuid as PVE issues them, from crypto/rand.
func secretUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return formatUUID(b)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// contains is slices.Contains for the string lists the handlers check parameters against.
var contains = slices.Contains[[]string, string]

// Guests lists every guest's vmid, sorted.
func (s *Server) Guests() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int, 0, len(s.guests))
	for id := range s.guests {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

// GuestState is a copy of a guest's state for test assertions.
type GuestState struct {
	VMID   int
	Node   string
	Type   string
	Status string
	Lock   string
	Pool   string
	// Config is what a config GET shows: pending values applied.
	Config map[string]string
	// Pending are the changes a running VM takes at its next start (key -> value, "" for a
	// deletion); see GET .../pending.
	Pending map[string]string
}

// Guest returns a copy of a guest's state.
func (s *Server) Guest(vmid int) (GuestState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.guests[vmid]
	if !ok {
		return GuestState{}, false
	}
	pending := map[string]string{}
	for k, v := range g.pending {
		pending[k] = strings.TrimPrefix(v, deleted)
	}
	return GuestState{VMID: g.vmid, Node: g.node, Type: g.typ, Status: g.status, Lock: g.lock, Pool: g.pool, Config: g.view(), Pending: pending}, true
}

// discard is a ResponseWriter that throws the answer away (for LoseResponses).
type discard struct{ header http.Header }

func (d discard) Header() http.Header       { return d.header }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

// objectBody answers 500 as PVE 6 does when a JSON request body is not an object, and
// otherwise leaves the body readable for the handler.
func objectBody(w http.ResponseWriter, r *http.Request) bool {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || !decodesBody(r) {
		return true
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "cannot read the request body: "+err.Error())
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 && trimmed[0] != '{' && trimmed[0] != '[' {
		writeError(w, http.StatusInternalServerError, "JSON text must be an object or array (but found number, string, true, false or null, use allow_nonref to allow this)")
		return false
	}
	return true
}

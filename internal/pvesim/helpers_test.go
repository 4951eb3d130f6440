package pvesim_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// reply is a raw API answer: the status line as sent (PVE puts messages in its reason
// phrase), the body, and the decoded envelope.
type reply struct {
	code   int
	status string
	body   []byte
	env    struct {
		Data   any               `json:"data"`
		Errors map[string]string `json:"errors"`
		Total  *int              `json:"total"`
	}
}

// str returns data as a string, "" when it is not one.
func (r reply) str() string { s, _ := r.env.Data.(string); return s }

func (r reply) obj() map[string]any { m, _ := r.env.Data.(map[string]any); return m }

func (r reply) list() []map[string]any {
	var out []map[string]any
	items, _ := r.env.Data.([]any)
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// api calls the simulator over HTTPS, trusting its certificate.
type api struct {
	t      testing.TB
	s      *pvesim.Server
	client *http.Client
	header http.Header
}

func newAPI(t testing.TB, s *pvesim.Server) *api {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(s.CACertPEM())) {
		t.Fatal("CACertPEM is not a PEM certificate")
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return &api{t: t, s: s, client: hc, header: http.Header{"Authorization": {"PVEAPIToken=" + s.APIToken()}}}
}

// form sends params form-encoded (in the query for GET and DELETE).
func (a *api) form(method, path string, params url.Values) reply {
	a.t.Helper()
	target := a.s.URL() + "/api2/json" + path
	var body io.Reader
	if method == http.MethodGet || method == http.MethodDelete {
		if len(params) > 0 {
			target += "?" + params.Encode()
		}
	} else if params != nil {
		body = strings.NewReader(params.Encode())
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		a.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return a.do(req)
}

// json sends params as a JSON body.
func (a *api) json(method, path string, params map[string]any) reply {
	a.t.Helper()
	b, _ := json.Marshal(params)
	req, err := http.NewRequest(method, a.s.URL()+"/api2/json"+path, bytes.NewReader(b))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return a.do(req)
}

func (a *api) get(path string) reply { a.t.Helper(); return a.form(http.MethodGet, path, nil) }

func (a *api) do(req *http.Request) reply {
	a.t.Helper()
	for k, v := range a.header {
		req.Header[k] = v
	}
	res, err := a.client.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	r := reply{code: res.StatusCode, status: res.Status}
	r.body, _ = io.ReadAll(res.Body)
	if len(r.body) > 0 {
		if err := json.Unmarshal(r.body, &r.env); err != nil {
			a.t.Fatalf("%s %s: body is not JSON: %q", req.Method, req.URL.Path, r.body)
		}
	}
	return r
}

// ok fails the test unless the call succeeded.
func (a *api) ok(r reply) reply {
	a.t.Helper()
	if r.code != http.StatusOK {
		a.t.Fatalf("status %q, body %s", r.status, r.body)
	}
	return r
}

// wait polls a task until it stops and returns its status.
func (a *api) wait(upid string) map[string]any {
	a.t.Helper()
	node := strings.Split(upid, ":")[1]
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := a.ok(a.get("/nodes/" + node + "/tasks/" + upid + "/status")).obj()
		if st["status"] == "stopped" || time.Now().After(deadline) {
			return st
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// task runs a call that starts a task and returns the task's exit status.
func (a *api) task(r reply) string {
	a.t.Helper()
	upid := a.ok(r).str()
	if upid == "" {
		a.t.Fatalf("no UPID in %s", r.body)
	}
	exit, _ := a.wait(upid)["exitstatus"].(string)
	return exit
}

// simOf serves the cluster file text yaml, failing the test when it does not load.
func simOf(t *testing.T, yaml string, opts ...pvesim.Option) (*pvesim.Server, *api) {
	t.Helper()
	c, err := pvesim.ParseCluster([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	s := pvesim.NewTestServer(t, c, opts...)
	return s, newAPI(t, s)
}

func lab(t *testing.T, opts ...pvesim.Option) (*pvesim.Server, *api) {
	s := pvesim.NewTestServer(t, labCluster(t), opts...)
	return s, newAPI(t, s)
}

// row finds the /cluster/resources row with the given id.
func (a *api) row(id string) map[string]any {
	a.t.Helper()
	for _, r := range a.ok(a.get("/cluster/resources")).list() {
		if r["id"] == id {
			return r
		}
	}
	return nil
}

func pvesimWithStatsLag() pvesim.Option { return pvesim.WithStatsLag() }

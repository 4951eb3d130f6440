// Package proxmox is the only code that talks to Proxmox VE. It goes through go-proxmox for
// transport, authentication and TLS, and adds what that client lacks: a snapshot in at most
// two requests (see Snapshot), correct task success tests, typed errors and safe retries.
package proxmox

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	goproxmox "github.com/luthermonson/go-proxmox"
)

// Config says how to reach and authenticate to PVE.
type Config struct {
	// Endpoint is https://host:8006, with or without /api2/json. http:// is accepted too, for
	// a simulator on loopback or a TLS-terminating proxy in front of PVE; credentials then
	// travel in clear text.
	Endpoint string
	// APIToken is USER@REALM!TOKENID=SECRET; or use Username and Password (ticket login).
	APIToken           string
	Username, Password string
	// TLS certificates are verified unless Insecure is set; CACertPEM trusts a private CA.
	Insecure  bool
	CACertPEM string
	// UserAgent names the caller, e.g. terraform-provider-qemuscheduler/1.2.3.
	UserAgent string
	// PollInterval is the longest wait between task status polls (default 500ms).
	PollInterval time.Duration
	// RetryBackoff is the first retry's longest wait; later ones double up to 5s (default
	// 200ms).
	RetryBackoff time.Duration
}

// requestTimeout bounds one HTTP request; a 10,000-guest /cluster/resources takes well under
// a second, and tasks are polled, not awaited in one request.
const requestTimeout = 2 * time.Minute

// Client talks to one PVE cluster.
type Client struct {
	api   *goproxmox.Client
	poll  time.Duration
	retry retryPolicy

	// ticket auth only: when the session was opened or last renewed
	login     bool
	sessionMu sync.Mutex
	sessionAt time.Time

	optionsMu   sync.Mutex
	optionsRead bool
	bounds      *nextIDBounds

	releaseMu sync.Mutex
	release   *Release // read once (Release)
}

var tokenPattern = regexp.MustCompile(`^([^@!\s]+@[^@!\s]+![^=\s]+)=(\S+)$`)

// ParseAPIToken splits USER@REALM!TOKENID=SECRET into the token id and the secret.
func ParseAPIToken(token string) (id, secret string, err error) {
	m := tokenPattern.FindStringSubmatch(token)
	if m == nil {
		return "", "", errors.New("the API token must look like USER@REALM!TOKENID=SECRET, e.g. terraform@pve!provider=1234abcd-5678")
	}
	return m[1], m[2], nil
}

// NormalizeEndpoint turns https://host:8006[/][api2/json] into the API base URL.
func NormalizeEndpoint(endpoint string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(endpoint))
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		shown := endpoint
		if strings.Contains(shown, "@") {
			shown = "(not shown: it may hold a password)" // errors get logged
		}
		return "", fmt.Errorf("endpoint %q is not a URL like https://pve.example.com:8006", shown)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("endpoint %q must not hold credentials, a query or a fragment; give only scheme, host and port, e.g. https://pve.example.com:8006", u.Redacted())
	}
	path := strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/api2/json")
	if path != "" {
		return "", fmt.Errorf("endpoint %q has an unexpected path %q; give only scheme, host and port, e.g. https://pve.example.com:8006", u.Redacted(), u.Path)
	}
	return u.Scheme + "://" + u.Host + "/api2/json", nil
}

// New builds a client; it does no network I/O.
func New(cfg Config) (*Client, error) {
	base, err := NormalizeEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	auth, err := authOption(cfg)
	if err != nil {
		return nil, err
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.Insecure} //nolint:gosec // opt-in
	if cfg.CACertPEM != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(cfg.CACertPEM)) {
			return nil, errors.New("ca_cert holds no PEM certificate: give the CA's certificate as -----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----")
		}
		tlsConfig.RootCAs = pool
	}
	hc := &http.Client{
		Timeout:   requestTimeout,
		Transport: &statusRecorder{next: &http.Transport{TLSClientConfig: tlsConfig, Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 16}},
	}
	ua := cfg.UserAgent
	if ua == "" {
		ua = "terraform-provider-qemuscheduler"
	}
	retry := defaultRetry
	if cfg.RetryBackoff > 0 {
		retry.base = cfg.RetryBackoff
	}
	poll := cfg.PollInterval
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	api := goproxmox.NewClient(base, goproxmox.WithHTTPClient(hc), goproxmox.WithUserAgent(ua), auth)
	return &Client{api: api, poll: poll, retry: retry, login: cfg.APIToken == ""}, nil
}

// authOption picks token or ticket authentication; errors name the setting to fix.
func authOption(cfg Config) (goproxmox.Option, error) {
	switch {
	case cfg.APIToken != "" && cfg.Password != "":
		return nil, errors.New("give either api_token or username and password, not both")
	case cfg.APIToken != "":
		id, secret, err := ParseAPIToken(cfg.APIToken)
		if err != nil {
			return nil, err
		}
		return goproxmox.WithAPIToken(id, secret), nil
	case cfg.Username != "" && cfg.Password == "":
		return nil, fmt.Errorf("username %q is set but password is empty: set password, or use api_token instead", cfg.Username)
	case cfg.Username == "" && cfg.Password != "":
		return nil, errors.New("password is set but username is empty: set username, e.g. root@pam")
	case cfg.Username != "":
		if !strings.Contains(cfg.Username, "@") {
			return nil, fmt.Errorf("username %q needs a realm, e.g. root@pam or terraform@pve", cfg.Username)
		}
		return goproxmox.WithCredentials(&goproxmox.Credentials{Username: cfg.Username, Password: cfg.Password}), nil
	default:
		return nil, errors.New("no credentials: set api_token (USER@REALM!TOKENID=SECRET), or username and password")
	}
}

// statusRecorder remembers the HTTP status and reason of each response in the request's
// context, so errors can be typed even where go-proxmox flattens them; and it hands a
// successful answer to the request's rawDecoder, if it has one.
type statusRecorder struct{ next http.RoundTripper }

type statusKey struct{}

type responseStatus struct {
	code   int
	reason string
}

// rawDecoder decodes a successful answer's whole body, {"data": ...}, in place of go-proxmox,
// which would copy a multi-megabyte answer twice and decode it twice (once into a map, once
// into the result) before the caller's own decoding.
type rawDecoder func(body []byte) error

type decoderKey struct{}

// decoding is a rawDecoder at work on one request.
type decoding struct {
	decode rawDecoder
	err    error
}

func (t *statusRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.next.RoundTrip(r)
	if err != nil {
		return res, err
	}
	if d, ok := r.Context().Value(decoderKey{}).(*decoding); ok && res.StatusCode == http.StatusOK {
		body, err := readBody(res)
		if err != nil {
			return nil, err // a lost answer: the status is not recorded, so it is transient
		}
		d.err = d.decode(body)
		res.Body, res.ContentLength = io.NopCloser(strings.NewReader(`{"data":null}`)), -1
	}
	if st, ok := r.Context().Value(statusKey{}).(*responseStatus); ok {
		st.code = res.StatusCode
		st.reason = strings.TrimSpace(strings.TrimPrefix(res.Status, fmt.Sprint(res.StatusCode)))
	}
	return res, nil
}

// readBody reads and closes a response's body, in one allocation when its length is known.
func readBody(res *http.Response) ([]byte, error) {
	defer res.Body.Close()
	if res.ContentLength > 0 {
		body := make([]byte, res.ContentLength)
		_, err := io.ReadFull(res.Body, body)
		return body, err
	}
	return io.ReadAll(res.Body)
}

// call runs one API request and types its error.
func (c *Client) call(ctx context.Context, op string, do func(ctx context.Context) error) error {
	if err := c.session(ctx); err != nil {
		return err
	}
	return c.send(ctx, op, do)
}

// sessionRenewal is how often a ticket is renewed: PVE's tickets last 2 hours, and go-proxmox
// counts them expired after one.
const sessionRenewal = 50 * time.Minute

// session logs in (ticket auth) before the first request and renews the ticket before it
// expires. Left to itself, go-proxmox logs in only when a request meets a 401, and of several
// requests meeting it at once all but one fail with "not authorized".
func (c *Client) session(ctx context.Context) error {
	if !c.login {
		return nil
	}
	c.sessionMu.Lock()
	defer c.sessionMu.Unlock()
	var err error
	switch {
	case c.sessionAt.IsZero():
		err = c.send(ctx, "log in", c.api.CreateSession)
	case time.Since(c.sessionAt) > sessionRenewal:
		err = c.send(ctx, "renew the login ticket", c.api.RefreshTicket)
	default:
		return nil
	}
	if err == nil {
		c.sessionAt = time.Now()
	}
	return err
}

// send runs one API request as is and types its error.
func (c *Client) send(ctx context.Context, op string, do func(ctx context.Context) error) error {
	st := &responseStatus{}
	err := do(context.WithValue(ctx, statusKey{}, st))
	if err == nil && st.code < 300 {
		return nil
	}
	if err == nil {
		// go-proxmox decodes the body of statuses it does not know (502, 503, 595, ...) as
		// success; the status says otherwise.
		err = errors.New(st.reason)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	return classify(op, st.code, st.reason, err)
}

// get is an idempotent read, retried on transient failures. v is where the answer's data is
// decoded, or a rawDecoder for the whole body.
func (c *Client) get(ctx context.Context, op, path string, params map[string]string, v any) error {
	return c.retry.do(ctx, func() error {
		return c.call(ctx, op, func(ctx context.Context) error {
			target := v
			var d *decoding
			if decode, ok := v.(rawDecoder); ok {
				d, target = &decoding{decode: decode}, nil
				ctx = context.WithValue(ctx, decoderKey{}, d)
			}
			var err error
			if len(params) > 0 {
				err = c.api.GetWithParams(ctx, path, params, target)
			} else {
				err = c.api.Get(ctx, path, target)
			}
			if err == nil && d != nil {
				err = d.err
			}
			return err
		})
	})
}

// write is a non-idempotent call: never retried blindly. Without parameters it sends no body
// at all: go-proxmox would send the JSON text null for an empty map, which PVE 6 and strict
// proxies refuse.
func (c *Client) write(ctx context.Context, op, method, path string, body map[string]any, v any) error {
	var params any
	if len(body) > 0 {
		params = body
	}
	return c.call(ctx, op, func(ctx context.Context) error {
		switch method {
		case http.MethodPost:
			return c.api.Post(ctx, path, params, v)
		case http.MethodPut:
			return c.api.Put(ctx, path, params, v)
		default:
			return c.api.DeleteWithParams(ctx, path, params, v)
		}
	})
}

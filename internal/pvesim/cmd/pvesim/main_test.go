package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The binary prints a URL and a token that work, writes the CA a client must trust, and
// stops when its context ends.
func TestRunServesTheLab(t *testing.T) {
	dir := t.TempDir()
	caFile, envFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "env")
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--cluster", "../../../../examples/lab/cluster.yaml", "--ca-out", caFile, "--env-out", envFile}, w)
		w.Close()
	}()

	vars := map[string]string{}
	lines := bufio.NewScanner(out)
	for lines.Scan() && len(vars) < 2 {
		if kv, ok := strings.CutPrefix(lines.Text(), "export "); ok {
			k, v, _ := strings.Cut(kv, "=")
			vars[k] = strings.Trim(v, "'")
		}
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	url, token := vars["PROXMOX_VE_ENDPOINT"], vars["PROXMOX_VE_API_TOKEN"]
	if !strings.HasPrefix(url, "https://127.0.0.1:") || !strings.HasPrefix(token, "root@pam!sim=") {
		t.Fatalf("printed endpoint %q and token %q", url, token)
	}
	if env, _ := os.ReadFile(envFile); !strings.Contains(string(env), token) {
		t.Fatalf("env file %q lacks the token", env)
	}

	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("--ca-out wrote no certificate: %q", pem)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, _ := http.NewRequest(http.MethodGet, url+"/api2/json/cluster/resources?type=node", nil)
	req.Header.Set("Authorization", "PVEAPIToken="+token)
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"node":"pve4"`) {
		t.Fatalf("GET /cluster/resources: %s %s", res.Status, body)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run after cancel: %v", err)
	}
}

func TestRunRefusesBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--cluster", "no-such-file.yaml"}, "no-such-file.yaml"},
		{[]string{"--cluster", "../../../../examples/lab/cluster.yaml", "extra"}, `unexpected argument "extra"`},
		{[]string{"--task-duration", "soon"}, "invalid value"},
		{[]string{"--cluster", "../../../../examples/lab/cluster.yaml", "--addr", "256.0.0.1:0"}, "choose another --addr"},
	}
	for _, tt := range tests {
		err := run(context.Background(), tt.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run(%q) = %v, want an error mentioning %q", tt.args, err, tt.want)
		}
	}
}

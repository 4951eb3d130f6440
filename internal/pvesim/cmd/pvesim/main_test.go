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
	misspelled := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(misspelled, []byte("nodes: [{name: pve1, cpus: 4, memory: 8}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--cluster", "no-such-file.yaml"}, "no-such-file.yaml: no such file or directory (pass a cluster file with --cluster"},
		{[]string{"--cluster", misspelled}, misspelled + ": cluster file: yaml: unmarshal errors:\n  line 1: unknown key memory in a node"},
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

// -h prints the flags and the subcommands (a subcommand's -h, the subcommands) and is no error.
func TestRunHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--ca-cert", "ca.pem", "-h"}} {
		if err := run(context.Background(), args, io.Discard); err != nil {
			t.Errorf("run(%q) = %v, want nil", args, err)
		}
	}
}

// The subcommands act on a running simulator through its admin endpoint, with what
// --env-out and --ca-out wrote.
func TestSubcommandsActOnTheRunningSimulator(t *testing.T) {
	dir := t.TempDir()
	caFile, envFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "env")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--cluster", "../../../../examples/lab/cluster.yaml", "--ca-out", caFile, "--env-out", envFile}, io.Discard)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	var env []byte
	for i := 0; i < 100 && len(env) == 0; i++ {
		time.Sleep(20 * time.Millisecond)
		env, _ = os.ReadFile(envFile)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(env)), "\n") {
		k, v, _ := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		t.Setenv(k, strings.Trim(v, "'"))
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"maintenance", "pve3", "on"}, "pve3: online, hastate maintenance"},
		{[]string{"maintenance", "pve3", "off"}, "pve3: online, hastate online"},
		{[]string{"load", "pve5", "cpu_load=0.5", "mem_used_gib=16"}, "pve5: online, hastate online, cpu 50%, memory 16.0/64 GiB"},
		{[]string{"fail", "pve2"}, "pve2: offline, hastate unknown"},
		{[]string{"recover", "pve2"}, "pve2: online, hastate online"},
		{[]string{"load", "vm:101", "cpu_cores=4", "mem_used_gib=8"}, "guest 101 on pve1, running: cpu 4 of 16 cores, memory 8.0/16.0 GiB"},
		{[]string{"crs", "ha=static", "ha-rebalance-on-start=1"}, `crs "ha=static,ha-rebalance-on-start=1": static scheduler, node imbalance `},
		{[]string{"rounds", "3"}, `crs "ha=static,ha-rebalance-on-start=1": static scheduler, node imbalance 68%; 3 HA rounds, rebalanced: none`},
	} {
		var out strings.Builder
		if err := run(context.Background(), append([]string{"--ca-cert", caFile}, tc.args...), &out); err != nil {
			t.Fatalf("pvesim %v: %v", tc.args, err)
		}
		if !strings.HasPrefix(out.String(), tc.want) {
			t.Errorf("pvesim %v printed %q, want %q...", tc.args, out.String(), tc.want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"maintenance", "pve3", "maybe"}, "on|off"},
		{[]string{"fail", "pve9"}, `no node "pve9"`},
		{[]string{"fail", "pve4"}, `node "pve4" is offline already`},
		{[]string{"bogus", "pve2"}, `unknown command "bogus"; usage:`},
		{[]string{"load", "pve1", "cpu_load=2"}, "cpu_load 2 is above 1"},
		{[]string{"load", "pve1", "cpu_load"}, "cpu_load=F"},
		{[]string{"load", "pve1", "cpu=0.8"}, "cpu_load=F"},
		// The API's per-parameter errors read as pvesh prints them, one "param: message" line each.
		{[]string{"load", "pve1"}, "Parameter verification failed.\ncpu_load: give cpu_load (0..1) and/or mem_used_gib"},
		{[]string{"fail"}, "usage"},
		{[]string{"load", "vm:x"}, "a guest as vm:VMID or ct:VMID"},
		{[]string{"load", "vm:101", "cpu_load=1"}, "load vm:101 takes cpu_cores=F and mem_used_gib=F"},
		{[]string{"crs", "ha=fast"}, "crs.ha: value 'fast' does not have a value in the enumeration"},
		{[]string{"rounds", "many"}, "rounds: give rounds, the number of HA rounds to run"},
		{[]string{"rounds", "1", "2"}, "usage: pvesim rounds N"},
	} {
		err := run(context.Background(), append([]string{"--ca-cert", caFile}, tc.args...), io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.HasPrefix(err.Error(), "pvesim: ") || strings.Contains(err.Error(), "map[") {
			t.Errorf("pvesim %v = %v, want an error mentioning %q (main adds the pvesim: prefix)", tc.args, err, tc.want)
		}
	}
	// Without --ca-cert the simulator's certificate is not trusted: the error says what to pass.
	err := run(context.Background(), []string{"fail", "pve2"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--ca-cert") {
		t.Errorf("pvesim fail pve2 without --ca-cert = %v, want an error naming --ca-cert", err)
	}
}

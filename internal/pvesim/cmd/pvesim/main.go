// Command pvesim serves a simulated Proxmox VE cluster on loopback, for demos and manual tests:
//
//	go run ./internal/pvesim/cmd/pvesim --cluster examples/lab/cluster.yaml
//
// It prints the URL and a ready-to-use API token, and serves until SIGINT or SIGTERM.
// Subcommands act on a running simulator without restarting it (see adminUsage):
//
//	pvesim --ca-cert /tmp/pvesim-ca.pem fail pve2
package main

import (
	"context"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http/httptest"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "pvesim:", err)
		os.Exit(2)
	}
}

// run serves the cluster until ctx ends. It reports where on stdout, once listening.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	if isAdmin(args) {
		return runAdmin(args, stdout)
	}
	flags := flag.NewFlagSet("pvesim", flag.ContinueOnError)
	clusterFile := flags.String("cluster", "examples/lab/cluster.yaml", "cluster file (YAML or JSON)")
	addr := flags.String("addr", "127.0.0.1:0", "listen address (port 0 picks a free port)")
	caOut := flags.String("ca-out", "", "write the server's TLS certificate (PEM) to this file, for clients to trust")
	envOut := flags.String("env-out", "", "write PROXMOX_VE_ENDPOINT and PROXMOX_VE_API_TOKEN (shell syntax) to this file")
	taskDuration := flags.Duration("task-duration", 0, "how long each task (create, clone, start, ...) runs; 0 finishes at once")
	statsLag := flags.Bool("stats-lag", false, "new guests show in /cluster/resources without stats, as right after a create on PVE")
	logRequests := flags.Bool("log", false, "print every request with its status to stderr (a 501 is an endpoint pvesim does not simulate)")
	flags.Usage = func() {
		fmt.Fprintln(flags.Output(), "pvesim [flags]: serve a simulated Proxmox VE cluster until interrupted")
		flags.PrintDefaults()
		fmt.Fprintf(flags.Output(), "Subcommands act on a running simulator:\n%s\n", adminUsage)
	}
	switch err := flags.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		return nil
	case err != nil:
		return err
	}
	if flags.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q; every option of the server is a flag, e.g. --cluster FILE, and the subcommands are:\n%s", flags.Arg(0), adminUsage)
	}

	cluster, err := pvesim.LoadCluster(*clusterFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w (pass a cluster file with --cluster; see examples/lab/cluster.yaml)", err)
	case err != nil:
		// The file's own mistake: name the file, examples/lab/README.md documents the format.
		return fmt.Errorf("%s: %w (the format: examples/lab/README.md)", *clusterFile, err)
	}
	opts := []pvesim.Option{pvesim.WithTaskDuration(*taskDuration)}
	if *statsLag {
		opts = append(opts, pvesim.WithStatsLag())
	}
	if *logRequests {
		opts = append(opts, pvesim.WithRequestHook(func(r pvesim.LoggedRequest) {
			fmt.Fprintf(os.Stderr, "pvesim: %d %s %s\n", r.Status, r.Method, r.Path)
		}))
	}
	sim, err := pvesim.New(cluster, opts...)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (choose another --addr)", *addr, err)
	}
	ts := httptest.NewUnstartedServer(sim)
	ts.Listener.Close()
	ts.Listener = ln
	ts.Config.ReadHeaderTimeout = 10 * time.Second
	ts.StartTLS()
	defer ts.Close()
	caPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}))
	sim.SetListener(ts.URL, caPEM)

	env := fmt.Sprintf("export PROXMOX_VE_ENDPOINT=%s\nexport PROXMOX_VE_API_TOKEN='%s'\n", sim.URL(), sim.APIToken())
	// The CA first: scripts wait for the env file, then use both.
	for _, out := range []struct{ path, content string }{{*caOut, caPEM}, {*envOut, env}} {
		if out.path == "" {
			continue
		}
		if err := os.WriteFile(out.path, []byte(out.content), 0o600); err != nil {
			return err
		}
	}
	user, pass := sim.Credentials()
	fmt.Fprintf(stdout, "pvesim: serving %s (%d nodes, %d guests) until interrupted\n%s# ticket login: %s / %s\n",
		*clusterFile, len(cluster.Nodes), len(cluster.Guests), env, user, pass)
	<-ctx.Done()
	return nil
}

package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"time"
)

// adminUsage lists the subcommands that act on a running simulator through its admin
// endpoint (see the pvesim package's admin.go).
const adminUsage = `pvesim [--ca-cert FILE] maintenance NODE on|off   HA maintenance of a node on or off; HA services move away and back
pvesim [--ca-cert FILE] fail NODE                  the node fails; HA services are recovered elsewhere
pvesim [--ca-cert FILE] recover NODE               the node is back online
pvesim [--ca-cert FILE] load NODE [cpu_load=F] [mem_used_gib=F]   the host's own load
The simulator is PROXMOX_VE_ENDPOINT with PROXMOX_VE_API_TOKEN (what --env-out writes);
--ca-cert is the certificate --ca-out wrote.`

// adminCommands maps each subcommand to its method and action path.
var adminCommands = map[string]struct{ method, action string }{
	"maintenance": {http.MethodPost, "maintenance"},
	"fail":        {http.MethodPost, "fail"},
	"recover":     {http.MethodPost, "recover"},
	"load":        {http.MethodPut, "load"},
}

// isAdmin tells whether the command line names a subcommand: its first argument that is
// neither a flag nor --ca-cert's value, or any command line with --ca-cert, which only the
// subcommands take (an unknown one is then refused with their usage).
func isAdmin(args []string) bool {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--ca-cert" || a == "-ca-cert" || strings.HasPrefix(a, "--ca-cert=") || strings.HasPrefix(a, "-ca-cert="):
			return true
		case !strings.HasPrefix(a, "-"):
			_, known := adminCommands[a]
			return known
		}
	}
	return false
}

// runAdmin runs one subcommand against the simulator the environment names and prints the
// node's state afterwards.
func runAdmin(args []string, stdout io.Writer) error {
	flags := flag.NewFlagSet("pvesim", flag.ContinueOnError)
	caCert := flags.String("ca-cert", "", "the simulator's certificate (PEM), as --ca-out wrote it")
	flags.Usage = func() { fmt.Fprintln(flags.Output(), adminUsage) }
	switch err := flags.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		return nil
	case err != nil:
		return err
	}
	args = flags.Args()
	if len(args) < 2 {
		return fmt.Errorf("usage:\n%s", adminUsage)
	}
	cmd, known := adminCommands[args[0]]
	if !known {
		return fmt.Errorf("unknown command %q; usage:\n%s", args[0], adminUsage)
	}
	node, params := args[1], url.Values{}
	switch rest := args[2:]; args[0] {
	case "maintenance":
		if len(rest) != 1 || rest[0] != "on" && rest[0] != "off" {
			return fmt.Errorf("usage: pvesim maintenance NODE on|off")
		}
		params.Set("enable", map[string]string{"on": "1", "off": "0"}[rest[0]])
	case "load":
		for _, kv := range rest {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k != "cpu_load" && k != "mem_used_gib" {
				return fmt.Errorf("load takes cpu_load=F and mem_used_gib=F, not %q", kv)
			}
			params.Set(k, v)
		}
	default:
		if len(rest) > 0 {
			return fmt.Errorf("%s takes only the node, not %q", args[0], rest)
		}
	}
	endpoint, token := os.Getenv("PROXMOX_VE_ENDPOINT"), os.Getenv("PROXMOX_VE_API_TOKEN")
	if endpoint == "" || token == "" {
		return fmt.Errorf("set PROXMOX_VE_ENDPOINT and PROXMOX_VE_API_TOKEN to the simulator's (source the file --env-out wrote)")
	}
	client, err := adminClient(*caCert)
	if err != nil {
		return err
	}
	target := strings.TrimSuffix(strings.TrimSuffix(endpoint, "/"), "/api2/json") + "/pvesim/nodes/" + url.PathEscape(node) + "/" + cmd.action
	req, err := http.NewRequest(cmd.method, target, strings.NewReader(params.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "PVEAPIToken="+token)
	res, err := client.Do(req)
	var unknownCA x509.UnknownAuthorityError
	switch {
	case errors.As(err, &unknownCA) && *caCert == "":
		return fmt.Errorf("%w; pass --ca-cert with the certificate the simulator's --ca-out wrote", err)
	case errors.As(err, &unknownCA):
		return fmt.Errorf("%w; %s is not this simulator's certificate (each run writes a new one with --ca-out)", err, *caCert)
	case err != nil:
		return err
	}
	defer res.Body.Close()
	var body struct {
		Data    map[string]any `json:"data"`
		Message string         `json:"message"`
		Errors  map[string]any `json:"errors"`
	}
	_ = json.NewDecoder(res.Body).Decode(&body)
	switch {
	case res.StatusCode == http.StatusOK:
	case len(body.Errors) > 0:
		// As pvesh prints them: the message, then one "param: message" line per parameter.
		lines := []string{message(body.Message)}
		for _, k := range slices.Sorted(maps.Keys(body.Errors)) {
			lines = append(lines, fmt.Sprintf("%s: %v", k, body.Errors[k]))
		}
		return errors.New(strings.Join(lines, "\n"))
	case body.Message != "":
		return fmt.Errorf("%s", message(body.Message))
	default:
		return fmt.Errorf("%s", res.Status)
	}
	fmt.Fprintln(stdout, describeNode(body.Data))
	return nil
}

// message is the simulator's error text without its own "pvesim: " prefix, which main adds.
func message(text string) string {
	return strings.TrimPrefix(strings.TrimSpace(text), "pvesim: ")
}

// adminClient trusts the simulator's certificate when given, else the system's roots.
func adminClient(caFile string) (*http.Client, error) {
	cfg := &tls.Config{}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
		}
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}, nil
}

// describeNode is one line about a node's state: online, HA state, live load, and where a
// failure's HA services went or maintenance's are being migrated.
func describeNode(d map[string]any) string {
	status := "online"
	if d["online"] != 1.0 {
		status = "offline"
	}
	mem, _ := d["mem"].(float64)
	maxmem, _ := d["maxmem"].(float64)
	cpu, _ := d["cpu"].(float64)
	line := fmt.Sprintf("%v: %s, hastate %v, cpu %.0f%%, memory %.1f/%.0f GiB", d["node"], status, d["hastate"], cpu*100, mem/(1<<30), maxmem/(1<<30))
	for _, key := range []string{"recovered", "migrating"} {
		moved, ok := d[key].(map[string]any)
		if !ok {
			continue
		}
		var parts []string
		for vmid, node := range moved {
			parts = append(parts, fmt.Sprintf("%s -> %v", vmid, node))
		}
		sort.Strings(parts)
		line += "; HA " + key + ": " + strings.Join(parts, ", ")
		if len(parts) == 0 {
			line += "none"
		}
	}
	return line
}

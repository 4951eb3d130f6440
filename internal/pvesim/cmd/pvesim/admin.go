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
	"strconv"
	"strings"
	"time"
)

// adminUsage lists the subcommands that act on a running simulator through its admin
// endpoint (see the pvesim package's admin.go).
const adminUsage = `pvesim [--ca-cert FILE] maintenance NODE on|off   HA maintenance of a node on or off; HA services move away and back
pvesim [--ca-cert FILE] fail NODE                  the node fails; HA services are recovered elsewhere
pvesim [--ca-cert FILE] recover NODE               the node is back online
pvesim [--ca-cert FILE] load NODE [cpu_load=F] [mem_used_gib=F]         the host's own load
pvesim [--ca-cert FILE] load vm:VMID [cpu_cores=F] [mem_used_gib=F]     a running guest's load
pvesim [--ca-cert FILE] crs ha=static|dynamic[,ha-rebalance-on-start=1][,ha-auto-rebalance=1,...]
                                                   datacenter.cfg's crs, the HA scheduler (replaced whole)
pvesim [--ca-cert FILE] rounds N                   run N HA manager rounds; prints the rebalancing migrations
The simulator is PROXMOX_VE_ENDPOINT with PROXMOX_VE_API_TOKEN (what --env-out writes);
--ca-cert is the certificate --ca-out wrote.`

// adminRequest is an admin action: its method, its path under /pvesim/ and its parameters.
type adminRequest struct {
	method, path string
	params       url.Values
}

// adminCommands turns each subcommand's arguments (after its name) into its admin request,
// or the usage mistake.
var adminCommands = map[string]func(args []string) (adminRequest, error){
	"maintenance": func(args []string) (adminRequest, error) {
		if len(args) != 2 || args[1] != "on" && args[1] != "off" {
			return adminRequest{}, fmt.Errorf("usage: pvesim maintenance NODE on|off")
		}
		return nodeAction(http.MethodPost, args[0], "maintenance", url.Values{"enable": {map[string]string{"on": "1", "off": "0"}[args[1]]}}), nil
	},
	"fail":    nodeOnly("fail"),
	"recover": nodeOnly("recover"),
	"load": func(args []string) (adminRequest, error) {
		keys, path := []string{"cpu_load", "mem_used_gib"}, "nodes/"+url.PathEscape(args[0])+"/load"
		if typ, vmid, isGuest := strings.Cut(args[0], ":"); isGuest {
			if _, err := strconv.Atoi(vmid); err != nil || typ != "vm" && typ != "ct" {
				return adminRequest{}, fmt.Errorf("load takes a node or a guest as vm:VMID or ct:VMID, not %q", args[0])
			}
			keys, path = []string{"cpu_cores", "mem_used_gib"}, "guests/"+vmid+"/load"
		}
		params := url.Values{}
		for _, kv := range args[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || !slices.Contains(keys, k) {
				return adminRequest{}, fmt.Errorf("load %s takes %s=F and %s=F, not %q", args[0], keys[0], keys[1], kv)
			}
			params.Set(k, v)
		}
		return adminRequest{http.MethodPut, path, params}, nil
	},
	"crs": func(args []string) (adminRequest, error) {
		// Several words are one property string: "ha=dynamic ha-auto-rebalance=1" as
		// "ha=dynamic,ha-auto-rebalance=1".
		return adminRequest{http.MethodPut, "crs", url.Values{"crs": {strings.Join(args, ",")}}}, nil
	},
	"rounds": func(args []string) (adminRequest, error) {
		if len(args) != 1 {
			return adminRequest{}, fmt.Errorf("usage: pvesim rounds N")
		}
		return adminRequest{http.MethodPost, "ha/rounds", url.Values{"rounds": {args[0]}}}, nil
	},
}

// nodeAction is an action on a node.
func nodeAction(method, node, action string, params url.Values) adminRequest {
	return adminRequest{method, "nodes/" + url.PathEscape(node) + "/" + action, params}
}

// nodeOnly is a subcommand that takes a node and nothing else.
func nodeOnly(action string) func([]string) (adminRequest, error) {
	return func(args []string) (adminRequest, error) {
		if len(args) > 1 {
			return adminRequest{}, fmt.Errorf("%s takes only the node, not %q", action, args[1:])
		}
		return nodeAction(http.MethodPost, args[0], action, nil), nil
	}
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

// runAdmin runs one subcommand against the simulator the environment names and prints what it
// did: the node's, the guest's or the scheduler's state afterwards.
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
	command, known := adminCommands[args[0]]
	if !known {
		return fmt.Errorf("unknown command %q; usage:\n%s", args[0], adminUsage)
	}
	action, err := command(args[1:])
	if err != nil {
		return err
	}
	endpoint, token := os.Getenv("PROXMOX_VE_ENDPOINT"), os.Getenv("PROXMOX_VE_API_TOKEN")
	if endpoint == "" || token == "" {
		return fmt.Errorf("set PROXMOX_VE_ENDPOINT and PROXMOX_VE_API_TOKEN to the simulator's (source the file --env-out wrote)")
	}
	client, err := adminClient(*caCert)
	if err != nil {
		return err
	}
	target := strings.TrimSuffix(strings.TrimSuffix(endpoint, "/"), "/api2/json") + "/pvesim/" + action.path
	req, err := http.NewRequest(action.method, target, strings.NewReader(action.params.Encode()))
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
	fmt.Fprintln(stdout, describe(body.Data))
	return nil
}

// describe is one line about what an admin action answered: a node's, a guest's or the
// scheduler's state.
func describe(d map[string]any) string {
	switch {
	case d["vmid"] != nil:
		return describeGuest(d)
	case d["scheduler"] != nil:
		return describeCRS(d)
	}
	return describeNode(d)
}

// describeGuest is a guest's node, status and live load.
func describeGuest(d map[string]any) string {
	mem, _ := d["mem"].(float64)
	maxmem, _ := d["maxmem"].(float64)
	return fmt.Sprintf("guest %v on %v, %v: cpu %v of %v cores, memory %.1f/%.1f GiB", d["vmid"], d["node"], d["status"], d["cpu_cores"], d["maxcpu"], mem/(1<<30), maxmem/(1<<30))
}

// describeCRS is the scheduler's settings and the node imbalance it sees, and for rounds what
// they did.
func describeCRS(d map[string]any) string {
	imb, _ := d["imbalance"].(float64)
	line := fmt.Sprintf("crs %q: %v scheduler, node imbalance %.0f%%", d["crs"], d["scheduler"], imb*100)
	if n, ran := d["rounds"]; ran {
		moves, _ := d["rebalanced"].([]any)
		parts := []string{}
		for _, m := range moves {
			parts = append(parts, fmt.Sprint(m))
		}
		line += fmt.Sprintf("; %v HA rounds, rebalanced: %s", n, strings.Join(parts, "; "))
		if len(parts) == 0 {
			line += "none"
		}
	}
	return line
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

package proxmox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// resource is one /cluster/resources row. Parsed here rather than with go-proxmox's
// ClusterResource, whose integer maxcpu fails the whole list on a container's fractional one.
type resource struct {
	ID       string  `json:"id"`
	Type     string  `json:"type"`
	Node     string  `json:"node"`
	Status   string  `json:"status"`
	VMID     int     `json:"vmid"`
	Name     string  `json:"name"`
	MaxCPU   float64 `json:"maxcpu"`
	CPU      float64 `json:"cpu"`
	MaxMem   uint64  `json:"maxmem"`
	Mem      uint64  `json:"mem"`
	MaxDisk  uint64  `json:"maxdisk"`
	Disk     uint64  `json:"disk"`
	Template int     `json:"template"`
	Tags     string  `json:"tags"`
	Pool     string  `json:"pool"`
	Lock     string  `json:"lock"`
	Storage  string  `json:"storage"`
	Content  string  `json:"content"`
	Shared   int     `json:"shared"`
}

type nextIDBounds struct{ lower, upper int }

// Snapshot reads the cluster in one GET /cluster/resources, plus GET /cluster/options once
// per client for the datacenter next-id bounds (they change rarely; a provider run is
// short). Guests whose stats PVE has not published yet (just created: status unknown, no
// sizes) are sized from their config, one request each: rare, and counted by the tests.
func (c *Client) Snapshot(ctx context.Context) (scheduler.Snapshot, error) {
	rows, err := c.resources(ctx, "")
	if err != nil {
		return scheduler.Snapshot{}, err
	}
	bounds, err := c.nextIDBounds(ctx)
	if err != nil {
		return scheduler.Snapshot{}, err
	}
	snap := scheduler.Snapshot{}
	if bounds != nil {
		snap.NextIDBounds = &scheduler.IDBounds{Lower: bounds.lower, Upper: bounds.upper}
	}
	nodeIndex := map[string]int{}
	online := map[string]bool{}
	for _, r := range rows {
		if r.Type == "node" {
			nodeIndex[r.Node] = len(snap.Nodes)
			online[r.Node] = r.Status == "online"
			snap.Nodes = append(snap.Nodes, scheduler.Node{
				Name: r.Node, Online: r.Status == "online", MaxCPU: int(r.MaxCPU), MaxMem: r.MaxMem, CPU: r.CPU, Mem: r.Mem,
			})
		}
	}
	for _, r := range rows {
		switch r.Type {
		case "storage":
			if i, ok := nodeIndex[r.Node]; ok {
				snap.Nodes[i].Storages = append(snap.Nodes[i].Storages, scheduler.Storage{
					Name: r.Storage, Content: splitList(r.Content), Active: r.Status == "available", Shared: r.Shared == 1,
					Total: r.MaxDisk, Used: r.Disk,
				})
			}
		case "qemu", "lxc":
			g := scheduler.Guest{
				VMID: r.VMID, Node: r.Node, Name: r.Name, Type: scheduler.GuestType(r.Type), Status: r.Status,
				CPUs: r.MaxCPU, MaxMem: r.MaxMem, Tags: splitList(r.Tags), Pool: r.Pool, Template: r.Template == 1,
			}
			if r.MaxMem == 0 && r.Type == "qemu" && online[r.Node] {
				if err := c.sizeFromConfig(ctx, &g); err != nil && !errors.Is(err, ErrNotFound) {
					return scheduler.Snapshot{}, err
				}
			}
			snap.Guests = append(snap.Guests, g)
		}
	}
	return snap, nil
}

func (c *Client) resources(ctx context.Context, typ string) ([]resource, error) {
	var rows []resource
	var params map[string]string
	if typ != "" {
		params = map[string]string{"type": typ}
	}
	if err := c.get(ctx, "read cluster resources", "/cluster/resources", params, &rows); err != nil {
		return nil, err
	}
	return rows, nil
}

// sizeFromConfig fills a stats-less guest's name, size and status from its config.
func (c *Client) sizeFromConfig(ctx context.Context, g *scheduler.Guest) error {
	vm, err := c.GetVM(ctx, g.Node, g.VMID)
	if err != nil {
		return err
	}
	cfg := vm.Config
	cores, sockets := atoiOr(cfg["cores"], 1), atoiOr(cfg["sockets"], 1)
	g.CPUs = float64(cores * sockets)
	if v := atoiOr(cfg["vcpus"], 0); v > 0 {
		g.CPUs = float64(v)
	}
	g.MaxMem = uint64(atoiOr(strings.TrimPrefix(cfg["memory"], "current="), 512)) << 20
	g.Name = cfg["name"]
	g.Template = cfg["template"] == "1"
	g.Status = vm.Status
	return nil
}

// nextIDBounds reads datacenter next-id once. PVE may send it as an object
// ({"lower":"5000","upper":"6000"}) or as a property string ("lower=5000,upper=6000"). A
// token without Sys.Audit on / gets 403: then PVE's defaults apply.
func (c *Client) nextIDBounds(ctx context.Context) (*nextIDBounds, error) {
	c.optionsMu.Lock()
	defer c.optionsMu.Unlock()
	if c.optionsRead {
		return c.bounds, nil
	}
	var opts map[string]json.RawMessage
	err := c.get(ctx, "read datacenter options", "/cluster/options", nil, &opts)
	if errors.Is(err, ErrForbidden) {
		c.optionsRead = true
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if c.bounds, err = parseNextID(opts["next-id"]); err != nil {
		return nil, err
	}
	c.optionsRead = true
	return c.bounds, nil
}

func parseNextID(raw json.RawMessage) (*nextIDBounds, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	fields := map[string]string{}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		for _, kv := range strings.Split(s, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
	} else {
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("datacenter option next-id: unexpected value %s", raw)
		}
		for k, v := range obj {
			fields[k] = fmt.Sprint(v)
		}
	}
	b := &nextIDBounds{lower: 100, upper: 1000000}
	if v, ok := fields["lower"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("datacenter option next-id: lower %q is not a number", v)
		}
		b.lower = n
	}
	if v, ok := fields["upper"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("datacenter option next-id: upper %q is not a number", v)
		}
		b.upper = n
	}
	return b, nil
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' || r == ' ' })
}

func atoiOr(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return def
}

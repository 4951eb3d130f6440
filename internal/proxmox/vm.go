package proxmox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// VM is a guest's config as PVE reports it, values as strings.
type VM struct {
	Node   string
	VMID   int
	Status string
	Lock   string
	Digest string
	Config map[string]string
}

func vmPath(node string, vmid int) string { return fmt.Sprintf("/nodes/%s/qemu/%d", node, vmid) }

// LocateVM finds the node a VM is on, from /cluster/resources.
func (c *Client) LocateVM(ctx context.Context, vmid int) (string, error) {
	rows, err := c.resources(ctx, "vm")
	if err != nil {
		return "", err
	}
	for _, r := range rows {
		if r.VMID == vmid {
			if r.Type != "qemu" {
				return "", &APIError{Op: "locate VM", Message: fmt.Sprintf("guest %d is a %s, not a QEMU VM", vmid, r.Type)}
			}
			return r.Node, nil
		}
	}
	return "", &APIError{Op: "locate VM", Message: fmt.Sprintf("VM %d does not exist in the cluster", vmid), kind: ErrNotFound}
}

// GetVM reads a VM's config and power status.
func (c *Client) GetVM(ctx context.Context, node string, vmid int) (*VM, error) {
	op := fmt.Sprintf("read VM %d on %s", vmid, node)
	var raw map[string]json.RawMessage
	if err := c.get(ctx, op, vmPath(node, vmid)+"/config", nil, &raw); err != nil {
		return nil, err
	}
	var status struct {
		Status string `json:"status"`
		Lock   string `json:"lock"`
	}
	if err := c.get(ctx, op, vmPath(node, vmid)+"/status/current", nil, &status); err != nil {
		return nil, err
	}
	vm := &VM{Node: node, VMID: vmid, Status: status.Status, Lock: status.Lock, Config: make(map[string]string, len(raw))}
	for k, v := range raw {
		vm.Config[k] = stringify(v)
	}
	vm.Digest = vm.Config["digest"]
	delete(vm.Config, "digest")
	return vm, nil
}

// stringify renders a config value the way it appears in the config file: numbers without
// exponent, strings unquoted.
func stringify(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return string(raw)
}

func toBody(params map[string]string) map[string]any {
	body := make(map[string]any, len(params))
	for k, v := range params {
		body[k] = v
	}
	return body
}

// CreateVM creates a VM from scratch and waits for it. If the request fails in a way that may
// have reached PVE (a network error), it checks whether the VM now exists instead of retrying.
func (c *Client) CreateVM(ctx context.Context, node string, vmid int, params map[string]string) error {
	body := toBody(params)
	body["vmid"] = vmid
	err := c.task(ctx, fmt.Sprintf("create VM %d on %s", vmid, node), http.MethodPost, "/nodes/"+node+"/qemu", body)
	return c.confirmCreated(ctx, err, vmid, params["name"])
}

// CloneRequest describes a clone.
type CloneRequest struct {
	SourceNode string
	SourceVMID int
	NewID      int
	// Target is the node for the clone (empty: the source node).
	Target, Name, Pool, Storage string
	Full                        bool
}

// CloneVM clones a VM or template and waits for it.
func (c *Client) CloneVM(ctx context.Context, r CloneRequest) error {
	body := map[string]any{"newid": r.NewID, "full": boolInt(r.Full)}
	for k, v := range map[string]string{"name": r.Name, "pool": r.Pool, "storage": r.Storage} {
		if v != "" {
			body[k] = v
		}
	}
	if r.Target != "" && r.Target != r.SourceNode {
		body["target"] = r.Target
	}
	op := fmt.Sprintf("clone VM %d to %d", r.SourceVMID, r.NewID)
	err := c.task(ctx, op, http.MethodPost, vmPath(r.SourceNode, r.SourceVMID)+"/clone", body)
	return c.confirmCreated(ctx, err, r.NewID, r.Name)
}

// confirmCreated turns a transient failure of a create into success when the VM turns out to
// exist with our name: the request reached PVE and only its answer was lost.
func (c *Client) confirmCreated(ctx context.Context, err error, vmid int, name string) error {
	if err == nil || !errors.Is(err, ErrTransient) {
		return err
	}
	node, lerr := c.LocateVM(ctx, vmid)
	if lerr != nil {
		return err
	}
	vm, gerr := c.GetVM(ctx, node, vmid)
	if gerr != nil || vm.Config["name"] != name {
		return err
	}
	return nil
}

// UpdateVM sets and deletes config keys and waits for the change.
func (c *Client) UpdateVM(ctx context.Context, node string, vmid int, set map[string]string, del []string) error {
	if len(set) == 0 && len(del) == 0 {
		return nil
	}
	body := toBody(set)
	if len(del) > 0 {
		sorted := append([]string(nil), del...)
		sort.Strings(sorted)
		body["delete"] = strings.Join(sorted, ",")
	}
	return c.task(ctx, fmt.Sprintf("update VM %d", vmid), http.MethodPost, vmPath(node, vmid)+"/config", body)
}

// ResizeDisk grows a disk to size (e.g. "40G").
func (c *Client) ResizeDisk(ctx context.Context, node string, vmid int, disk, size string) error {
	return c.task(ctx, fmt.Sprintf("resize %s of VM %d", disk, vmid), http.MethodPut, vmPath(node, vmid)+"/resize",
		map[string]any{"disk": disk, "size": size})
}

// StartVM starts a VM.
func (c *Client) StartVM(ctx context.Context, node string, vmid int) error {
	return c.task(ctx, fmt.Sprintf("start VM %d", vmid), http.MethodPost, vmPath(node, vmid)+"/status/start", nil)
}

// StopVM stops a VM at once.
func (c *Client) StopVM(ctx context.Context, node string, vmid int) error {
	return c.task(ctx, fmt.Sprintf("stop VM %d", vmid), http.MethodPost, vmPath(node, vmid)+"/status/stop", nil)
}

// ShutdownVM asks the guest OS to shut down, and stops the VM if it has not within timeout.
func (c *Client) ShutdownVM(ctx context.Context, node string, vmid int, timeout time.Duration) error {
	secs := int(timeout.Seconds())
	if secs < 1 {
		secs = 1
	}
	err := c.task(ctx, fmt.Sprintf("shut down VM %d", vmid), http.MethodPost, vmPath(node, vmid)+"/status/shutdown",
		map[string]any{"timeout": secs, "forceStop": 1})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return c.StopVM(ctx, node, vmid)
	}
	return err
}

// MigrateVM moves a VM to target (live when it runs) and waits until PVE shows it there,
// unlocked: right after the task ends the old node can still answer for it.
func (c *Client) MigrateVM(ctx context.Context, node string, vmid int, target string, online bool) error {
	body := map[string]any{"target": target, "with-local-disks": 1}
	if online {
		body["online"] = 1
	}
	if err := c.task(ctx, fmt.Sprintf("migrate VM %d from %s to %s", vmid, node, target), http.MethodPost, vmPath(node, vmid)+"/migrate", body); err != nil {
		return err
	}
	for {
		at, err := c.LocateVM(ctx, vmid)
		if err != nil {
			return err
		}
		if at == target {
			vm, err := c.GetVM(ctx, target, vmid)
			if err == nil && vm.Lock == "" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("migrate VM %d: waiting for it to appear on %s: %w", vmid, target, ctx.Err())
		case <-time.After(c.poll):
		}
	}
}

// DeleteVM stops a running VM and destroys it with its unreferenced disks. A VM that is
// already gone is not an error.
func (c *Client) DeleteVM(ctx context.Context, node string, vmid int) error {
	vm, err := c.GetVM(ctx, node, vmid)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if vm.Status == "running" {
		if err := c.StopVM(ctx, node, vmid); err != nil {
			return err
		}
	}
	err = c.task(ctx, fmt.Sprintf("destroy VM %d", vmid), http.MethodDelete, vmPath(node, vmid),
		map[string]any{"purge": 1, "destroy-unreferenced-disks": 1})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

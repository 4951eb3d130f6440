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

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
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

// findGuest returns vmid's /cluster/resources row, whatever its type.
func (c *Client) findGuest(ctx context.Context, op string, vmid int) (resource, error) {
	rows, err := c.resources(ctx, "vm")
	if err != nil {
		return resource{}, err
	}
	for _, r := range rows {
		if r.VMID == vmid {
			return r, nil
		}
	}
	return resource{}, &APIError{Op: op, Message: fmt.Sprintf("VM %d does not exist in the cluster", vmid), kind: ErrNotFound}
}

// LocateVM finds the node a VM is on, from /cluster/resources.
func (c *Client) LocateVM(ctx context.Context, vmid int) (string, error) {
	r, err := c.findGuest(ctx, "locate VM", vmid)
	if err != nil {
		return "", err
	}
	if r.Type != "qemu" {
		return "", &APIError{Op: "locate VM", Message: fmt.Sprintf("guest %d is a %s container, not a QEMU VM", vmid, r.Type)}
	}
	return r.Node, nil
}

// GetVM reads a VM's config and power status.
func (c *Client) GetVM(ctx context.Context, node string, vmid int) (*VM, error) {
	op := fmt.Sprintf("read VM %d on %s", vmid, node)
	config, err := c.vmConfig(ctx, op, node, vmid)
	if err != nil {
		return nil, err
	}
	var status struct {
		Status string `json:"status"`
		Lock   string `json:"lock"`
	}
	if err := c.get(ctx, op, vmPath(node, vmid)+"/status/current", nil, &status); err != nil {
		return nil, err
	}
	vm := &VM{Node: node, VMID: vmid, Status: status.Status, Lock: status.Lock, Config: config}
	vm.Digest = vm.Config["digest"]
	delete(vm.Config, "digest")
	return vm, nil
}

// vmConfig reads a VM's config (pending values applied), each value as its config file
// writes it, the digest included.
func (c *Client) vmConfig(ctx context.Context, op, node string, vmid int) (map[string]string, error) {
	var raw map[string]json.RawMessage
	if err := c.get(ctx, op, vmPath(node, vmid)+"/config", nil, &raw); err != nil {
		return nil, err
	}
	config := make(map[string]string, len(raw))
	for k, v := range raw {
		config[k] = stringify(v)
	}
	return config, nil
}

// stringify renders a JSON value the way it appears in a PVE config file: strings unquoted,
// numbers without exponent, booleans as 1/0.
func stringify(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	text := strings.TrimSpace(string(raw))
	switch text {
	case "true":
		return "1"
	case "false":
		return "0"
	}
	if strings.ContainsAny(text, ".eE") {
		if f, err := strconv.ParseFloat(text, 64); err == nil {
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
	}
	return text
}

func toBody(params map[string]string) map[string]any {
	body := make(map[string]any, len(params))
	for k, v := range params {
		body[k] = v
	}
	return body
}

func checkVMID(what string, vmid int) error {
	if vmid < scheduler.MinVMID || vmid > scheduler.MaxVMID {
		return fmt.Errorf("%s %d is not a valid VM ID: PVE accepts %d to %d", what, vmid, scheduler.MinVMID, scheduler.MaxVMID)
	}
	return nil
}

// CreateVM creates a VM from scratch and waits for it. It is never repeated: a failure that
// may have reached PVE (a lost answer, a 5xx) must be checked by looking for the VM
// (internal/provision does), as a second create could make a second VM.
func (c *Client) CreateVM(ctx context.Context, node string, vmid int, params map[string]string) error {
	if err := checkVMID("vmid", vmid); err != nil {
		return err
	}
	body := toBody(params)
	body["vmid"] = vmid
	return c.task(ctx, fmt.Sprintf("create VM %d on %s", vmid, node), http.MethodPost, "/nodes/"+node+"/qemu", body)
}

// CloneRequest describes a clone.
type CloneRequest struct {
	// SourceNode is where the source is (empty: looked up).
	SourceNode string
	SourceVMID int
	NewID      int
	// Target is the node for the clone (empty: the source node).
	Target, Name, Pool string
	// Storage is the clone's disk storage; full clones only.
	Storage string
	Full    bool
}

// CloneVM clones a VM or template and waits for it. Like CreateVM, it is never repeated.
func (c *Client) CloneVM(ctx context.Context, r CloneRequest) error {
	if err := checkVMID("clone source", r.SourceVMID); err != nil {
		return err
	}
	if err := checkVMID("new VM ID", r.NewID); err != nil {
		return err
	}
	if r.Storage != "" && !r.Full {
		return fmt.Errorf("clone of VM %d: storage %q can only be chosen for a full clone; set full = true or leave storage empty", r.SourceVMID, r.Storage)
	}
	if r.SourceNode == "" {
		node, err := c.LocateVM(ctx, r.SourceVMID)
		if err != nil {
			return fmt.Errorf("clone source: %w", err)
		}
		r.SourceNode = node
	}
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
	return c.task(ctx, op, http.MethodPost, vmPath(r.SourceNode, r.SourceVMID)+"/clone", body)
}

// sleep waits one poll interval; false when ctx ended first.
func (c *Client) sleep(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(c.poll):
		return true
	}
}

// UpdateVM sets and deletes config keys and waits for the change. Setting values is
// idempotent (deleting an unset key only warns), so transient failures are retried.
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
	return c.onVM(ctx, node, vmid, func(node string) error {
		return c.idempotentTask(ctx, fmt.Sprintf("update VM %d", vmid), http.MethodPost, vmPath(node, vmid)+"/config", body)
	})
}

// maxFollows bounds how often a write follows a VM that moved away under it.
const maxFollows = 3

// onVM runs write, a change of VM vmid on node, the node the caller found it on. PVE's HA
// manager may move an HA-managed VM between that lookup and the write (the CRM acts every
// ~10 s, and at once on a rule just written): PVE then answers "Configuration file
// 'nodes/X/qemu-server/N.conf' does not exist", or "VM is locked (migrate)" while the move
// runs. onVM then finds the VM again, waits for a lock that ends by itself (the migration's),
// and writes where the VM is now, at most maxFollows times. A VM the cluster no longer lists
// as a QEMU VM, or lists unlocked where it was not found, is not written again: the answer
// stands. The error of a move that went on for too long is the last write's.
func (c *Client) onVM(ctx context.Context, node string, vmid int, write func(node string) error) error {
	err := write(node)
	op := fmt.Sprintf("find VM %d again", vmid)
	for range maxFollows {
		if !errors.Is(err, ErrNotFound) && !lockedByMigration(err) {
			return err
		}
		r, ferr := c.findGuest(ctx, op, vmid)
		for ferr == nil && passingLock(r.Lock) {
			if !c.sleep(ctx) {
				return fmt.Errorf("%w; %s: it is still locked (%s): %w", err, op, r.Lock, ctx.Err())
			}
			r, ferr = c.findGuest(ctx, op, vmid)
		}
		switch {
		case errors.Is(ferr, ErrNotFound), ferr == nil && r.Type != "qemu", ferr == nil && r.Node == node && errors.Is(err, ErrNotFound):
			return err
		case ferr != nil:
			return fmt.Errorf("%w; %w", err, ferr)
		}
		node = r.Node
		err = write(node)
	}
	return err
}

// passingLock tells a lock that ends by itself (a create, clone or migration still running)
// from none and from a suspended VM's, which does not.
func passingLock(lock string) bool { return lock != "" && lock != "suspended" }

// lockedByMigration tells PVE's refusal of a change to a VM that is being migrated.
func lockedByMigration(err error) bool {
	var e *APIError
	return errors.As(err, &e) && strings.Contains(e.Message, "VM is locked (migrate)")
}

// SetTags replaces a VM's tags (empty deletes them) with PVE's synchronous config write: no
// task, one request, where the asynchronous write costs a worker task on every node. Setting
// tags is idempotent, so transient failures are retried.
func (c *Client) SetTags(ctx context.Context, node string, vmid int, tags string) error {
	body := map[string]any{"tags": tags}
	if tags == "" {
		body = map[string]any{"delete": "tags"}
	}
	return c.onVM(ctx, node, vmid, func(node string) error {
		return c.retry.do(ctx, func() error {
			return c.write(ctx, fmt.Sprintf("set the tags of VM %d", vmid), http.MethodPut, vmPath(node, vmid)+"/config", body, nil)
		})
	})
}

// ResizeDisk sets a disk's size (e.g. "40G"; PVE refuses to shrink). An absolute size is
// retried on transient failures; a relative one ("+10G") is not, as it would grow twice.
func (c *Client) ResizeDisk(ctx context.Context, node string, vmid int, disk, size string) error {
	op := fmt.Sprintf("resize %s of VM %d", disk, vmid)
	body := map[string]any{"disk": disk, "size": size}
	return c.onVM(ctx, node, vmid, func(node string) error {
		if strings.HasPrefix(size, "+") {
			return c.task(ctx, op, http.MethodPut, vmPath(node, vmid)+"/resize", body)
		}
		return c.idempotentTask(ctx, op, http.MethodPut, vmPath(node, vmid)+"/resize", body)
	})
}

// StartVM starts a VM; one already running is fine, which also makes retries safe.
func (c *Client) StartVM(ctx context.Context, node string, vmid int) error {
	err := c.onVM(ctx, node, vmid, func(node string) error {
		return c.idempotentTask(ctx, fmt.Sprintf("start VM %d", vmid), http.MethodPost, vmPath(node, vmid)+"/status/start", nil)
	})
	var apiErr *APIError
	if errors.As(err, &apiErr) && strings.Contains(apiErr.Message, "already running") {
		return nil
	}
	return err
}

// StopVM stops a VM at once (PVE treats stopping a stopped VM as success).
func (c *Client) StopVM(ctx context.Context, node string, vmid int) error {
	return c.onVM(ctx, node, vmid, func(node string) error {
		return c.idempotentTask(ctx, fmt.Sprintf("stop VM %d", vmid), http.MethodPost, vmPath(node, vmid)+"/status/stop", nil)
	})
}

// shutdownGrace is how long past its timeout a shutdown task may run before we stop the VM
// ourselves (PVE's forceStop should have done so already).
const shutdownGrace = 30 * time.Second

// ShutdownVM asks the guest OS to shut down, and stops the VM if it has not within timeout:
// PVE's forceStop first, then our own stop if the shutdown task fails or overruns.
func (c *Client) ShutdownVM(ctx context.Context, node string, vmid int, timeout time.Duration) error {
	secs := max(1, int(timeout.Seconds()))
	sctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+shutdownGrace)
	defer cancel()
	err := c.onVM(sctx, node, vmid, func(at string) error {
		node = at
		return c.task(sctx, fmt.Sprintf("shut down VM %d", vmid), http.MethodPost, vmPath(node, vmid)+"/status/shutdown",
			map[string]any{"timeout": secs, "forceStop": 1})
	})
	switch {
	case err == nil || ctx.Err() != nil:
		return err
	case errors.Is(err, ErrTaskFailed), errors.Is(err, ErrTransient), sctx.Err() != nil:
		if serr := c.StopVM(ctx, node, vmid); serr != nil {
			return fmt.Errorf("%w; stopping it instead also failed: %w", err, serr)
		}
		return nil
	default:
		return err
	}
}

// MigrateVM moves a VM to target (live when online) and waits until /cluster/resources shows
// it there, unlocked: right after the task ends the old node can still answer for it. A VM
// already on target is left alone.
func (c *Client) MigrateVM(ctx context.Context, node string, vmid int, target string, online bool) error {
	if node == target {
		return nil
	}
	op := fmt.Sprintf("migrate VM %d from %s to %s", vmid, node, target)
	body := map[string]any{"target": target, "with-local-disks": 1}
	if online {
		body["online"] = 1
	}
	err := c.task(ctx, op, http.MethodPost, vmPath(node, vmid)+"/migrate", body)
	if err != nil && !errors.Is(err, ErrTransient) {
		return err
	}
	// A transient failure may hide a migration that started: wait only if it shows.
	for first := true; ; first = false {
		r, ferr := c.findGuest(ctx, op, vmid)
		switch {
		case ferr != nil:
			return ferr
		case r.Node == target && r.Lock == "":
			return nil
		case first && err != nil && r.Lock != "migrate" && r.Node != target:
			return err
		}
		if !c.sleep(ctx) {
			return fmt.Errorf("%s: waiting for it to appear on %s, unlocked: %w", op, target, ctx.Err())
		}
	}
}

// DeleteVM stops a running VM and destroys it with its unreferenced disks and its backup,
// replication and HA entries. A VM that is already gone is not an error, which also makes
// repeating the destroy after a transient failure safe; one that moved (HA, an admin) since
// the caller looked is deleted where it is now.
func (c *Client) DeleteVM(ctx context.Context, node string, vmid int) error {
	op := fmt.Sprintf("delete VM %d", vmid)
	vm, err := c.GetVM(ctx, node, vmid)
	if errors.Is(err, ErrNotFound) {
		r, ferr := c.findGuest(ctx, op, vmid)
		switch {
		case errors.Is(ferr, ErrNotFound), ferr == nil && r.Type != "qemu":
			return nil // gone; a container with the same id now is someone else's
		case ferr != nil:
			return ferr
		case r.Node == node:
			return err
		}
		node = r.Node
		vm, err = c.GetVM(ctx, node, vmid)
	}
	// A create, clone or migration still running holds the VM's lock: wait for it to end
	// rather than fail on "VM is locked".
	for err == nil && passingLock(vm.Lock) {
		if !c.sleep(ctx) {
			return fmt.Errorf("%s: it is still locked (%s): %w", op, vm.Lock, ctx.Err())
		}
		vm, err = c.GetVM(ctx, node, vmid)
	}
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if vm.Status != "stopped" {
		if err := c.StopVM(ctx, node, vmid); err != nil {
			return err
		}
	}
	err = c.idempotentTask(ctx, op, http.MethodDelete, vmPath(node, vmid), map[string]any{"purge": 1, "destroy-unreferenced-disks": 1})
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

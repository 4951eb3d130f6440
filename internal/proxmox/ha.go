package proxmox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// HASettings are the options of a VM's HA resource; a negative count leaves PVE's default.
type HASettings struct {
	State                   string // started, stopped or ignored
	MaxRestart, MaxRelocate int
	Comment                 string
	// AutoRebalance is PVE 9.2's auto-rebalance flag: whether the HA manager's automatic
	// rebalancing may migrate the VM. As resources.cfg has it: FlagUnset is PVE's default (on)
	// from 9.2, and no flag at all before, where a write leaves it out.
	AutoRebalance Flag
	// NoFailback is read only: PVE 9's failback flag (on by default) is off, and the HA
	// manager leaves the service on a lower priority node of its node-affinity rule.
	NoFailback bool
}

// Flag is a boolean option that may be unset: left to PVE's default, or absent.
type Flag int8

const (
	FlagUnset Flag = iota
	FlagOn
	FlagOff
)

// FlagOf is b as a set flag.
func FlagOf(b bool) Flag {
	if b {
		return FlagOn
	}
	return FlagOff
}

// flagFrom reads a boolean option PVE may list as 0/1 or as the config file's text; nil is unset.
func flagFrom(n *flexInt) Flag {
	if n == nil {
		return FlagUnset
	}
	return FlagOf(*n != 0)
}

func haSID(vmid int) string { return "vm:" + strconv.Itoa(vmid) }

// HAResource reads vm:<vmid>'s HA resource; nil when the VM is not one.
func (c *Client) HAResource(ctx context.Context, vmid int) (*HASettings, error) {
	all, err := c.HAResources(ctx)
	if s, ok := all[vmid]; ok {
		return &s, err
	}
	return nil, err
}

// HAResources reads the HA resources of VMs (vm:N) by VMID. Counts PVE has no value for are
// its default, 1; failback is on unless set to 0.
func (c *Client) HAResources(ctx context.Context) (map[int]HASettings, error) {
	var rows []struct {
		SID         string   `json:"sid"`
		State       string   `json:"state"`
		MaxRestart  *int     `json:"max_restart"`
		MaxRelocate *int     `json:"max_relocate"`
		Comment     string   `json:"comment"`
		Failback    *flexInt `json:"failback"` // a number, or a string from the config file
		Rebalance   *flexInt `json:"auto-rebalance"`
	}
	if err := c.get(ctx, "read the HA resources", "/cluster/ha/resources", map[string]string{"type": "vm"}, &rows); err != nil {
		return nil, err
	}
	out := make(map[int]HASettings, len(rows))
	for _, r := range rows {
		vmid, err := strconv.Atoi(strings.TrimPrefix(r.SID, "vm:"))
		if err != nil {
			continue
		}
		s := HASettings{State: r.State, MaxRestart: 1, MaxRelocate: 1, Comment: r.Comment, AutoRebalance: flagFrom(r.Rebalance),
			NoFailback: r.Failback != nil && *r.Failback == 0}
		switch s.State {
		case "", "enabled":
			s.State = "started"
		case "disabled":
			s.State = "stopped"
		}
		if r.MaxRestart != nil {
			s.MaxRestart = *r.MaxRestart
		}
		if r.MaxRelocate != nil {
			s.MaxRelocate = *r.MaxRelocate
		}
		out[vmid] = s
	}
	return out, nil
}

// HAFailbackOff are the VMIDs of res whose failback is off (Snapshot.HAFailbackOff).
func HAFailbackOff(res map[int]HASettings) map[int]bool {
	out := map[int]bool{}
	for vmid, s := range res {
		if s.NoFailback {
			out[vmid] = true
		}
	}
	return out
}

// haBody is s as a create or update sends it. The auto-rebalance flag, set, goes to PVE 9.2 or
// later only: earlier releases refuse a property they do not know.
func (c *Client) haBody(ctx context.Context, s HASettings) (map[string]any, error) {
	body := map[string]any{"state": s.State}
	if s.AutoRebalance != FlagUnset {
		release, err := c.Release(ctx)
		if err != nil {
			return nil, err
		}
		if release.HasAutoRebalance() {
			body["auto-rebalance"] = map[Flag]int{FlagOn: 1, FlagOff: 0}[s.AutoRebalance]
		}
	}
	if s.MaxRestart >= 0 {
		body["max_restart"] = s.MaxRestart
	}
	if s.MaxRelocate >= 0 {
		body["max_relocate"] = s.MaxRelocate
	}
	if s.Comment != "" {
		body["comment"] = s.Comment
	}
	return body, nil
}

// AddHAResource registers the VM as an HA resource and waits until the HA manager has picked
// it up: until then PVE drops a migrate request for it.
func (c *Client) AddHAResource(ctx context.Context, vmid int, s HASettings) error {
	body, err := c.haBody(ctx, s)
	if err != nil {
		return err
	}
	body["sid"] = haSID(vmid)
	op := fmt.Sprintf("register VM %d as an HA resource", vmid)
	if err := c.write(ctx, op, http.MethodPost, "/cluster/ha/resources", body, nil); err != nil {
		return err
	}
	return c.waitHAPickedUp(ctx, vmid)
}

// UpdateHAResource changes the VM's HA resource; a comment set to "" is deleted.
func (c *Client) UpdateHAResource(ctx context.Context, vmid int, s HASettings) error {
	body, err := c.haBody(ctx, s)
	if err != nil {
		return err
	}
	if s.Comment == "" {
		body["delete"] = "comment"
	}
	op := fmt.Sprintf("update the HA resource of VM %d", vmid)
	return c.retry.do(ctx, func() error {
		return c.write(ctx, op, http.MethodPut, "/cluster/ha/resources/"+haSID(vmid), body, nil)
	})
}

// RemoveHAResource unregisters the VM from HA; a VM that is not an HA resource is fine.
func (c *Client) RemoveHAResource(ctx context.Context, vmid int) error {
	op := fmt.Sprintf("remove the HA resource of VM %d", vmid)
	err := c.retry.do(ctx, func() error {
		return c.write(ctx, op, http.MethodDelete, "/cluster/ha/resources/"+haSID(vmid), nil, nil)
	})
	var apiErr *APIError
	if errors.As(err, &apiErr) && strings.Contains(apiErr.Message, "not HA managed") {
		return nil
	}
	return err
}

// waitHAPickedUp polls /cluster/ha/status/current until the HA manager lists the resource
// with a state of its own (crm_state).
func (c *Client) waitHAPickedUp(ctx context.Context, vmid int) error {
	op := fmt.Sprintf("wait for the HA manager to pick up VM %d", vmid)
	for {
		var rows []struct {
			SID      string `json:"sid"`
			CRMState string `json:"crm_state"`
		}
		if err := c.get(ctx, op, "/cluster/ha/status/current", nil, &rows); err != nil {
			return err
		}
		for _, r := range rows {
			if r.SID == haSID(vmid) && r.CRMState != "" {
				return nil
			}
		}
		if !c.sleep(ctx) {
			return fmt.Errorf("%s: %w", op, ctx.Err())
		}
	}
}

// MigrateHA asks the HA manager to move the VM to target and waits until /cluster/resources
// shows it there, unlocked: the request returns before anything moves. A migration that fails
// is an error: QemuMigrate leaves the VM on its source (its target failed, say) and the CRM
// puts the service back to started there (pve-ha-manager Manager.pm
// next_state_migrate_relocate). So is a move the HA manager refuses, next to a service in
// negative affinity (API2/HA/Resources.pm migrate answers with the blocking resources). A
// failed migration shows as a move that was under way (the VM locked "migrate", or the HA
// manager's status moving it) and is over with the VM elsewhere; while the VM is unlocked
// away from target, each poll also reads the HA manager's status.
func (c *Client) MigrateHA(ctx context.Context, vmid int, target string) error {
	op := fmt.Sprintf("migrate VM %d to %s through the HA manager", vmid, target)
	// PVE 9 names the services in negative affinity on target: the CRM will refuse the move
	// (PVE 8 answers null).
	var answer struct {
		Blocking []struct {
			SID   string `json:"sid"`
			Cause string `json:"cause"`
		} `json:"blocking-resources"`
	}
	if err := c.write(ctx, op, http.MethodPost, "/cluster/ha/resources/"+haSID(vmid)+"/migrate", map[string]any{"node": target}, &answer); err != nil {
		return err
	}
	if len(answer.Blocking) > 0 {
		blocking := make([]string, len(answer.Blocking))
		for i, b := range answer.Blocking {
			blocking[i] = fmt.Sprintf("%s (%s)", b.SID, b.Cause)
		}
		return fmt.Errorf("%s: the HA manager refuses the move, blocked by %s (running on or being moved to %s)", op, strings.Join(blocking, ", "), target)
	}
	for seen := false; ; {
		r, err := c.findGuest(ctx, op, vmid)
		if err != nil {
			return err
		}
		switch {
		case r.Lock == "" && r.Node == target:
			return nil
		case r.Lock == "migrate":
			seen = true
		case r.Lock == "":
			moves, err := c.HAMoves(ctx)
			switch {
			case err != nil:
				return err
			case moves[vmid] != "":
				seen = true
			case seen:
				return fmt.Errorf("%s: the migration failed, the VM stays on %s (the node's qmigrate task and the HA manager's log say why)", op, r.Node)
			}
		}
		if !c.sleep(ctx) {
			return fmt.Errorf("%s: waiting for it to be on %s, unlocked (it is on %s): %w", op, target, r.Node, ctx.Err())
		}
	}
}

// WaitGuest polls /cluster/resources until the VM is unlocked on node with status ("" for
// any node or status), as after an HA request, which returns before the HA manager acts.
func (c *Client) WaitGuest(ctx context.Context, vmid int, node, status string) error {
	op := fmt.Sprintf("wait for VM %d", vmid)
	for {
		r, err := c.findGuest(ctx, op, vmid)
		if err != nil {
			return err
		}
		if r.Lock == "" && (node == "" || r.Node == node) && (status == "" || r.Status == status) {
			return nil
		}
		if !c.sleep(ctx) {
			return fmt.Errorf("%s to be %s on %s (it is %s on %s): %w", op, or(status, "ready"), or(node, "any node"), r.Status, r.Node, ctx.Err())
		}
	}
}

func or(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// HAMoves reads the HA services the HA manager is moving (GET
// /cluster/ha/status/manager_status): for each guest in a migrate or relocate (or a start
// balanced onto another node), the node it is moving to. The HA manager counts such a
// service on that node as well as on its own (pve-ha-manager Usage.pm
// get_used_service_nodes): a move next to a negative peer migrating there is refused. VMs and
// containers alike, by VMID; empty when HA never ran.
func (c *Client) HAMoves(ctx context.Context) (map[int]string, error) {
	var status struct {
		ManagerStatus struct {
			ServiceStatus map[string]struct {
				State  string `json:"state"`
				Target string `json:"target"`
			} `json:"service_status"`
		} `json:"manager_status"`
	}
	if err := c.get(ctx, "read the HA manager status", "/cluster/ha/status/manager_status", nil, &status); err != nil {
		return nil, err
	}
	out := map[int]string{}
	for sid, s := range status.ManagerStatus.ServiceStatus {
		_, id, _ := strings.Cut(sid, ":")
		vmid, err := strconv.Atoi(id)
		if err != nil || s.Target == "" {
			continue
		}
		switch s.State {
		case "migrate", "relocate", "request_start_balance":
			out[vmid] = s.Target
		}
	}
	return out, nil
}

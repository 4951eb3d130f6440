package proxmox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// HARuleSet is rules.cfg as one read saw it: the rules and the file's digest, which a write
// sends back so that PVE refuses it when another writer came first. Supported is false on
// PVE 8, which has no rules.
type HARuleSet struct {
	Rules     []scheduler.HARule
	Digest    string
	Supported bool
}

// ErrHARuleConflict is a rules write that lost a race: the file changed since it was read
// (digest), or the rule appeared or went meanwhile. Read the rules again and retry.
var ErrHARuleConflict = errors.New("the HA rules changed meanwhile")

// HARules reads the PVE 9 HA rules (GET /cluster/ha/rules). PVE 8 has no rules: its 501
// (no such method) reads as none. A 403 (no Sys.Audit on /) is returned as ErrForbidden for
// the caller to warn about.
func (c *Client) HARules(ctx context.Context) ([]scheduler.HARule, error) {
	set, err := c.ReadHARules(ctx)
	return set.Rules, err
}

// ReadHARules reads the rules with their digest.
func (c *Client) ReadHARules(ctx context.Context) (HARuleSet, error) {
	var rows []struct {
		Rule      string `json:"rule"`
		Type      string `json:"type"`
		Resources string `json:"resources"`
		Nodes     string `json:"nodes"`
		Strict    int    `json:"strict"`
		Affinity  string `json:"affinity"`
		Disable   int    `json:"disable"`
		Comment   string `json:"comment"`
		Digest    string `json:"digest"`
	}
	if err := c.get(ctx, "read the HA rules", "/cluster/ha/rules", nil, &rows); err != nil {
		if e, ok := err.(*APIError); ok && e.Status == 501 {
			return HARuleSet{}, nil
		}
		return HARuleSet{}, err
	}
	set := HARuleSet{Rules: make([]scheduler.HARule, 0, len(rows)), Supported: true}
	for _, r := range rows {
		rule := scheduler.HARule{Name: r.Rule, Type: r.Type, Strict: r.Strict == 1, Affinity: r.Affinity, Disabled: r.Disable == 1, Comment: r.Comment}
		for _, sid := range splitList(r.Resources) {
			if kind, id, ok := strings.Cut(sid, ":"); ok {
				if vmid, err := strconv.Atoi(id); err == nil {
					rule.VMIDs = append(rule.VMIDs, vmid)
					if kind == "ct" {
						rule.CTs = append(rule.CTs, vmid)
					}
				}
			}
		}
		for _, n := range splitList(r.Nodes) {
			name, prio, _ := strings.Cut(n, ":")
			rule.Nodes = append(rule.Nodes, name)
			if p, err := strconv.Atoi(prio); err == nil && p != 0 {
				if rule.Priorities == nil {
					rule.Priorities = map[string]int{}
				}
				rule.Priorities[name] = p
			}
		}
		set.Rules = append(set.Rules, rule)
		set.Digest = r.Digest
	}
	return set, nil
}

// haRuleBody is a rule as a create or update sends it: every property, type included (an
// update must name it again).
func haRuleBody(r scheduler.HARule) map[string]any {
	sids := make([]string, len(r.VMIDs))
	for i, vmid := range r.VMIDs {
		sids[i] = "vm:" + strconv.Itoa(vmid)
		if slices.Contains(r.CTs, vmid) {
			sids[i] = "ct:" + strconv.Itoa(vmid)
		}
	}
	body := map[string]any{"type": r.Type, "resources": strings.Join(sids, ",")}
	if r.Type == scheduler.HANodeAffinity {
		nodes := make([]string, len(r.Nodes))
		for i, n := range r.Nodes {
			nodes[i] = n
			if p := r.Priorities[n]; p != 0 {
				nodes[i] = n + ":" + strconv.Itoa(p)
			}
		}
		body["nodes"] = strings.Join(nodes, ",")
		body["strict"] = boolInt(r.Strict)
	} else {
		body["affinity"] = r.Affinity
	}
	if r.Comment != "" {
		body["comment"] = r.Comment
	}
	if r.Disabled {
		body["disable"] = 1
	}
	return body
}

// CreateHARule writes a new rule. A rule of that name written meanwhile is ErrHARuleConflict.
func (c *Client) CreateHARule(ctx context.Context, r scheduler.HARule) error {
	body := haRuleBody(r)
	body["rule"] = r.Name
	return haRuleWrite(c.write(ctx, "create HA rule "+r.Name, http.MethodPost, "/cluster/ha/rules", body, nil))
}

// UpdateHARule rewrites the rule as r, with r's comment and disable, when the rules
// still have digest; otherwise it is ErrHARuleConflict.
func (c *Client) UpdateHARule(ctx context.Context, r scheduler.HARule, digest string) error {
	body := haRuleBody(r)
	body["digest"] = digest
	var del []string
	if !r.Disabled {
		del = append(del, "disable")
	}
	if r.Comment == "" {
		del = append(del, "comment")
	}
	if len(del) > 0 {
		body["delete"] = strings.Join(del, ",")
	}
	return haRuleWrite(c.write(ctx, "update HA rule "+r.Name, http.MethodPut, "/cluster/ha/rules/"+r.Name, body, nil))
}

// DeleteHARule removes the rule; one already gone is fine (PVE does not ask).
func (c *Client) DeleteHARule(ctx context.Context, name string) error {
	return c.retry.do(ctx, func() error {
		return c.write(ctx, "delete HA rule "+name, http.MethodDelete, "/cluster/ha/rules/"+name, nil, nil)
	})
}

// haRuleWrite tells a lost race (ErrHARuleConflict) from other failures of a rules write.
func haRuleWrite(err error) error {
	var e *APIError
	if errors.As(err, &e) {
		for _, race := range []string{"detected modified configuration", "already defined", "does not exist"} {
			if strings.Contains(e.Message, race) {
				return fmt.Errorf("%w: %w", ErrHARuleConflict, err)
			}
		}
	}
	return err
}

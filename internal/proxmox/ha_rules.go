package proxmox

import (
	"context"
	"strconv"
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// HARules reads the PVE 9 HA rules (GET /cluster/ha/rules). PVE 8 has no rules: its 501
// (no such method) reads as none. A 403 (no Sys.Audit on /) is returned as ErrForbidden for
// the caller to warn about.
func (c *Client) HARules(ctx context.Context) ([]scheduler.HARule, error) {
	var rows []struct {
		Rule      string `json:"rule"`
		Type      string `json:"type"`
		Resources string `json:"resources"`
		Nodes     string `json:"nodes"`
		Strict    int    `json:"strict"`
		Affinity  string `json:"affinity"`
		Disable   int    `json:"disable"`
	}
	if err := c.get(ctx, "read the HA rules", "/cluster/ha/rules", nil, &rows); err != nil {
		if e, ok := err.(*APIError); ok && e.Status == 501 {
			return nil, nil
		}
		return nil, err
	}
	rules := make([]scheduler.HARule, 0, len(rows))
	for _, r := range rows {
		rule := scheduler.HARule{Name: r.Rule, Type: r.Type, Strict: r.Strict == 1, Affinity: r.Affinity, Disabled: r.Disable == 1}
		for _, sid := range splitList(r.Resources) {
			if _, id, ok := strings.Cut(sid, ":"); ok {
				if vmid, err := strconv.Atoi(id); err == nil {
					rule.VMIDs = append(rule.VMIDs, vmid)
				}
			}
		}
		for _, n := range splitList(r.Nodes) {
			name, _, _ := strings.Cut(n, ":")
			rule.Nodes = append(rule.Nodes, name)
		}
		rules = append(rules, rule)
	}
	return rules, nil
}

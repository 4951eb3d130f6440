package proxmox

import (
	"context"
	"fmt"
)

// VMNotes reads a VM's Notes (its config's description): one request, for the placement
// record of a guest carrying RecordTag.
func (c *Client) VMNotes(ctx context.Context, node string, vmid int) (string, error) {
	var cfg struct {
		Description string `json:"description"`
	}
	err := c.get(ctx, fmt.Sprintf("read the Notes of VM %d on %s", vmid, node), vmPath(node, vmid)+"/config", nil, &cfg)
	return cfg.Description, err
}

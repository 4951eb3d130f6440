package proxmox

import (
	"context"
	"fmt"
)

// Snippets lists the volume ids of the snippet files on storage as node sees it (GET
// /nodes/{node}/storage/{storage}/content?content=snippets). A storage without the snippets
// content type lists none.
func (c *Client) Snippets(ctx context.Context, node, storage string) ([]string, error) {
	var rows []struct {
		VolID string `json:"volid"`
	}
	op := fmt.Sprintf("list the snippets of storage %s on %s", storage, node)
	path := fmt.Sprintf("/nodes/%s/storage/%s/content", node, storage)
	if err := c.get(ctx, op, path, map[string]string{"content": "snippets"}, &rows); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.VolID)
	}
	return out, nil
}

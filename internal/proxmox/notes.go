package proxmox

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
)

// notesParallelism bounds concurrent Notes reads: each is tiny, but PVE proxies it to the node.
const notesParallelism = 8

// NotesCache reads each node's Notes (node config description) once per process: labels in
// Notes change rarely, and a provider process lives for one plan or apply. Reading needs
// Sys.Audit on /; without it the first 403 stops all further reads.
type NotesCache struct {
	client *Client

	mu        sync.Mutex
	notes     map[string]string // node -> Notes ("" for none, or offline when read)
	forbidden bool
}

// NewNotesCache returns an empty cache reading through c.
func NewNotesCache(c *Client) *NotesCache {
	return &NotesCache{client: c, notes: map[string]string{}}
}

// NodeNotes is what one Read returns.
type NodeNotes struct {
	// Notes maps every node read so far to its Notes; a node that was offline (595) when read
	// has none.
	Notes map[string]string
	// Fresh lists, sorted, the nodes this call read itself: their Notes are new to the
	// process, so the caller is the one to report problems in them.
	Fresh []string
	// Warnings are this call's read problems: a missing Sys.Audit (once per process), or a
	// node whose Notes could not be read.
	Warnings []string
}

// Read returns the Notes of nodes, reading those not read yet, at most notesParallelism at a
// time. It never fails: problems become warnings and the affected nodes have no Notes.
func (n *NotesCache) Read(ctx context.Context, nodes []string) NodeNotes {
	n.mu.Lock()
	defer n.mu.Unlock()
	var missing []string
	for _, name := range nodes {
		if _, done := n.notes[name]; !done && !n.forbidden {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	var out NodeNotes
	texts := make([]string, len(missing))
	errs := make([]error, len(missing))
	parallel(len(missing), notesParallelism, func(i int) { texts[i], errs[i] = n.client.nodeNotes(ctx, missing[i]) })
	for i, name := range missing {
		switch err := errs[i]; {
		case errors.Is(err, ErrForbidden):
			if !n.forbidden {
				out.Warnings = append(out.Warnings, "read_node_notes: the credentials may not read node Notes (PVE needs Sys.Audit on /): "+
					"no labels or taints come from Notes; grant Sys.Audit or set read_node_notes = false")
			}
			n.forbidden = true
			continue
		case errors.Is(err, ErrNodeOffline):
		case err != nil:
			out.Warnings = append(out.Warnings, fmt.Sprintf("read_node_notes: node %s: %v; no labels or taints come from its Notes in this run", name, err))
		}
		n.notes[name] = texts[i]
		out.Fresh = append(out.Fresh, name)
	}
	out.Notes = make(map[string]string, len(n.notes))
	for k, v := range n.notes {
		out.Notes[k] = v
	}
	return out
}

// nodeNotes reads one node's description; only that property, so the answer stays small.
func (c *Client) nodeNotes(ctx context.Context, node string) (string, error) {
	var cfg struct {
		Description string `json:"description"`
	}
	err := c.get(ctx, "read the Notes of node "+node, "/nodes/"+node+"/config", map[string]string{"property": "description"}, &cfg)
	return cfg.Description, err
}

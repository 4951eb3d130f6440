package config

import (
	"context"
	"sync"
	"time"
)

// snippetLists caches snippet listings by node and storage for as long as the cluster view is
// shared, so that the plans of many VMs using one snippet list it once.
type snippetLists struct {
	mu    sync.Mutex
	lists map[string]snippetList
}

type snippetList struct {
	readAt time.Time
	files  []string
}

// SnippetFiles lists the snippets of storage on node, read at most maxAge ago, or read now
// when fresh.
func (p *Data) SnippetFiles(ctx context.Context, node, storage string, fresh bool) ([]string, error) {
	c := &p.snippets
	c.mu.Lock()
	defer c.mu.Unlock()
	key := node + "/" + storage
	if l, ok := c.lists[key]; ok && !fresh && time.Since(l.readAt) < p.MaxAge {
		return l.files, nil
	}
	files, err := p.Client.Snippets(ctx, node, storage)
	if err != nil {
		return nil, err
	}
	if c.lists == nil {
		c.lists = map[string]snippetList{}
	}
	c.lists[key] = snippetList{time.Now(), files}
	return files, nil
}

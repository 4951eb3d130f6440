package proxmox

import (
	"context"
	"fmt"
	"sync"
)

// GuestRef names a guest to read.
type GuestRef struct {
	Node string
	VMID int
}

// VMNotes reads the Notes (config description) of each VM, at most notesParallelism at a
// time: the placement records of the guests carrying RecordTag. One request per VM.
func (c *Client) VMNotes(ctx context.Context, vms []GuestRef) ([]string, []error) {
	notes := make([]string, len(vms))
	errs := make([]error, len(vms))
	parallel(len(vms), notesParallelism, func(i int) {
		var cfg struct {
			Description string `json:"description"`
		}
		errs[i] = c.get(ctx, fmt.Sprintf("read the Notes of VM %d on %s", vms[i].VMID, vms[i].Node), vmPath(vms[i].Node, vms[i].VMID)+"/config", nil, &cfg)
		notes[i] = cfg.Description
	})
	return notes, errs
}

// parallel runs f(0) .. f(n-1), at most limit at a time, and waits for all of them.
func parallel(n, limit int, f func(i int)) {
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			f(i)
		}()
	}
	wg.Wait()
}

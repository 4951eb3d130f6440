package proxmox

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"
)

const firstPoll = 25 * time.Millisecond

type taskStatus struct {
	Status     string `json:"status"`
	ExitStatus string `json:"exitstatus"`
}

// taskStatusPatience is how long a task's status may stay unreadable (5xx, 595, no answer)
// before the wait gives up: such a failure says nothing about the task, which PVE goes on
// running, so the status is read again rather than the task judged.
const taskStatusPatience = time.Minute

// waitTask polls a task until it stops and judges how it ended. When its status cannot be
// read for taskStatusPatience, the error matches ErrTaskUnknown: the task may have done its
// work.
func (c *Client) waitTask(ctx context.Context, op, upid string) error {
	node, err := upidNode(upid)
	if err != nil {
		return &APIError{Op: op, Message: err.Error(), kind: ErrTaskFailed}
	}
	path := fmt.Sprintf("/nodes/%s/tasks/%s/status", node, url.PathEscape(upid))
	// Polls grow by a quarter each time, from 25 ms up to c.poll: a task is seen done at most
	// about a quarter of its run time late, with few requests even for long tasks.
	interval := min(firstPoll, c.poll)
	var failingSince time.Time
	for {
		var st taskStatus
		err := c.get(ctx, op+": task status", path, nil, &st)
		switch {
		case err == nil:
			failingSince = time.Time{}
			if done, err := taskResult(op, st); done {
				return err
			}
		case ctx.Err() != nil:
			return err
		case failingSince.IsZero():
			failingSince = time.Now()
		case time.Since(failingSince) > taskStatusPatience:
			return &APIError{Op: op, Message: fmt.Sprintf("the status of task %s could not be read for %s, so whether it succeeded is unknown: %v",
				upid, taskStatusPatience, err), kind: ErrTaskUnknown, cause: err}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: gave up waiting for task %s: %w", op, upid, ctx.Err())
		case <-time.After(interval):
		}
		interval = min(interval*5/4, c.poll)
	}
}

// upidNode checks a task id (UPID:node:pid:pstart:starttime:type:id:user:) and returns the
// node that runs it. An empty or short one would make go-proxmox's task helpers panic.
func upidNode(upid string) (string, error) {
	parts := strings.Split(upid, ":")
	if len(parts) < 9 || parts[0] != "UPID" || parts[1] == "" {
		return "", fmt.Errorf("PVE returned no task id (got %q)", upid)
	}
	return parts[1], nil
}

// taskResult judges a task status. Success is exitstatus "OK" or "WARNINGS: n" (go-proxmox
// calls warnings a failure, and a failed task a success); anything else is a failure carrying
// PVE's text, typed where the text says why (already exists, lock timeout, ...).
func taskResult(op string, st taskStatus) (done bool, err error) {
	if st.Status == "running" {
		return false, nil
	}
	if st.ExitStatus == "OK" || strings.HasPrefix(st.ExitStatus, "WARNINGS:") {
		return true, nil
	}
	msg := st.ExitStatus
	if msg == "" {
		msg = fmt.Sprintf("task ended with status %q and no exit status", st.Status)
	}
	e := classify(op, 0, msg, nil).(*APIError)
	if e.kind == nil {
		e.kind = ErrTaskFailed
	}
	return true, e
}

// task runs a write that starts a PVE task and waits for it.
func (c *Client) task(ctx context.Context, op, method, path string, body map[string]any) error {
	var upid string
	if err := c.write(ctx, op, method, path, body, &upid); err != nil {
		return err
	}
	return c.waitTask(ctx, op, upid)
}

// idempotentTask runs a write whose repetition is harmless (it sets a state rather than
// changing one), so transient failures are retried as for reads.
func (c *Client) idempotentTask(ctx context.Context, op, method, path string, body map[string]any) error {
	return c.retry.do(ctx, func() error { return c.task(ctx, op, method, path, body) })
}

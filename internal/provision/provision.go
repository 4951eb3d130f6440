// Package provision runs the apply-time loop that turns a scheduling request into a guest:
// decide under the process's reservation ledger, create, and decide again when the cluster
// changed under the decision (the VMID was taken, the node went offline). It knows nothing of
// Terraform: the caller supplies the decision, the PVE calls (Client) and the setup of the
// fresh guest, so the loop is tested on its own (provision_test.go).
package provision

import (
	"context"
	"errors"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/reservations"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Client is what the loop needs from PVE.
type Client interface {
	// Snapshot reads the cluster for a decision.
	Snapshot(ctx context.Context) (scheduler.Snapshot, error)
	// Create sends the create (or clone) request for the placement and waits for its task.
	Create(ctx context.Context, p scheduler.Placement) error
	// Find reads guest vmid wherever it is; an error matching proxmox.ErrNotFound when absent.
	Find(ctx context.Context, vmid int) (Guest, error)
}

// Guest is what Find reports: where the guest is, the name its config carries and PVE's lock.
type Guest struct {
	Node, Name, Lock string
}

// Provisioner creates one guest. Fill every field but Log, which may stay nil.
type Provisioner struct {
	Client Client
	Ledger *reservations.Ledger
	// Request is what is placed: its name, size and pins (Node, VMID) steer the retries.
	Request scheduler.Request
	// Clone says the guest is cloned: its request goes to the source's node, so a 595 does
	// not say that the chosen node is offline.
	Clone bool
	// Decide places Request on a snapshot that already holds the ledger's reservations.
	Decide func(snap scheduler.Snapshot) (scheduler.Placement, error)
	// Setup brings the fresh guest to its planned configuration and power state.
	Setup func(ctx context.Context, p scheduler.Placement) error
	// MaxAttempts bounds the decisions (at least 1).
	MaxAttempts int
	// Log reports progress; nil discards it.
	Log func(ctx context.Context, msg string, fields map[string]any)
}

// Result says how the loop ended.
type Result struct {
	// Placement is the last decision; after a successful create its node is where the guest
	// is.
	Placement scheduler.Placement
	// Created says that a guest exists at Placement: the caller must record it, as tainted
	// when Run also returned an error (the guest exists but its setup did not finish).
	Created bool
	// Attempts is how many decisions were made.
	Attempts int
}

// Run decides, creates and sets the guest up. When it returns an error with Created false,
// nothing was left behind.
func (p *Provisioner) Run(ctx context.Context) (Result, error) {
	// Nodes that answered "offline" to this create: the cluster view may not say so yet.
	offline := map[string]bool{}
	snapshot := func(ctx context.Context) (scheduler.Snapshot, error) {
		snap, err := p.Client.Snapshot(ctx)
		for i := range snap.Nodes {
			if offline[snap.Nodes[i].Name] {
				snap.Nodes[i].Online = false
			}
		}
		return snap, err
	}
	for attempt := 1; ; attempt++ {
		var placement scheduler.Placement
		_, err := p.Ledger.Decide(ctx, snapshot, func(snap scheduler.Snapshot) (scheduler.Reservation, error) {
			var err error
			if placement, err = p.Decide(snap); err != nil {
				return scheduler.Reservation{}, err
			}
			return scheduler.Reservation{VMID: placement.VMID, Node: placement.Node, Name: p.Request.Name,
				VCPUs: p.Request.VCPUs(), MemoryMiB: p.Request.MemoryMiB, Tags: p.Request.Tags}, nil
		})
		if err != nil {
			return Result{Attempts: attempt}, err
		}
		p.log(ctx, "placement decided", map[string]any{"name": placement.Name, "node": placement.Node, "vmid": placement.VMID, "attempt": attempt})
		err = p.Client.Create(ctx, placement)
		retry := attempt < p.MaxAttempts
		switch {
		case errors.Is(err, proxmox.ErrAlreadyExists) && p.Request.VMID == 0 && retry:
			p.Ledger.MarkUsed(placement.VMID)
			p.log(ctx, "vmid taken meanwhile, deciding again", map[string]any{"vmid": placement.VMID})
			continue
		case errors.Is(err, proxmox.ErrNodeOffline) && !p.Clone && p.Request.Node == "" && retry:
			// A create from scratch is sent to the chosen node itself, so its 595 means the
			// VM was never made: choose again without that node.
			p.Ledger.Release(placement.VMID)
			offline[placement.Node] = true
			p.log(ctx, "node went offline, deciding again", map[string]any{"node": placement.Node})
			continue
		}
		return p.finish(ctx, placement, err, attempt)
	}
}

// finish sets the new guest up after Create returned createErr, and reports it created
// whenever it exists, so that a failure taints it instead of orphaning it. The reservation
// ends only now: until the guest runs, the snapshot may not count it.
func (p *Provisioner) finish(ctx context.Context, pl scheduler.Placement, createErr error, attempt int) (Result, error) {
	defer p.Ledger.Release(pl.VMID)
	res := Result{Placement: pl, Attempts: attempt}
	if createErr != nil {
		cleanupCtx, cancel := CleanupContext(ctx)
		defer cancel()
		node, ours := p.createdAnyway(cleanupCtx, createErr, pl.VMID)
		if !ours {
			return res, createErr
		}
		// The task was cut off (a timeout) but the guest exists.
		res.Placement.Node, res.Created = node, true
		return res, createErr
	}
	res.Created = true
	return res, p.Setup(ctx, pl)
}

// CleanupContext outlives the operation's timeout, so that after a timeout the provider can
// still find out what exists and record it.
func CleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
}

// createdAnyway tells whether a create that failed with err left its guest behind: only a
// timeout or cancellation can, cutting off the wait for a task that went on running. The
// guest counts as ours when it carries our name, or is still locked, unnamed, by the create or
// clone task we started.
func (p *Provisioner) createdAnyway(ctx context.Context, err error, vmid int) (string, bool) {
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return "", false
	}
	g, err := p.Client.Find(ctx, vmid)
	if err != nil {
		return "", false
	}
	building := (g.Lock == "create" || g.Lock == "clone") && g.Name == ""
	return g.Node, g.Name == p.Request.Name || building
}

func (p *Provisioner) log(ctx context.Context, msg string, fields map[string]any) {
	if p.Log != nil {
		p.Log(ctx, msg, fields)
	}
}

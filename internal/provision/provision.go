// Package provision runs the apply-time loop that turns a scheduling request into a guest:
// decide under the process's reservation ledger, create, and decide again when the cluster
// changed under the decision (the VMID was taken, the node went offline). It knows nothing of
// Terraform: the caller supplies the decision, the PVE calls (Client) and the setup of the
// fresh guest, so the loop is tested on its own (provision_test.go).
package provision

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/reservations"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Client is what the loop needs from PVE.
type Client interface {
	// Snapshot reads the cluster for a decision: a recent view shared with this process's
	// other decisions and reads may serve (the ledger holds what it does not show yet),
	// unless fresh asks for a read made now: the decision is made again because the cluster
	// proved the last view out of date.
	Snapshot(ctx context.Context, fresh bool) (scheduler.Snapshot, error)
	// NodeView is a recent view of the cluster with node's guests read now, for the look
	// again at the chosen node after a create.
	NodeView(ctx context.Context, node string) (scheduler.Snapshot, error)
	// Create sends the create (or clone) request for the placement and waits for its task.
	// The guest carries proxmox.ClaimTag from then on.
	Create(ctx context.Context, p scheduler.Placement) error
	// Find reads guest vmid wherever it is; an error matching proxmox.ErrNotFound when absent.
	Find(ctx context.Context, vmid int) (Guest, error)
	// Confirm replaces the guest's claim mark by proxmox.PendingTag: its node was checked
	// again and keeps it.
	Confirm(ctx context.Context, p scheduler.Placement) error
	// Delete removes a guest this loop made, to back off from a node that filled up.
	Delete(ctx context.Context, node string, vmid int) error
}

// Guest is what Find reports: where the guest is, the name its config carries and PVE's lock.
type Guest struct {
	Node, Name, Lock string
}

// Provisioner creates one guest. Fill every field but Log and Sleep, which may stay nil.
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
	// Check lists why node fails the hard filters for Request, guest vmid's own usage left
	// out; nil when it passes.
	Check func(snap scheduler.Snapshot, node string, vmid int) []string
	// Setup brings the fresh guest to its planned configuration and power state.
	Setup func(ctx context.Context, p scheduler.Placement) error
	// MaxAttempts bounds the decisions (at least 1).
	MaxAttempts int
	// Log reports progress; nil discards it.
	Log func(ctx context.Context, msg string, fields map[string]any)
	// Sleep waits d, or returns false when ctx ends first; nil sleeps for real.
	Sleep func(ctx context.Context, d time.Duration) bool
}

// Result says how the loop ended.
type Result struct {
	// Placement is the last decision (zero when the last decision failed); when Created,
	// its node is where the guest is.
	Placement scheduler.Placement
	// Created says that a guest exists at Placement, or may: the caller must record it, as
	// tainted when Run also returned an error (its setup did not finish).
	Created bool
	// Attempts is how many decisions were made.
	Attempts int
}

// ErrCreatedUnmarked is wrapped by a Client.Create error when the guest was made but could not
// be marked as a claim: the loop then finds it and goes on.
var ErrCreatedUnmarked = errors.New("the VM was created, but its claim mark could not be set")

// unsureRetries bounds the decisions made again after a create whose request may never have
// reached PVE (a 5xx, a lost answer): the same failure may well come back.
const unsureRetries = 2

// Run decides, creates and sets the guest up. When it returns an error with Created false,
// nothing was left behind.
func (p *Provisioner) Run(ctx context.Context) (Result, error) {
	// Nodes that answered "offline" to this create: the cluster view may not say so yet.
	offline := map[string]bool{}
	fresh := false
	snapshot := func(ctx context.Context) (scheduler.Snapshot, error) {
		snap, err := p.Client.Snapshot(ctx, fresh)
		snap.Nodes = slices.Clone(snap.Nodes) // the view may be shared
		for i := range snap.Nodes {
			if offline[snap.Nodes[i].Name] {
				snap.Nodes[i].Online = false
			}
		}
		return snap, err
	}
	unsureLeft, collisions := unsureRetries, 0
	var lastErr error
	for attempt := 1; ; attempt++ {
		if attempt > 1 && !p.sleep(ctx, backoff(attempt)) {
			return Result{Attempts: attempt - 1}, fmt.Errorf("%w (gave up deciding again: %w)", lastErr, ctx.Err())
		}
		fresh = attempt > 1
		var placement scheduler.Placement
		_, err := p.Ledger.Decide(ctx, snapshot, func(snap scheduler.Snapshot) (scheduler.Reservation, error) {
			var err error
			if placement, err = p.decide(snap, skipFor(p.Request.Name, attempt, collisions)); err != nil {
				return scheduler.Reservation{}, err
			}
			return placement.Reservation(&p.Request), nil
		})
		if err != nil {
			return Result{Attempts: attempt}, err
		}
		p.log(ctx, "placement decided", map[string]any{"name": placement.Name, "node": placement.Node, "vmid": placement.VMID, "attempt": attempt})
		res := Result{Placement: placement, Attempts: attempt}
		err = p.Client.Create(ctx, placement)
		retry := attempt < p.MaxAttempts && ctx.Err() == nil
		lastErr = err
		switch {
		case err == nil:
		case errors.Is(err, proxmox.ErrAlreadyExists):
			p.Ledger.MarkUsed(placement.VMID)
			if p.Request.VMID != 0 || !retry {
				return res, err
			}
			collisions++
			p.log(ctx, "vmid taken meanwhile, deciding again", map[string]any{"vmid": placement.VMID})
			continue
		case !unsure(err):
			p.Ledger.Release(placement.VMID)
			return res, err
		default:
			// The request may have done its work: find out before deciding anything else.
			switch g, state := p.find(ctx, placement.VMID); state {
			case absent:
				p.Ledger.Release(placement.VMID)
				// A create from scratch is sent to the chosen node itself, so its 595 means
				// that node is offline; a clone's goes to its source's node.
				nodeDown := errors.Is(err, proxmox.ErrNodeOffline) && !p.Clone && p.Request.Node == ""
				if !retry || !nodeDown && unsureLeft == 0 {
					return res, err
				}
				if nodeDown {
					offline[placement.Node] = true
				} else {
					unsureLeft--
				}
				p.log(ctx, "create failed and made nothing, deciding again", map[string]any{"vmid": placement.VMID, "error": err.Error()})
				continue
			case taken:
				p.Ledger.MarkUsed(placement.VMID)
				if p.Request.VMID != 0 || !retry {
					return res, fmt.Errorf("%w; VM %d now exists, made by someone else", err, placement.VMID)
				}
				collisions++
				continue
			case ours:
				if ctx.Err() != nil {
					// Out of time: record the guest, tainted, rather than set it up.
					p.Ledger.Release(placement.VMID)
					res.Placement.Node, res.Created = g.Node, true
					return res, err
				}
				p.log(ctx, "create answered with an error but made the VM", map[string]any{"vmid": placement.VMID, "error": err.Error()})
				placement.Node, res.Placement.Node = g.Node, g.Node
			default:
				p.Ledger.Release(placement.VMID)
				res.Created = true
				if state == building {
					res.Placement.Node = g.Node
					return res, fmt.Errorf("%w; VM %d exists on %s but is still locked (%s), so whether it is complete is unknown", err, placement.VMID, g.Node, g.Lock)
				}
				return res, fmt.Errorf("%w; whether VM %d was made could not be read, so it is kept in the state to be checked", err, placement.VMID)
			}
		}
		reasons, err := p.claim(ctx, placement)
		if err == nil && len(reasons) > 0 {
			// Another process filled the node at the same time, and this claim is the younger.
			err = fmt.Errorf("node %s filled up while VM %d was created: %s", placement.Node, placement.VMID, strings.Join(reasons, "; "))
			if derr := p.Client.Delete(ctx, placement.Node, placement.VMID); derr != nil {
				p.Ledger.Release(placement.VMID)
				res.Created = true
				return res, fmt.Errorf("%w; backing off, deleting it failed: %w", err, derr)
			}
			p.Ledger.Release(placement.VMID)
			lastErr = err
			if !retry {
				return res, err
			}
			collisions++
			p.log(ctx, "node filled up by a concurrent create, deleted the new VM and deciding again", map[string]any{"node": placement.Node, "vmid": placement.VMID, "reasons": reasons})
			continue
		}
		// The reservation ends only once the guest is set up: until it runs or carries its
		// mark, a snapshot may not count it.
		res.Created = true
		if err == nil {
			err = p.Setup(ctx, placement)
		}
		p.Ledger.Release(placement.VMID)
		return res, err
	}
}

// CleanupContext outlives the operation's timeout, so that after a timeout the provider can
// still find out what exists and record it.
func CleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
}

// decide places the request, then, after VMID collisions, skips a few more free ids, so
// that processes that collided do not collide again on the next one: each decision with the
// id found so far marked used yields the next free id the request's rule allows.
func (p *Provisioner) decide(snap scheduler.Snapshot, skip int) (scheduler.Placement, error) {
	pl, err := p.Decide(snap)
	if err != nil || p.Request.VMID != 0 || skip == 0 {
		return pl, err
	}
	snap.Reservations = slices.Clone(snap.Reservations)
	for range skip {
		snap.Reservations = append(snap.Reservations, scheduler.Reservation{VMID: pl.VMID})
		next, err := p.Decide(snap)
		if err != nil {
			break // the rule's ids ran out: keep the last free one
		}
		pl = next
	}
	return pl, nil
}

// skipFor is how many free ids the attempt skips: none before any collision (the lowest free
// id, as a single process expects), then a deterministic offset from the name and the
// attempt within a window that widens with each collision.
func skipFor(name string, attempt, collisions int) int {
	if collisions == 0 {
		return 0
	}
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d", name, attempt)
	return int(h.Sum32() % uint32(8*collisions))
}

// backoff is the wait before the attempt: random in (0, 25ms * 2^(attempt-2)], at most 1s,
// so that processes that collided come back at different times.
func backoff(attempt int) time.Duration {
	ceiling := time.Second
	if shift := attempt - 2; shift < 6 {
		ceiling = 25 * time.Millisecond << shift
	}
	return time.Duration(rand.Int64N(int64(ceiling))) + 1
}

func (p *Provisioner) sleep(ctx context.Context, d time.Duration) bool {
	if p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// unsure tells whether a create that failed with err may still have made its guest: the
// answer was lost or replaced (5xx, 595, a network error), the task's end could not be read,
// or time ran out. A refusal (4xx, "already exists") or a task that ended in failure made
// nothing: PVE removes what a failed create began.
func unsure(err error) bool {
	var ae *proxmox.APIError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.Is(err, proxmox.ErrTransient), errors.Is(err, proxmox.ErrNodeOffline), errors.Is(err, proxmox.ErrTaskUnknown),
		errors.Is(err, ErrCreatedUnmarked):
		return true
	case errors.As(err, &ae):
		return ae.Status >= 500
	}
	return false
}

type guestState int

const (
	absent     guestState = iota // no guest has the id
	ours                         // the guest carries our name and no create lock: it is complete
	building                     // the guest is still locked by a create or clone, unnamed or ours
	taken                        // someone else's guest has the id
	unreadable                   // the cluster could not be read
)

// find looks for the guest a create that failed uncertainly was making, by vmid and name. A
// guest still locked by its create or clone is waited for (PVE writes the name last), within
// CleanupContext even when ctx has ended: the guest must be accounted for either way.
func (p *Provisioner) find(ctx context.Context, vmid int) (Guest, guestState) {
	ctx, cancel := CleanupContext(ctx)
	defer cancel()
	for {
		g, err := p.Client.Find(ctx, vmid)
		switch {
		case errors.Is(err, proxmox.ErrNotFound):
			return g, absent
		case err != nil:
			return g, unreadable
		case g.Lock != "create" && g.Lock != "clone":
			if g.Name == p.Request.Name {
				return g, ours
			}
			return g, taken
		case g.Name != "" && g.Name != p.Request.Name:
			return g, taken
		}
		if !p.sleep(ctx, time.Second) {
			return g, building
		}
	}
}

// claim checks the guest's node again now that the guest exists: two processes may have
// decided on the same snapshot, each seeing room for one more. It is Nova's claim-and-retry
// in two rounds, which every process evaluates the same way from /cluster/resources:
//
//  1. Count every running and pending guest except the younger unconfirmed claims (a higher
//     vmid, still locked or carrying proxmox.ClaimTag): they back off for this one.
//  2. Confirm (proxmox.PendingTag), then count again without any younger claim.
//
// Round 1 makes an older claim seen late give way to a younger one already confirmed; round
// 2 makes a younger claim give way to an older one that appeared while it checked. Reasons
// are returned when this claim must back off.
func (p *Provisioner) claim(ctx context.Context, pl scheduler.Placement) ([]string, error) {
	if p.Check == nil {
		return nil, nil
	}
	if reasons, err := p.recheck(ctx, pl, false); err != nil || len(reasons) > 0 {
		return reasons, err
	}
	if err := p.Client.Confirm(ctx, pl); err != nil {
		return nil, err
	}
	return p.recheck(ctx, pl, true)
}

// recheck runs the hard filters on pl's node with the younger claims left out: unconfirmed
// ones only, or all of them once this claim is confirmed.
func (p *Provisioner) recheck(ctx context.Context, pl scheduler.Placement, confirmed bool) ([]string, error) {
	snap, err := p.Client.NodeView(ctx, pl.Node)
	if err != nil {
		return nil, fmt.Errorf("checking node %s again after creating VM %d: %w", pl.Node, pl.VMID, err)
	}
	p.Ledger.AddTo(&snap)
	younger := func(vmid int, node string) bool { return vmid > pl.VMID && node == pl.Node }
	guests := make([]scheduler.Guest, 0, len(snap.Guests))
	for _, g := range snap.Guests {
		claimed := g.Pending && g.Status != "running"
		unconfirmed := g.Lock == "create" || g.Lock == "clone" || slices.Contains(g.Tags, proxmox.ClaimTag)
		if claimed && younger(g.VMID, g.Node) && (confirmed || unconfirmed) {
			continue
		}
		guests = append(guests, g)
	}
	snap.Guests = guests
	for i, r := range snap.Reservations {
		if younger(r.VMID, r.Node) {
			snap.Reservations[i] = scheduler.Reservation{VMID: r.VMID} // this process's later decisions
		}
	}
	return p.Check(snap, pl.Node, pl.VMID), nil
}

func (p *Provisioner) log(ctx context.Context, msg string, fields map[string]any) {
	if p.Log != nil {
		p.Log(ctx, msg, fields)
	}
}

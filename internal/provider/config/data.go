package config

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/reservations"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Environment variables, named as in the bpg provider so existing credentials work unchanged.
const (
	EnvEndpoint = "PROXMOX_VE_ENDPOINT"
	EnvToken    = "PROXMOX_VE_API_TOKEN"
	EnvUsername = "PROXMOX_VE_USERNAME"
	EnvPassword = "PROXMOX_VE_PASSWORD"
	EnvInsecure = "PROXMOX_VE_INSECURE"
)

// DefaultSnapshotAge is how long one read of the cluster view serves this process's reads
// and decisions: long enough for the data sources of a plan and a wave of parallel creates to
// share it, short enough that other actors' changes show soon. Creates of this process do not
// shorten it: the ledger holds the placements it made until a view read after them shows
// them, and decisions made again because the view proved out of date read it anew. Updates
// and deletes, which the ledger does not hold, drop it (invalidate).
const DefaultSnapshotAge = 2 * time.Second

// Data is what Configure hands to data sources and resources.
type Data struct {
	Client *proxmox.Client
	// Defaults is the provider's plugin config: the bottom layer every object merges onto.
	Defaults scheduler.PluginConfig
	// Profiles are the named profiles' own layers (YAML, then blocks), merged onto defaults
	// by pluginBase.
	Profiles map[string]scheduler.PluginConfig
	// ProfileDefaults are the named profiles' default policies (withDefaults).
	ProfileDefaults map[string]scheduler.Request
	Ledger          *reservations.Ledger
	// Changes is the plan's change set as this process knows it (changeset.go).
	Changes *changeset.Set
	// Nodes gives every snapshot's nodes their labels and taints.
	Nodes *NodePolicy
	// Records gives every snapshot's marked guests their placement records.
	Records *guestRecords
	// HA shares the HA rules and resources among the VMs' plans and reads.
	HA HACache
	// NewNames are the names of the new VMs this process has planned (claimName).
	NewNames plannedNames

	// MaxAge is how long a cluster view is shared (defaultSnapshotAge).
	MaxAge time.Duration

	mu     sync.Mutex
	Cached *scheduler.Snapshot
	// written is when a write of this process last completed (create, update, delete).
	written time.Time
	// snippets caches the snippet listings plans check cloud_init files against.
	snippets snippetLists
}

// Snapshot returns a recent view of the cluster, shared by reads and decisions within maxAge.
func (p *Data) Snapshot(ctx context.Context) (scheduler.Snapshot, error) {
	return p.SnapshotSince(ctx, time.Now().Add(-p.MaxAge))
}

// ReadView is the view a data source answers from: shared like snapshot's, but never read
// before this process's last completed write. Decisions may use an older view because the
// ledger carries this process's placements; a data source read after an apply (a sticky
// placement, the nodes, the moves) must see the VMs the apply made.
func (p *Data) ReadView(ctx context.Context) (scheduler.Snapshot, error) {
	since := time.Now().Add(-p.MaxAge)
	p.mu.Lock()
	if p.written.After(since) {
		since = p.written
	}
	p.mu.Unlock()
	return p.SnapshotSince(ctx, since)
}

// Wrote records that a write of this process completed: later data source reads read anew.
func (p *Data) Wrote() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.written = time.Now()
}

// SnapshotSince returns a view of the cluster read after since, its nodes labelled and
// tainted: the shared one if it is recent enough, else a new read, which becomes the shared
// one. Callers that need a read at the same time wait for one read.
func (p *Data) SnapshotSince(ctx context.Context, since time.Time) (scheduler.Snapshot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.Cached != nil && p.Cached.ReadAt.After(since) {
		return *p.Cached, nil
	}
	snap, err := p.Client.Snapshot(ctx)
	if err != nil {
		return scheduler.Snapshot{}, withTLSHint(err)
	}
	p.Nodes.Apply(ctx, &snap)
	p.Records.apply(ctx, &snap)
	p.Cached = &snap
	return snap, nil
}

// NodeView is the shared view of the cluster with node's guests read now: what the look
// again at a node after a create needs, for the price of the node's two guest lists rather
// than the whole cluster's view.
func (p *Data) NodeView(ctx context.Context, node string) (scheduler.Snapshot, error) {
	snap, err := p.Snapshot(ctx)
	if err != nil {
		return scheduler.Snapshot{}, err
	}
	fresh, err := p.Client.NodeGuests(ctx, node)
	if err != nil {
		return scheduler.Snapshot{}, err
	}
	// The lists name neither pools nor where a migration goes: keep what the view knows.
	known := map[int]scheduler.Guest{}
	for _, g := range snap.Guests {
		if g.Node == node {
			known[g.VMID] = g
		}
	}
	onNode := make(map[int]bool, len(fresh))
	for i := range fresh {
		was := known[fresh[i].VMID]
		fresh[i].Pool = was.Pool
		if fresh[i].Lock == "migrate" {
			fresh[i].MigratingTo = was.MigratingTo
		}
		onNode[fresh[i].VMID] = true
	}
	guests := make([]scheduler.Guest, 0, len(snap.Guests)+len(fresh))
	for _, g := range snap.Guests {
		switch {
		case onNode[g.VMID]:
		case g.Node != node:
			guests = append(guests, g)
		case g.MigratingTo != "" && g.MigratingTo != node:
			// Gone from the node's list since the view saw it migrating: the migration
			// ended, and the guest runs on its target, where the view counted it already.
			g.Node, g.Lock, g.MigratingTo = g.MigratingTo, "", ""
			guests = append(guests, g)
		}
	}
	snap.Guests = append(guests, fresh...)
	p.Records.apply(ctx, &snap)
	return snap, nil
}

// withTLSHint adds the fix to a certificate error, the first thing most users meet: PVE
// installs a self-signed certificate by default. The client keeps only the error's text.
func withTLSHint(err error) error {
	if !strings.Contains(err.Error(), "x509: ") {
		return err
	}
	// The hint is a sentence of its own, after the error: passed as an argument, so that its
	// full stop is no error string's (staticcheck ST1005).
	hint := fmt.Sprintf("The Proxmox VE API certificate is not trusted. Set ca_cert to the PEM of the CA that "+
		"signed it (on a default install, the content of /etc/pve/pve-root-ca.pem), or insecure = true "+
		"(%s=true) to skip verification in a lab.", EnvInsecure)
	return fmt.Errorf("%w\n\n%s", err, hint)
}

// Invalidate drops the shared view: after a write the ledger does not cover (an update, which
// may migrate or resize a VM; a delete), the next read is made anew.
func (p *Data) Invalidate() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Cached = nil
}

// DataFrom is what data sources and resources do in Configure: take the provider's
// data, which is nil while the provider itself is not configured yet.
func DataFrom(v any, diags *diag.Diagnostics) *Data {
	if v == nil {
		return nil
	}
	data, ok := v.(*Data)
	if !ok {
		diags.AddError("Unexpected provider data", fmt.Sprintf("got %T; this is a bug in the provider", v))
	}
	return data
}

// plannedNames are the names of the new VMs a process has planned. Terraform plans each new
// VM once per walk, and the change set, the plan's hints and the scheduler's tie-break tell
// the plan's VMs apart by name, so a name planned twice is two new VMs sharing it.
type plannedNames struct {
	mu   sync.Mutex
	seen map[string]int
}

// Claim records name and returns how many new VMs of this process have claimed it, this one
// included: 1 for the first, 2 for the one that reports the clash (once, however many share it).
func (p *plannedNames) Claim(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen == nil {
		p.seen = map[string]int{}
	}
	p.seen[name]++
	return p.seen[name]
}

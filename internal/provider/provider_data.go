package provider

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/reservations"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// snapshotTTL is how long a snapshot serves reads: long enough for the data sources of one
// plan to share it, short enough that it never outlives an operation. Writes invalidate it.
const snapshotTTL = 2 * time.Second

// providerData is what Configure hands to data sources and resources.
type providerData struct {
	client *proxmox.Client
	// defaults is the provider's plugin config: the bottom layer every object merges onto.
	defaults scheduler.PluginConfig
	// profiles are the named profiles' own layers (YAML, then blocks), merged onto defaults
	// by pluginBase.
	profiles map[string]scheduler.PluginConfig
	ledger   *reservations.Ledger
	// nodes gives every snapshot's nodes their labels and taints.
	nodes *nodePolicy

	mu       sync.Mutex
	cached   *scheduler.Snapshot
	cachedAt time.Time
}

// snapshot returns a recent snapshot, shared by reads within snapshotTTL.
func (p *providerData) snapshot(ctx context.Context) (scheduler.Snapshot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cached != nil && time.Since(p.cachedAt) < snapshotTTL {
		return *p.cached, nil
	}
	snap, err := p.freshSnapshot(ctx)
	if err != nil {
		return scheduler.Snapshot{}, err
	}
	p.cached, p.cachedAt = &snap, time.Now()
	return snap, nil
}

// freshSnapshot reads the cluster now, its nodes labelled and tainted.
func (p *providerData) freshSnapshot(ctx context.Context) (scheduler.Snapshot, error) {
	snap, err := p.client.Snapshot(ctx)
	if err != nil {
		return scheduler.Snapshot{}, withTLSHint(err)
	}
	p.nodes.apply(ctx, &snap)
	return snap, nil
}

// withTLSHint adds the fix to a certificate error, the first thing most users meet: PVE
// installs a self-signed certificate by default. The client keeps only the error's text.
func withTLSHint(err error) error {
	if !strings.Contains(err.Error(), "x509: ") {
		return err
	}
	return fmt.Errorf("%w\n\nThe Proxmox VE API certificate is not trusted. Set ca_cert to the PEM of the CA that "+
		"signed it (on a default install, the content of /etc/pve/pve-root-ca.pem), or insecure = true "+
		"(%s=true) to skip verification in a lab", err, envInsecure)
}

// invalidate drops the cached snapshot; every write calls it.
func (p *providerData) invalidate() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cached = nil
}

// providerDataFrom is what data sources and resources do in Configure: take the provider's
// data, which is nil while the provider itself is not configured yet.
func providerDataFrom(v any, diags *diag.Diagnostics) *providerData {
	if v == nil {
		return nil
	}
	data, ok := v.(*providerData)
	if !ok {
		diags.AddError("Unexpected provider data", fmt.Sprintf("got %T; this is a bug in the provider", v))
	}
	return data
}

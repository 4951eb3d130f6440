package config

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// HAView is the cluster's HA rules and which guests are HA resources the HA manager acts on,
// as one read saw them.
type HAView struct {
	Rules   proxmox.HARuleSet
	Managed map[int]bool
	// FailbackOff are the resources whose failback is off (Snapshot.HAFailbackOff).
	FailbackOff map[int]bool
	readAt      time.Time
}

// HACache shares one haView among the plans and refreshes of a process, as the cluster view
// is shared; writes drop it. It also warns once that PVE 8 keeps no rules.
type HACache struct {
	mu     sync.Mutex
	view   *HAView
	warned bool
}

// Read returns a view read after since: the shared one, or a new read that becomes it.
func (c *HACache) Read(ctx context.Context, client *proxmox.Client, since time.Time) (HAView, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.view != nil && c.view.readAt.After(since) {
		return *c.view, nil
	}
	v := HAView{readAt: time.Now()}
	var err error
	if v.Rules, err = client.ReadHARules(ctx); err != nil {
		return HAView{}, err
	}
	res, err := client.HAResources(ctx)
	if err != nil {
		return HAView{}, err
	}
	v.Managed = make(map[int]bool, len(res))
	for vmid, s := range res {
		v.Managed[vmid] = s.State != "ignored"
	}
	v.FailbackOff = proxmox.HAFailbackOff(res)
	c.view = &v
	return v, nil
}

func (c *HACache) Drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.view = nil
}

// WarnPVE8 says once per process that the cluster has no HA rules to keep.
func (c *HACache) WarnPVE8(diags *diag.Diagnostics) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.warned {
		return
	}
	c.warned = true
	diags.AddAttributeWarning(path.Root("ha").AtName("placement_rules"), "No HA rules on this Proxmox VE",
		"The cluster has no HA rules (/cluster/ha/rules: PVE 8 or older), so the HA manager does not know the VMs' hard "+
			"placement rules: a failover may put VMs of a group on one node. Upgrade to PVE 9 to have them kept, or set "+
			"ha.placement_rules = false to silence this.")
}

// HasResourceAffinity tells whether an enabled resource-affinity rule exists, whose members
// the HA manager's moves concern (Snapshot.HAMoves).
func HasResourceAffinity(rules []scheduler.HARule) bool {
	return slices.ContainsFunc(rules, func(r scheduler.HARule) bool { return r.Type == scheduler.HAResourceAffinity && !r.Disabled })
}

// HasPriorityClasses tells whether an enabled node-affinity rule ranks nodes (several
// priority classes, or not strict: other nodes at -1), where the HA resources' failback
// decides whether a lower class keeps a VM (Snapshot.HAFailbackOff).
func HasPriorityClasses(rules []scheduler.HARule) bool {
	return slices.ContainsFunc(rules, func(r scheduler.HARule) bool {
		return r.Type == scheduler.HANodeAffinity && !r.Disabled && (!r.Strict || r.MultiplePriorities())
	})
}

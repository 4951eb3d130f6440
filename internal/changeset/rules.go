package changeset

import (
	"context"
	"slices"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// RuleChange is a VM of the plan whose change may alter the HA rules of the VMs whose rules
// are computed from it (its peers): a new VM, or an existing one that moves, is destroyed, or
// changes its tags or what its own rules are computed from (ha block, terms, size).
type RuleChange struct {
	// VMID is the VM's (0: not chosen yet).
	VMID int
	// Tags are the tag lists the VM carries in the plan: before and after an update, one for a
	// create or a destroy. AnyTags says they are not known at plan: any group may count it.
	Tags    [][]string
	AnyTags bool
}

// SelectedBy tells whether sel selects the VM before or after its change.
func (r RuleChange) SelectedBy(sel scheduler.TagSelector) bool {
	return r.AnyTags || slices.ContainsFunc(r.Tags, sel.Selects)
}

// Planned notes that a VM of the plan is being planned; change is what it may alter of its
// peers' rules, nil when nothing. Its plan calls it first, before any wait of its own, so that
// the plans waiting in PeersChange see it.
func (c *Set) Planned(change *RuleChange) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastPlanned = c.Clock.Now()
	if change != nil {
		c.ruleChanges = append(c.ruleChanges, *change)
	}
}

// PeersChange tells whether a VM of the plan other than vmid that peer matches changes (Planned),
// or is a create of this process still to come (Pending's). Terraform plans a change again at
// apply, just before applying it, when such a peer may have written, so the VM's rules are known
// at plan only where none does. In a plan (this process has read VMs: Terraform refreshes each
// just before planning it) it first waits for the plan's other VMs, as a growth does: until no
// VM read is still to be planned and none has been planned for QuietFor, at most firstBurstMax.
// An apply reads no VM: its re-plan decides at once from what the process has seen, its own
// decision of the plan standing where nothing is pending.
func (c *Set) PeersChange(ctx context.Context, vmid int, peer func(RuleChange) bool) bool {
	c.mu.Lock()
	delete(c.refreshed, vmid)
	read := c.readAny
	c.mu.Unlock()
	if read {
		c.awaitPlanned(ctx, func() time.Time { return c.lastPlanned })
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range c.ruleChanges {
		if ch.VMID != vmid && peer(ch) {
			return true
		}
	}
	for _, r := range c.pending(scheduler.Snapshot{}).Reservations {
		if peer(RuleChange{VMID: max(r.VMID, 0), Tags: [][]string{r.Tags}}) {
			return true
		}
	}
	return false
}

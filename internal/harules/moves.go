package harules

import (
	"slices"
	"strconv"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// NodeRuleName is the id of the node-affinity rule the provider keeps for the VM vmid alone.
func NodeRuleName(vmid int) string {
	return Prefix + "vm-" + strconv.Itoa(vmid)
}

// MoveConstraints are the rules that constrain a move of the VM vmid that the provider makes
// (a pinned node, a rebalance move): every rule but the VM's own node rule, which the move
// rewrites for the target before the migration. Keeping it would refuse every move out of
// the domain it was written for.
func MoveConstraints(vmid int, rules []scheduler.HARule) []scheduler.HARule {
	own := NodeRuleName(vmid)
	return slices.DeleteFunc(slices.Clone(rules), func(r scheduler.HARule) bool { return r.Name == own })
}

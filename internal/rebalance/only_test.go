package rebalance

import (
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Only limits the moves to the guests a placement data source names, tags or not: the others
// that break the same policy stay unmentioned, as guests without the opt-in tags do.
func TestOnlyMovesTheNamedGuests(t *testing.T) {
	in := input(t, nodes("pve1", "pve2", "pve3"),
		vm(100, "pve3", 1, 1),
		vm(101, "pve3", 1, 1, "web"),
		vm(102, "pve3", 1, 1, "web"))
	in.OptIn, in.Only = nil, map[int]bool{100: true, 102: true}
	in.Policy.Annotations[scheduler.AnnotationNodeRegex] = "pve[12]"
	plan := mustPlan(t, in)
	got := moves(plan)
	if len(got) != 2 || !strings.HasPrefix(got[0], "vm100:pve3>") || !strings.HasPrefix(got[1], "vm102:pve3>") || len(plan.Kept) != 0 {
		t.Fatalf("moves %v, kept %+v; want vm100 and vm102 off pve3, vm101 (not named) untouched", got, plan.Kept)
	}
}

package changeset

import (
	"context"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// web selects the VMs tagged web: a spread's or a term's group.
var web = scheduler.TagSelector{Tags: []string{"web"}}

func webPeer(c RuleChange) bool { return c.SelectedBy(web) }

// In a plan a VM whose rules depend on its peers waits for the VMs read and not planned yet,
// and for QuietFor after the last VM planned, and then sees a peer's change planned meanwhile;
// a change of a VM outside its groups, or of the VM itself, is none.
func TestPeersChangeWaitsForThePlan(t *testing.T) {
	clk := newManualClock()
	c := New(nil, nil)
	c.Clock = clk
	ctx := context.Background()
	for _, vmid := range []int{100, 101} {
		c.Reading(vmid)
	}
	c.Planned(&RuleChange{VMID: 100, Tags: [][]string{{"web"}, {"web", "blue"}}}) // its own change
	c.Planned(&RuleChange{VMID: 200, Tags: [][]string{{"db"}}})
	changes := make(chan bool, 1)
	go func() { changes <- c.PeersChange(ctx, 100, webPeer) }()
	if d := clk.nextWait(t); d != c.QuietFor {
		t.Fatalf("waits %v, want QuietFor while VM 101 is read and not planned", d)
	}
	clk.advance(c.QuietFor)
	clk.nextWait(t) // 101 still to be planned: waits again
	c.Planned(&RuleChange{VMID: 101, Tags: [][]string{{"web"}}})
	c.Planning(101)
	clk.advance(c.QuietFor)
	if !<-changes {
		t.Error("the change of VM 101, tagged web, planned while VM 100 waited, not seen")
	}
	if c.PeersChange(ctx, 101, func(c RuleChange) bool { return c.VMID == 300 }) {
		t.Error("a change seen where no VM the peer function matches changes")
	}
}

// An apply reads no VM: its re-plan decides at once, from the changes and the creates pending.
func TestPeersChangeAtApplyDoesNotWait(t *testing.T) {
	clk := newManualClock()
	c := New(nil, nil)
	c.Clock = clk
	ctx := context.Background()
	if c.PeersChange(ctx, 100, webPeer) {
		t.Error("a peer's change where none is planned")
	}
	req := memReq("web-3", 512)
	req.Tags = []string{"web"}
	if err := c.Plan(ctx, twoSmallNodes(), Member{Profile: registryProfile(t), Req: req}); err != nil {
		t.Fatal(err)
	}
	if !c.PeersChange(ctx, 100, webPeer) {
		t.Error("the pending create of web-3, tagged web, not seen")
	}
	select {
	case d := <-clk.waits:
		t.Errorf("waited %v", d)
	default:
	}
}

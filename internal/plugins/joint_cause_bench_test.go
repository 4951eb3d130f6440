package plugins

import (
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// BenchmarkScheduleSetRefused200 is the decision of TestAccChangeSetCount200RefusedOnce: 200
// VMs of one vCPU on three nodes of four CPUs at ratio 1, proven refused with its cause.
func BenchmarkScheduleSetRefused200(b *testing.B) {
	snap := scheduler.Snapshot{Nodes: []scheduler.Node{node("pve1", 4, 16), node("pve2", 4, 16), node("pve3", 4, 16)}}
	reqs := replicas(200, 1, 1)
	p := mustProfile(ratioOne())
	for b.Loop() {
		_, err := p.ScheduleSet(snap, reqs, scheduler.Options{})
		if err == nil || !strings.Contains(err.Error(), "need 13 vCPUs on pve1, pve2, pve3, which have 12 vCPUs free") {
			b.Fatalf("err = %v, want the refusal of 200 with its cause", err)
		}
	}
}

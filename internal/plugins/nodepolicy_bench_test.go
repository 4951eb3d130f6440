package plugins

import (
	"fmt"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/nodelabels"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// BenchmarkScheduleNodePolicy is one decision with a node selector, three node affinity terms
// (one required, two preferred) and two tolerations on 64 labelled and partly tainted nodes
// with 10,000 guests.
func BenchmarkScheduleNodePolicy(b *testing.B) {
	snap := benchSnapshot(64, 10000)
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		n.Labels = map[string]string{nodelabels.LabelName: n.Name, "zone": fmt.Sprint("z", i%4),
			"disk": []string{"nvme", "ssd", "hdd"}[i%3], "cores": fmt.Sprint(16 * (1 + i%4))}
		if i%5 == 0 {
			n.Taints = []scheduler.Taint{{Key: "dedicated", Value: "db", Effect: nodelabels.NoSchedule}}
		}
		if i%7 == 0 {
			n.Taints = append(n.Taints, scheduler.Taint{Key: "old-hw", Effect: nodelabels.PreferNoSchedule})
		}
	}
	r := benchRequest("web")
	r.NodeSelector = map[string]string{"zone": "z1"}
	r.NodeAffinity = []scheduler.NodeAffinityTerm{
		scheduler.Expression(0, "cores", nodelabels.OpGt, "16"),
		scheduler.Expression(60, "disk", nodelabels.OpIn, "nvme", "ssd"),
		scheduler.Expression(20, "disk", nodelabels.OpNotIn, "hdd"),
	}
	r.Tolerations = []scheduler.Toleration{{Key: "dedicated", Operator: nodelabels.TolEqual, Value: "db"}, {Key: "old-hw", Operator: nodelabels.TolExists}}
	benchDecisions(b, snap, []scheduler.Request{r})
}

package plugins

import (
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/nodelabels"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// taintScore prefers nodes with fewer PreferNoSchedule taints the request does not tolerate
// (only tolerations with an empty or PreferNoSchedule effect count), normalised as
// kube-scheduler does: 100 - 100*count/max (integer division) over the feasible nodes, and 100 for every node
// when no feasible node has such a taint, so that totals compare with kube's.
type taintScore struct{}

var (
	_ scheduler.ScorePlugin     = taintScore{}
	_ scheduler.ScoreNormalizer = taintScore{}
)

func newTaintScore(map[string]string) (scheduler.Plugin, error) { return taintScore{}, nil }

func (taintScore) Name() string { return TaintTolerationName }

func (taintScore) Score(_ *scheduler.CycleState, req *scheduler.Request, n *scheduler.NodeInfo) float64 {
	count := 0
	for _, t := range n.Node.Taints {
		if t.Effect == nodelabels.PreferNoSchedule && !nodelabels.Tolerated(req.Tolerations, t) {
			count++
		}
	}
	return float64(count)
}

func (taintScore) NormalizeScores(_ *scheduler.CycleState, _ *scheduler.Request, scores []scheduler.NodeScore) {
	normalizeToMax(scores, true)
}

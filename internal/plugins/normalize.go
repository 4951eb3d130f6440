package plugins

import "github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"

// normalizeToMax is kube-scheduler's DefaultNormalizeScore: each raw score (a whole number,
// at least 0) becomes 100*score/max in integer division over the feasible nodes, or 100 minus
// that when reverse; when the highest is 0 the scores stay 0, or all become 100 when reverse.
func normalizeToMax(scores []scheduler.NodeScore, reverse bool) {
	var highest int64
	for _, s := range scores {
		highest = max(highest, int64(s.Score))
	}
	for i := range scores {
		var v int64
		if highest > 0 {
			v = 100 * int64(scores[i].Score) / highest
		}
		if reverse {
			v = 100 - v
		}
		scores[i].Score = float64(v)
	}
}

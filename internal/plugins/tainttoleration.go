package plugins

import (
	"fmt"
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/nodelabels"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// TaintTolerationName is the config key of the taint filter and of the taint score.
const TaintTolerationName = "TaintToleration"

// taintFilter rejects nodes with a NoSchedule or NoExecute taint the request does not
// tolerate (NoExecute counts as NoSchedule at placement), as kube-scheduler's TaintToleration
// filter does.
type taintFilter struct{}

var (
	_ scheduler.FilterPlugin     = taintFilter{}
	_ scheduler.RequestValidator = taintFilter{}
)

func newTaintFilter(map[string]string) (scheduler.Plugin, error) { return taintFilter{}, nil }

func (taintFilter) Name() string { return TaintTolerationName }

func (taintFilter) ValidateRequest(req *scheduler.Request) error {
	for i, t := range req.Tolerations {
		if err := nodelabels.ValidateToleration(t); err != nil {
			return &scheduler.InputError{Attribute: "toleration", Message: fmt.Sprintf("block %d: %v", i+1, err)}
		}
	}
	return nil
}

func (taintFilter) Filter(_ *scheduler.CycleState, req *scheduler.Request, n *scheduler.NodeInfo) *scheduler.Rejection {
	var untolerated []string
	group := ""
	for _, t := range n.Node.Taints {
		if t.Effect == nodelabels.PreferNoSchedule || nodelabels.Tolerated(req.Tolerations, t) {
			continue
		}
		if group == "" {
			group = "had untolerated taint " + strings.TrimSuffix(nodelabels.FormatTaint(t), ":"+t.Effect)
		}
		untolerated = append(untolerated, nodelabels.FormatTaint(t))
	}
	if untolerated == nil {
		return nil
	}
	return &scheduler.Rejection{Reason: "TaintToleration: untolerated taint " + strings.Join(untolerated, ", "), Group: group}
}

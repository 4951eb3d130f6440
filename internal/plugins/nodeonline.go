package plugins

import "github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"

// NodeOnlineName is the config key of the online filter.
const NodeOnlineName = "NodeOnline"

// nodeOnline rejects offline nodes: a VM cannot be created there, and (unlike the reference)
// one offline node must not break the decision for the others.
type nodeOnline struct{}

var _ scheduler.FilterPlugin = nodeOnline{}

func newNodeOnline(map[string]string) (scheduler.Plugin, error) { return nodeOnline{}, nil }

func (nodeOnline) Name() string { return NodeOnlineName }

func (nodeOnline) Filter(_ *scheduler.CycleState, _ *scheduler.Request, n *scheduler.NodeInfo) *scheduler.Rejection {
	if n.Node.Online {
		return nil
	}
	return &scheduler.Rejection{Reason: "NodeOnline: node is offline", Group: "were offline"}
}

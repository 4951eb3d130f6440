package plugins

import (
	"fmt"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// NodeNameName is the config key of the pinned-node filter.
const NodeNameName = "NodeName"

// nodeName passes every node when the request is not pinned, else only the pinned node (exact,
// case-sensitive).
type nodeName struct{}

var _ scheduler.FilterPlugin = nodeName{}

func newNodeName(map[string]string) (scheduler.Plugin, error) { return nodeName{}, nil }

func (nodeName) Name() string { return NodeNameName }

func (nodeName) Filter(_ *scheduler.CycleState, req *scheduler.Request, n *scheduler.NodeInfo) *scheduler.Rejection {
	if req.Node == "" || req.Node == n.Node.Name {
		return nil
	}
	return &scheduler.Rejection{
		Reason: fmt.Sprintf("NodeName: pinned to %q", req.Node),
		Group:  fmt.Sprintf("didn't match pinned node %q", req.Node),
	}
}

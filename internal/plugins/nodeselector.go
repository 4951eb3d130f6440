package plugins

import (
	"fmt"
	"sort"
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/nodelabels"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// NodeSelectorName is the config key of the node selector filter.
const NodeSelectorName = "NodeSelector"

// nodeSelector keeps the nodes whose labels match every node_selector pair and every required
// node_affinity term (weight unset), ANDed, with Kubernetes' operator semantics.
type nodeSelector struct{}

var (
	_ scheduler.FilterPlugin     = nodeSelector{}
	_ scheduler.PreFilterPlugin  = nodeSelector{}
	_ scheduler.RequestValidator = nodeSelector{}
)

func newNodeSelector(map[string]string) (scheduler.Plugin, error) { return nodeSelector{}, nil }

func (nodeSelector) Name() string { return NodeSelectorName }

func (nodeSelector) ValidateRequest(req *scheduler.Request) error {
	for k, v := range req.NodeSelector {
		if err := nodelabels.ValidateKey(k); err != nil {
			return &scheduler.InputError{Attribute: "node_selector", Key: k, Message: err.Error()}
		}
		if err := nodelabels.ValidateValue(v); err != nil {
			return &scheduler.InputError{Attribute: "node_selector", Key: k, Message: err.Error()}
		}
	}
	for i, t := range req.NodeAffinity {
		if err := nodelabels.ValidateTerm(t); err != nil {
			return &scheduler.InputError{Attribute: "node_affinity", Message: fmt.Sprintf("block %d: %v", i+1, err)}
		}
	}
	return nil
}

// requirements are a request's required terms, the selector's pairs first (sorted by key, so
// reasons are stable) as In terms of one value.
type requirements []scheduler.NodeAffinityTerm

func (nodeSelector) PreFilter(state *scheduler.CycleState, req *scheduler.Request, _ []*scheduler.NodeInfo) error {
	var reqs requirements
	keys := make([]string, 0, len(req.NodeSelector))
	for k := range req.NodeSelector {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		reqs = append(reqs, scheduler.NodeAffinityTerm{Key: k, Operator: nodelabels.OpIn, Values: []string{req.NodeSelector[k]}})
	}
	for _, t := range req.NodeAffinity {
		if t.Weight == 0 {
			reqs = append(reqs, t)
		}
	}
	if len(reqs) > 0 {
		state.Write(NodeSelectorName, reqs)
	}
	return nil
}

func (nodeSelector) Filter(state *scheduler.CycleState, req *scheduler.Request, n *scheduler.NodeInfo) *scheduler.Rejection {
	v, ok := state.Read(NodeSelectorName)
	if !ok {
		return nil
	}
	var failures []string
	group := ""
	for i, t := range v.(requirements) {
		if nodelabels.MatchTerm(n.Node.Labels, t) {
			continue
		}
		selector := i < len(req.NodeSelector)
		what, phrase := "node_affinity "+nodelabels.FormatTerm(t), "didn't match node affinity "+nodelabels.FormatTerm(t)
		if selector {
			what, phrase = "node_selector "+t.Key+"="+t.Values[0], "didn't match node selector "+t.Key+"="+t.Values[0]
		}
		if group == "" {
			group = phrase
		}
		failures = append(failures, describeLabel(n.Node.Labels, t.Key)+", "+what)
	}
	if failures == nil {
		return nil
	}
	return &scheduler.Rejection{Reason: "NodeSelector: " + strings.Join(failures, "; "), Group: group}
}

// describeLabel says what a node has under a key, for rejection reasons.
func describeLabel(labels map[string]string, key string) string {
	if v, ok := labels[key]; ok {
		return fmt.Sprintf("label %s=%s", key, v)
	}
	return "no label " + key
}

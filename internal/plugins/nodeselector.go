package plugins

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/nodelabels"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// NodeSelectorName is the config key of the node selector filter.
const NodeSelectorName = "NodeSelector"

// nodeSelector keeps the nodes whose labels match every node_selector pair and every required
// node_affinity (weight unset), ANDed; a node affinity matches through any one of its terms,
// all of whose expressions match (kube's nodeSelectorTerms and matchExpressions), with
// Kubernetes' operator semantics.
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
		if err := nodelabels.ValidateAffinity(t); err != nil {
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
	for _, k := range slices.Sorted(maps.Keys(req.NodeSelector)) {
		reqs = append(reqs, scheduler.Expression(0, k, nodelabels.OpIn, req.NodeSelector[k]))
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
		if nodelabels.MatchAffinity(n.Node.Labels, t) {
			continue
		}
		what, phrase := "node_affinity "+nodelabels.FormatAffinity(t), "didn't match node affinity "+nodelabels.FormatAffinity(t)
		if i < len(req.NodeSelector) {
			e := t.Terms[0][0]
			what, phrase = "node_selector "+e.Key+"="+e.Values[0], "didn't match node selector "+e.Key+"="+e.Values[0]
		}
		if group == "" {
			group = phrase
		}
		failures = append(failures, describeLabels(n.Node.Labels, t)+", "+what)
	}
	if failures == nil {
		return nil
	}
	return &scheduler.Rejection{Reason: "NodeSelector: " + strings.Join(failures, "; "), Group: group}
}

// describeLabels says what a node has under the keys of a node affinity, each once, for
// rejection reasons: "label zone=b", "label zone=b, no label gpu".
func describeLabels(labels map[string]string, a scheduler.NodeAffinityTerm) string {
	var out []string
	seen := map[string]bool{}
	for _, term := range a.Terms {
		for _, e := range term {
			if seen[e.Key] {
				continue
			}
			seen[e.Key] = true
			if v, ok := labels[e.Key]; ok {
				out = append(out, fmt.Sprintf("label %s=%s", e.Key, v))
			} else {
				out = append(out, "no label "+e.Key)
			}
		}
	}
	return strings.Join(out, ", ")
}

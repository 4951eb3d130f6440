package plugins

import (
	"strconv"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// nodeMatchesRequired reports whether the node's labels satisfy the request's node selector
// and every required node_affinity term (they are ANDed).
func nodeMatchesRequired(r *scheduler.Request, n *scheduler.Node) bool {
	for k, v := range r.NodeSelector {
		if got, ok := n.Labels[k]; !ok || got != v {
			return false
		}
	}
	for _, t := range r.NodeAffinity {
		if t.Weight == 0 && !affinityTermMatches(t, n.Labels) {
			return false
		}
	}
	return true
}

// affinityTermMatches applies one node_affinity expression as kube's label selector does:
// NotIn and DoesNotExist match a missing key; Gt and Lt compare integers, and a value that is
// not one fails them.
func affinityTermMatches(t scheduler.NodeAffinityTerm, labels map[string]string) bool {
	v, ok := labels[t.Key]
	switch t.Operator {
	case "In":
		return ok && contains(t.Values, v)
	case "NotIn":
		return !ok || !contains(t.Values, v)
	case "Exists":
		return ok
	case "DoesNotExist":
		return !ok
	case "Gt", "Lt":
		if !ok || len(t.Values) != 1 {
			return false
		}
		have, err1 := strconv.ParseInt(v, 10, 64)
		want, err2 := strconv.ParseInt(t.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if t.Operator == "Gt" {
			return have > want
		}
		return have < want
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// untoleratedNoSchedule returns the first NoSchedule or NoExecute taint no toleration
// covers, or nil when the request may go to the node.
func untoleratedNoSchedule(tols []scheduler.Toleration, taints []scheduler.Taint) *scheduler.Taint {
	for i := range taints {
		t := &taints[i]
		if t.Effect != "NoSchedule" && t.Effect != "NoExecute" {
			continue
		}
		if !toleratedBy(tols, t) {
			return t
		}
	}
	return nil
}

// toleratedBy applies kube's rule: the effect is empty or equal, the key is empty or equal,
// and the operator is Exists or the values are equal (Equal, the default).
func toleratedBy(tols []scheduler.Toleration, t *scheduler.Taint) bool {
	for _, tol := range tols {
		if tol.Effect != "" && tol.Effect != t.Effect {
			continue
		}
		if tol.Key != "" && tol.Key != t.Key {
			continue
		}
		switch tol.Operator {
		case "Exists":
			return true
		case "", "Equal":
			if tol.Key != "" && tol.Value == t.Value {
				return true
			}
		}
	}
	return false
}

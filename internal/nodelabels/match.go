package nodelabels

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Node affinity operators, as Kubernetes names them.
const (
	OpIn           = "In"
	OpNotIn        = "NotIn"
	OpExists       = "Exists"
	OpDoesNotExist = "DoesNotExist"
	OpGt           = "Gt"
	OpLt           = "Lt"
)

// Operators lists the node affinity operators.
var Operators = []string{OpIn, OpNotIn, OpExists, OpDoesNotExist, OpGt, OpLt}

// Toleration operators; an empty operator means Equal.
const (
	TolEqual  = "Equal"
	TolExists = "Exists"
)

// FieldError is a mistake in one field of a term or toleration, so that callers can name the
// attribute path.
type FieldError struct {
	Field   string // key, operator, values, value, effect, weight
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// MaxWeight bounds a preferred term's weight.
const MaxWeight = 100

// ValidateAffinity checks a node affinity: at least one term, each of at least one valid
// expression, and a weight of 0 (required) or 1..100 (preferred).
func ValidateAffinity(a scheduler.NodeAffinityTerm) error {
	if len(a.Terms) == 0 {
		return &FieldError{"key", "a node affinity needs an expression: key and operator, or match_expressions blocks"}
	}
	for _, term := range a.Terms {
		if len(term) == 0 {
			return &FieldError{"node_selector_term", "a node_selector_term needs at least one match_expressions block"}
		}
		for _, e := range term {
			if err := ValidateExpression(e); err != nil {
				return err
			}
		}
	}
	if a.Weight < 0 || a.Weight > MaxWeight {
		return &FieldError{"weight", fmt.Sprintf("weight must be 1..%d (a preference), or unset for a requirement; got %d", MaxWeight, a.Weight)}
	}
	return nil
}

// ValidateExpression checks a node expression: the key's syntax, a known operator, values
// present or absent as the operator needs (In and NotIn one or more, Exists and DoesNotExist
// none, Gt and Lt exactly one integer).
func ValidateExpression(t scheduler.NodeExpression) error {
	if err := ValidateKey(t.Key); err != nil {
		return &FieldError{"key", err.Error()}
	}
	switch t.Operator {
	case OpIn, OpNotIn:
		if len(t.Values) == 0 {
			return &FieldError{"values", fmt.Sprintf("operator %s needs at least one value", t.Operator)}
		}
		for _, v := range t.Values {
			if err := ValidateValue(v); err != nil {
				return &FieldError{"values", err.Error()}
			}
		}
	case OpExists, OpDoesNotExist:
		if len(t.Values) > 0 {
			return &FieldError{"values", fmt.Sprintf("operator %s takes no values; remove values", t.Operator)}
		}
	case OpGt, OpLt:
		if len(t.Values) != 1 {
			return &FieldError{"values", fmt.Sprintf("operator %s needs exactly one integer value, got %d values", t.Operator, len(t.Values))}
		}
		if _, err := strconv.ParseInt(t.Values[0], 10, 64); err != nil {
			return &FieldError{"values", fmt.Sprintf("operator %s needs an integer value, got %q", t.Operator, t.Values[0])}
		}
	default:
		return &FieldError{"operator", fmt.Sprintf("unknown operator %q; use one of %s", t.Operator, strings.Join(Operators, ", "))}
	}
	return nil
}

// MatchAffinity reports whether a node's labels satisfy a node affinity: every expression of
// one of its terms, as kube's nodeSelectorTerms.
func MatchAffinity(labels map[string]string, a scheduler.NodeAffinityTerm) bool {
	for _, term := range a.Terms {
		if matchAll(labels, term) {
			return true
		}
	}
	return false
}

func matchAll(labels map[string]string, term []scheduler.NodeExpression) bool {
	for _, e := range term {
		if !MatchExpression(labels, e) {
			return false
		}
	}
	return true
}

// MatchExpression reports whether a node's labels satisfy an expression, with Kubernetes'
// semantics: NotIn and DoesNotExist match a node without the key; Gt and Lt need the label and
// compare both sides as integers, a label that is not one never matching.
func MatchExpression(labels map[string]string, t scheduler.NodeExpression) bool {
	v, has := labels[t.Key]
	switch t.Operator {
	case OpIn:
		return has && slices.Contains(t.Values, v)
	case OpNotIn:
		return !has || !slices.Contains(t.Values, v)
	case OpExists:
		return has
	case OpDoesNotExist:
		return !has
	case OpGt, OpLt:
		if !has || len(t.Values) != 1 {
			return false
		}
		got, err1 := strconv.ParseInt(v, 10, 64)
		want, err2 := strconv.ParseInt(t.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if t.Operator == OpGt {
			return got > want
		}
		return got < want
	}
	return false
}

// FormatAffinity writes a node affinity for messages: its terms joined by " or ", each one's
// expressions by " and ": "disk In [nvme] and gpu Exists or zone In [b]".
func FormatAffinity(a scheduler.NodeAffinityTerm) string {
	terms := make([]string, len(a.Terms))
	for i, term := range a.Terms {
		exprs := make([]string, len(term))
		for j, e := range term {
			exprs[j] = FormatExpression(e)
		}
		terms[i] = strings.Join(exprs, " and ")
	}
	return strings.Join(terms, " or ")
}

// FormatExpression writes an expression for messages: "disk In [nvme ssd]", "gpu Exists",
// "cores Gt 8".
func FormatExpression(t scheduler.NodeExpression) string {
	switch t.Operator {
	case OpIn, OpNotIn:
		return fmt.Sprintf("%s %s [%s]", t.Key, t.Operator, strings.Join(t.Values, " "))
	case OpGt, OpLt:
		return fmt.Sprintf("%s %s %s", t.Key, t.Operator, strings.Join(t.Values, " "))
	}
	return t.Key + " " + t.Operator
}

// ValidateToleration checks a toleration: operator Equal (or empty) or Exists; Exists takes
// no value; an empty key only with Exists (it then tolerates every taint); the key and value
// in label syntax; effect empty (every effect) or a taint effect.
func ValidateToleration(t scheduler.Toleration) error {
	switch t.Operator {
	case "", TolEqual:
		if t.Key == "" {
			return &FieldError{"operator", `an empty key tolerates every taint only with operator "Exists"; set a key or operator = "Exists"`}
		}
	case TolExists:
		if t.Value != "" {
			return &FieldError{"value", `operator "Exists" takes no value; remove value or use operator "Equal"`}
		}
	default:
		return &FieldError{"operator", fmt.Sprintf(`unknown operator %q; use "Equal" or "Exists"`, t.Operator)}
	}
	if t.Key != "" {
		if err := ValidateKey(t.Key); err != nil {
			return &FieldError{"key", err.Error()}
		}
	}
	if err := ValidateValue(t.Value); err != nil {
		return &FieldError{"value", err.Error()}
	}
	if t.Effect != "" && !validEffect(t.Effect) {
		return &FieldError{"effect", fmt.Sprintf("unknown effect %q; use one of %s, or leave it empty for all", t.Effect, strings.Join(Effects, ", "))}
	}
	return nil
}

// Tolerates reports whether a toleration matches a taint, as Kubernetes decides: the effect
// when set, the key when set, then Exists, or Equal with the same value.
func Tolerates(t scheduler.Toleration, taint Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case TolExists:
		return true
	case "", TolEqual:
		return t.Value == taint.Value
	}
	return false
}

// Tolerated reports whether any of the tolerations matches the taint.
func Tolerated(tols []scheduler.Toleration, taint Taint) bool {
	for _, t := range tols {
		if Tolerates(t, taint) {
			return true
		}
	}
	return false
}

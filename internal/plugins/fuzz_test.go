package plugins

import (
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"100-150", "150", "a-10", "300-200", "1-10", "+100-200", "100-150-200", "", "-", "999999999-999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		start, end, err := parseRange(s)
		if err != nil {
			return
		}
		if start < scheduler.MinVMID || end > scheduler.MaxVMID || start > end {
			t.Fatalf("parseRange(%q) accepted %d-%d", s, start, end)
		}
	})
}

// FuzzLowestMatchingID compares the digit search with brute force over 100..9999 for
// expressions that cannot match longer ids.
func FuzzLowestMatchingID(f *testing.F) {
	for _, s := range []string{`12[0-9]`, `\d{3}`, `[1-3]0+`, `(1|22)3?4`, `\b9\d\d`, `.{4}`, `1*`, `0\d*`, `[^5]{3}`} {
		f.Add(s, uint16(3))
	}
	f.Fuzz(func(t *testing.T, expr string, usedMask uint16) {
		m, err := newDigitDFA(`(?:` + expr + `)`)
		if err != nil {
			return
		}
		var ids []int
		for i := 0; i < 16; i++ {
			if usedMask&(1<<i) != 0 {
				ids = append(ids, 100+i)
			}
		}
		used := scheduler.NewIDSet(ids...)
		got, ok := m.lowestFree(used)
		want, wantOK := bruteLowest(expr, used, 9999)
		if wantOK && (!ok || got != want) {
			t.Fatalf("regex %q: digit search = %d, %v; brute force = %d", expr, got, ok, want)
		}
		if !wantOK && ok && got <= 9999 {
			t.Fatalf("regex %q: digit search found %d, brute force found nothing up to 9999", expr, got)
		}
	})
}

func FuzzParsePluginConfigYAML(f *testing.F) {
	for _, s := range []string{referenceYAML, "filters:\n  CPUOvercommit:\n    config:\n      ratio: 8\n", "scores: {NodeResource: {weight: 2}}", "{", "vmids: [1]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := scheduler.ParsePluginConfigYAML([]byte(s))
		if err != nil {
			return
		}
		_, _ = NewProfile(cfg) // must not panic whatever the names and args
	})
}

package scheduler

import "testing"

func TestIDSet(t *testing.T) {
	s := NewIDSet(105, 100, 101, 101, 102, 200)
	s.add(103)
	s.add(100)
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"has a taken id", s.Has(103), true},
		{"has a free id", s.Has(104), false},
		{"lowest free skips a run", first(s.LowestFree(100, 300)), 104},
		{"lowest free at a free start", first(s.LowestFree(150, 300)), 150},
		{"lowest free when the range is all taken", second(s.LowestFree(100, 103)), false},
		{"lowest free at the range end", first(s.LowestFree(101, 104)), 104},
		{"all taken", s.AllTaken(100, 103), true},
		{"not all taken", s.AllTaken(100, 104), false},
		{"single id", s.AllTaken(200, 200), true},
		{"empty set", NewIDSet().AllTaken(100, 100), false},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

func first(id int, _ bool) int   { return id }
func second(_ int, ok bool) bool { return ok }

func TestNextFreeID(t *testing.T) {
	used := NewIDSet(100, 101, 5000)
	tests := []struct {
		bounds *IDBounds
		want   int
		err    string
	}{
		{nil, 102, ""},
		{&IDBounds{Lower: 5000, Upper: 6000}, 5001, ""},
		{&IDBounds{Lower: 50, Upper: 102}, 0, "no free vmid in datacenter next-id range [100, 102)"},
		{&IDBounds{Lower: 999999999, Upper: 2000000000}, 999999999, ""},
	}
	for _, tt := range tests {
		got, err := nextFreeID(tt.bounds, used)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%+v: err = %v, want %s", tt.bounds, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%+v: %d, %v; want %d", tt.bounds, got, err, tt.want)
		}
	}
}

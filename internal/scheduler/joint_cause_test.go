package scheduler

import (
	"errors"
	"testing"
)

// Three 5-CPU VMs cannot share two 8-CPU nodes, whatever the two 1-CPU ones beside them do:
// the cause names the three, and with a filter that is no capacity, nothing more.
func TestScheduleSetCauseNamesTheSmallestPart(t *testing.T) {
	p := cpuFitProfile(t)
	_, err := p.ScheduleSet(Snapshot{Nodes: testNodes("n1", "n2")}, cpuRequests(1, 5, 5, 1, 5), Options{})
	var se *SetError
	if !errors.As(err, &se) || se.GaveUp {
		t.Fatalf("err = %v, want a proven refusal", err)
	}
	if want := "cause: vm-1, vm-2, vm-4 cannot be placed together"; se.Cause != want {
		t.Fatalf("cause = %q, want %q\n%v", se.Cause, want, err)
	}
}

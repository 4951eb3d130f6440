package plugins

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// RangeName is the config key of the VMID range plugin.
const RangeName = "Range"

// vmidRange picks the lowest free id in the inclusive range of vmid.qemu-scheduler/range.
type vmidRange struct{}

var (
	_ scheduler.VMIDPlugin       = vmidRange{}
	_ scheduler.RequestValidator = vmidRange{}
)

func newRange(map[string]string) (scheduler.Plugin, error) { return vmidRange{}, nil }

func (vmidRange) Name() string { return RangeName }

func (vmidRange) Key() string { return scheduler.AnnotationVMIDRange }

func (vmidRange) Describe(value string) string { return "range " + value }

func (vmidRange) ValidateRequest(req *scheduler.Request) error {
	value, ok := req.Annotations[scheduler.AnnotationVMIDRange]
	if !ok {
		return nil
	}
	_, _, err := parseRange(value)
	return err
}

func (vmidRange) SelectVMID(value string, used scheduler.IDSet) (int, error) {
	start, end, err := parseRange(value)
	if err != nil {
		return 0, err
	}
	if id, ok := used.LowestFree(start, end); ok {
		return id, nil
	}
	n := end - start + 1
	return 0, &scheduler.UnschedulableError{Message: fmt.Sprintf("no free vmid in range %d-%d: %d of %d in use", start, end, n, n)}
}

// parseRange reads "start-end" (inclusive) with 100 <= start <= end <= 999999999.
func parseRange(value string) (int, int, error) {
	fail := func(format string, args ...any) (int, int, error) {
		return 0, 0, &scheduler.InputError{Attribute: "annotations", Key: scheduler.AnnotationVMIDRange, Message: fmt.Sprintf(format, args...)}
	}
	lo, hi, ok := strings.Cut(value, "-")
	if !ok {
		return fail("invalid range %q: want START-END, e.g. 200-299", value)
	}
	start, err1 := parseID(lo)
	end, err2 := parseID(hi)
	if err1 != nil || err2 != nil {
		return fail("invalid range %q: START and END must be whole numbers, e.g. 200-299", value)
	}
	switch {
	case start < scheduler.MinVMID || end > scheduler.MaxVMID:
		return fail("invalid range %q: ids must lie within %d-%d", value, scheduler.MinVMID, scheduler.MaxVMID)
	case start > end:
		return fail("invalid range %q: start %d is greater than end %d", value, start, end)
	}
	return start, end, nil
}

// parseID accepts plain decimal digits only (no sign, no spaces).
func parseID(s string) (int, error) {
	if s == "" || len(s) > 10 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("not a number: %q", s)
	}
	return strconv.Atoi(s)
}

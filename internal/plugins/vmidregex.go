package plugins

import (
	"fmt"
	"sync"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// RegexName is the config key of the VMID regex plugin.
const RegexName = "Regex"

// vmidRegex picks the lowest free id in 100..999999999 whose decimal form matches the whole
// vmid.qemu-scheduler/regex. The reference matched substrings and walked every id up to 10^9
// (minutes when nothing matches); this one searches the regex's automaton digit by digit.
type vmidRegex struct {
	// cache holds built automata: plan-time validation and every placement of a decision
	// reuse the same one.
	cache sync.Map // expression -> *digitDFA
}

var (
	_ scheduler.VMIDPlugin       = (*vmidRegex)(nil)
	_ scheduler.RequestValidator = (*vmidRegex)(nil)
)

func newRegex(map[string]string) (scheduler.Plugin, error) { return &vmidRegex{}, nil }

func (*vmidRegex) Name() string { return RegexName }

func (*vmidRegex) Key() string { return scheduler.AnnotationVMIDRegex }

func (*vmidRegex) Describe(value string) string { return "regex " + value }

func (r *vmidRegex) ValidateRequest(req *scheduler.Request) error {
	value, ok := req.Annotations[scheduler.AnnotationVMIDRegex]
	if !ok {
		return nil
	}
	_, err := r.automaton(value)
	return err
}

func (r *vmidRegex) SelectVMID(value string, used scheduler.IDSet) (int, error) {
	dfa, err := r.automaton(value)
	if err != nil {
		return 0, err
	}
	if id, ok := dfa.lowestFree(used); ok {
		return id, nil
	}
	return 0, &scheduler.UnschedulableError{Message: fmt.Sprintf("no free vmid in %d-%d matches regex %q", scheduler.MinVMID, scheduler.MaxVMID, value)}
}

func (r *vmidRegex) automaton(expr string) (*digitDFA, error) {
	if dfa, ok := r.cache.Load(expr); ok {
		return dfa.(*digitDFA), nil
	}
	dfa, err := newDigitDFA(expr)
	if err != nil {
		return nil, &scheduler.InputError{Attribute: "annotations", Key: scheduler.AnnotationVMIDRegex, Message: err.Error()}
	}
	// A regex no VMID can match is a mistake in the annotation, reported at validation: as a
	// placement failure it read like a full range and asked to make room.
	if _, ok := dfa.lowestFree(scheduler.IDSet{}); !ok {
		return nil, &scheduler.InputError{Attribute: "annotations", Key: scheduler.AnnotationVMIDRegex,
			Message: fmt.Sprintf("regex %q matches no VMID in %d-%d (decimal, without leading zeros)", expr, scheduler.MinVMID, scheduler.MaxVMID)}
	}
	r.cache.Store(expr, dfa)
	return dfa, nil
}

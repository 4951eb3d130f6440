package plugins

import (
	"fmt"
	"regexp/syntax"
	"sync"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// RegexName is the config key of the VMID regex plugin.
const RegexName = "Regex"

// vmidRegex picks the lowest free id in 100..999999999 whose decimal form matches the whole
// vmid.qemu-scheduler/regex. The reference walked every id up to 10^9 (minutes when nothing
// matches); this searches digit by digit over the regex's automaton and prunes every prefix
// that cannot complete to a match, so it visits only prefixes of matching ids.
type vmidRegex struct {
	cache sync.Map // expression -> *digitMatcher
}

func newRegex(map[string]string) (scheduler.Plugin, error) { return &vmidRegex{}, nil }

func (*vmidRegex) Name() string { return RegexName }

func (*vmidRegex) Key() string { return scheduler.AnnotationVMIDRegex }

func (*vmidRegex) Describe(value string) string { return "regex " + value }

func (r *vmidRegex) ValidateRequest(req scheduler.Request) error {
	value, ok := req.Annotations[scheduler.AnnotationVMIDRegex]
	if !ok {
		return nil
	}
	_, err := r.matcher(value)
	return err
}

func (r *vmidRegex) SelectVMID(value string, used scheduler.IDSet) (int, error) {
	m, err := r.matcher(value)
	if err != nil {
		return 0, err
	}
	if id, ok := m.lowestFree(used); ok {
		return id, nil
	}
	return 0, &scheduler.UnschedulableError{Message: fmt.Sprintf("no free vmid in %d-%d matches regex %q", scheduler.MinVMID, scheduler.MaxVMID, value)}
}

func (r *vmidRegex) matcher(expr string) (*digitMatcher, error) {
	if m, ok := r.cache.Load(expr); ok {
		return m.(*digitMatcher), nil
	}
	m, err := newDigitMatcher(expr)
	if err != nil {
		return nil, &scheduler.InputError{Attribute: "annotations", Key: scheduler.AnnotationVMIDRegex, Message: err.Error()}
	}
	r.cache.Store(expr, m)
	return m, nil
}

// LowestMatchingID returns the lowest id in 100..999999999 that is not in used and whose
// decimal form matches the whole of expr.
func LowestMatchingID(expr string, used scheduler.IDSet) (int, bool, error) {
	m, err := newDigitMatcher(expr)
	if err != nil {
		return 0, false, err
	}
	id, ok := m.lowestFree(used)
	return id, ok, nil
}

const maxDigits = 9 // 999999999

// digitMatcher simulates the regex's NFA over digit strings.
type digitMatcher struct {
	prog *syntax.Prog
	// canFinish[k][pc] reports whether a thread about to run pc, past the first digit, can
	// reach a match after exactly k more digits.
	canFinish [maxDigits + 1][]bool
}

func newDigitMatcher(expr string) (*digitMatcher, error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("invalid regex %q: %v", expr, err)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, fmt.Errorf("invalid regex %q: %v", expr, err)
	}
	m := &digitMatcher{prog: prog}
	// canFinish by dynamic programming over the remaining length: k digits are left after
	// pc's closure consumes one digit and k-1 are left from there.
	for k := 0; k <= maxDigits; k++ {
		m.canFinish[k] = make([]bool, len(prog.Inst))
		for pc := range prog.Inst {
			runes, match := m.closure([]uint32{uint32(pc)}, false, k == 0)
			if k == 0 {
				m.canFinish[k][pc] = match
				continue
			}
			for d := '0'; d <= '9' && !m.canFinish[k][pc]; d++ {
				m.canFinish[k][pc] = m.anyCanFinish(m.step(runes, d), k-1)
			}
		}
	}
	return m, nil
}

// closure follows empty transitions from pcs at a position (atStart: no digit consumed yet;
// atEnd: no digit follows) and returns the rune-consuming instructions reached and whether a
// match is reached.
func (m *digitMatcher) closure(pcs []uint32, atStart, atEnd bool) (runes []uint32, match bool) {
	seen := make(map[uint32]bool, 8)
	stack := append([]uint32(nil), pcs...)
	for len(stack) > 0 {
		pc := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[pc] {
			continue
		}
		seen[pc] = true
		inst := &m.prog.Inst[pc]
		switch inst.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			stack = append(stack, inst.Out, inst.Arg)
		case syntax.InstCapture, syntax.InstNop:
			stack = append(stack, inst.Out)
		case syntax.InstEmptyWidth:
			if emptyOK(syntax.EmptyOp(inst.Arg), atStart, atEnd) {
				stack = append(stack, inst.Out)
			}
		case syntax.InstMatch:
			match = true
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			runes = append(runes, pc)
		}
	}
	return runes, match
}

// emptyOK evaluates a zero-width assertion inside a string of digits (all word characters).
func emptyOK(op syntax.EmptyOp, atStart, atEnd bool) bool {
	if op&(syntax.EmptyBeginLine|syntax.EmptyBeginText) != 0 && !atStart {
		return false
	}
	if op&(syntax.EmptyEndLine|syntax.EmptyEndText) != 0 && !atEnd {
		return false
	}
	boundary := atStart || atEnd // a word boundary only at the edges of a digit string
	if op&syntax.EmptyWordBoundary != 0 && !boundary {
		return false
	}
	if op&syntax.EmptyNoWordBoundary != 0 && boundary {
		return false
	}
	return true
}

// step consumes digit d from the rune instructions reached by a closure.
func (m *digitMatcher) step(runes []uint32, d rune) []uint32 {
	var next []uint32
	for _, pc := range runes {
		inst := &m.prog.Inst[pc]
		if inst.MatchRune(d) {
			next = append(next, inst.Out)
		}
	}
	return next
}

func (m *digitMatcher) anyCanFinish(pcs []uint32, k int) bool {
	for _, pc := range pcs {
		if m.canFinish[k][pc] {
			return true
		}
	}
	return false
}

// lowestFree tries lengths 3..9 in turn (shorter ids are smaller) and, within a length,
// digits in ascending order, so the first free match found is the lowest.
func (m *digitMatcher) lowestFree(used scheduler.IDSet) (int, bool) {
	start := []uint32{uint32(m.prog.Start)}
	for length := 3; length <= maxDigits; length++ {
		if id, ok := m.search(start, true, length, 0, used); ok {
			return id, true
		}
	}
	return 0, false
}

func (m *digitMatcher) search(pcs []uint32, atStart bool, remaining, prefix int, used scheduler.IDSet) (int, bool) {
	runes, _ := m.closure(pcs, atStart, false)
	first := '0'
	if atStart {
		first = '1' // no leading zeros
	}
	for d := first; d <= '9'; d++ {
		next := m.step(runes, d)
		if len(next) == 0 || !m.anyCanFinish(next, remaining-1) {
			continue
		}
		id := prefix*10 + int(d-'0')
		if remaining == 1 {
			if !used.Has(id) {
				return id, true
			}
			continue
		}
		if found, ok := m.search(next, false, remaining-1, id, used); ok {
			return found, true
		}
	}
	return 0, false
}

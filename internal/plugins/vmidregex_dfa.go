package plugins

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"sort"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// The shortest and longest VMIDs: 100 and 999999999.
const (
	minDigits = 3
	maxDigits = 9
)

// Limits on the automaton, so that a pathological expression is refused quickly instead of
// stalling a plan. Real expressions need a few dozen states and a few thousand steps.
const (
	maxStates = 20000
	maxWork   = 20_000_000 // instructions visited while building
)

var errTooComplex = errors.New("too complex for the vmid search; simplify it")

// digitDFA is a regex's automaton over decimal digits: the subset construction of the RE2
// program, limited to the states reachable within maxDigits digits. With live[s][k] ("some
// string of exactly k digits leads from s to a match") the search for the lowest matching id
// never enters a prefix that cannot complete, so a regex that matches nothing costs a few
// table lookups per length instead of the reference's walk over 10^9 ids. It is immutable
// once built, so one instance can serve concurrent decisions.
type digitDFA struct {
	// next[s][d] is the state after digit d, or -1 when no thread survives.
	next [][10]int32
	// live[s][k] reports whether exactly k more digits can take state s to a match.
	live [][maxDigits + 1]bool
}

// builder holds the scratch state of one construction.
type builder struct {
	prog *syntax.Prog
	// index finds a state by its thread set: the sorted program counters of the threads about
	// to run at one position.
	index map[string]int32
	// Per state: the rune instructions its threads reach (sorted), whether the string may end
	// there, and the number of digits consumed to first reach it.
	runes  [][]uint32
	accept []bool
	depth  []int
	// seen marks instructions visited by the current closure (generation stamps avoid
	// clearing it each time).
	seen  []uint32
	gen   uint32
	stack []uint32
	work  int
}

// newDigitDFA compiles expr (RE2 syntax) into an automaton deciding whole-string matches.
func newDigitDFA(expr string) (*digitDFA, error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("invalid regex %q: %v", expr, err)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, fmt.Errorf("invalid regex %q: %v", expr, err)
	}
	b := &builder{prog: prog, index: map[string]int32{}, seen: make([]uint32, len(prog.Inst))}
	b.intern([]uint32{uint32(prog.Start)}, true, 0)
	dfa := &digitDFA{}
	// States are numbered in breadth-first order, so each one is expanded after its parents
	// and first reached at its smallest depth.
	for s := 0; s < len(b.runes); s++ {
		var row [10]int32
		for d := range row {
			row[d] = -1
			if b.depth[s] < maxDigits {
				row[d] = b.step(b.runes[s], rune('0'+d), b.depth[s]+1)
			}
		}
		dfa.next = append(dfa.next, row)
		if len(b.runes) > maxStates || b.work > maxWork {
			return nil, fmt.Errorf("regex %q is %w", expr, errTooComplex)
		}
	}
	// live by length: a state first reached at depth t is only asked about k <= maxDigits-t,
	// and its successors (depth <= t+1) were expanded, so the table is exact where it is read.
	dfa.live = make([][maxDigits + 1]bool, len(b.runes))
	for s := range dfa.live {
		dfa.live[s][0] = b.accept[s]
	}
	for k := 1; k <= maxDigits; k++ {
		for s := range dfa.live {
			for _, n := range dfa.next[s] {
				if n >= 0 && dfa.live[n][k-1] {
					dfa.live[s][k] = true
					break
				}
			}
		}
	}
	return dfa, nil
}

// intern returns the state of a thread set (sorted, without duplicates), adding it when new.
// The initial state is kept apart: ^ and \b hold at its left edge only.
func (b *builder) intern(pcs []uint32, atStart bool, depth int) int32 {
	key := make([]byte, 1, 1+4*len(pcs))
	if atStart {
		key[0] = 1
	}
	for _, pc := range pcs {
		key = append(key, byte(pc>>24), byte(pc>>16), byte(pc>>8), byte(pc))
	}
	if s, ok := b.index[string(key)]; ok {
		return s
	}
	s := int32(len(b.runes))
	b.index[string(key)] = s
	runes, _ := b.closure(pcs, atStart, false)
	_, accept := b.closure(pcs, atStart, true)
	b.runes = append(b.runes, runes)
	b.accept = append(b.accept, accept)
	b.depth = append(b.depth, depth)
	return s
}

// step consumes digit d from a state's rune instructions and interns the thread set that
// survives; -1 when none does.
func (b *builder) step(runes []uint32, d rune, depth int) int32 {
	var next []uint32
	for _, pc := range runes {
		if inst := &b.prog.Inst[pc]; inst.MatchRune(d) {
			next = append(next, inst.Out)
		}
	}
	if len(next) == 0 {
		return -1
	}
	sort.Slice(next, func(i, j int) bool { return next[i] < next[j] })
	uniq := next[:1]
	for _, pc := range next[1:] {
		if pc != uniq[len(uniq)-1] {
			uniq = append(uniq, pc)
		}
	}
	return b.intern(uniq, false, depth)
}

// closure follows the empty transitions from pcs at one position (atStart: no digit before;
// atEnd: no digit after). It returns the rune-consuming instructions reached, sorted, and
// whether a match is reached.
func (b *builder) closure(pcs []uint32, atStart, atEnd bool) (runes []uint32, match bool) {
	b.gen++
	b.stack = append(b.stack[:0], pcs...)
	for len(b.stack) > 0 {
		pc := b.stack[len(b.stack)-1]
		b.stack = b.stack[:len(b.stack)-1]
		if b.seen[pc] == b.gen {
			continue
		}
		b.seen[pc] = b.gen
		b.work++
		inst := &b.prog.Inst[pc]
		switch inst.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			b.stack = append(b.stack, inst.Out, inst.Arg)
		case syntax.InstCapture, syntax.InstNop:
			b.stack = append(b.stack, inst.Out)
		case syntax.InstEmptyWidth:
			if emptyOK(syntax.EmptyOp(inst.Arg), atStart, atEnd) {
				b.stack = append(b.stack, inst.Out)
			}
		case syntax.InstMatch:
			match = true
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			runes = append(runes, pc)
		}
	}
	sort.Slice(runes, func(i, j int) bool { return runes[i] < runes[j] })
	return runes, match
}

// emptyOK evaluates a zero-width assertion inside a string of digits, which are all word
// characters and contain no newline.
func emptyOK(op syntax.EmptyOp, atStart, atEnd bool) bool {
	if op&(syntax.EmptyBeginLine|syntax.EmptyBeginText) != 0 && !atStart {
		return false
	}
	if op&(syntax.EmptyEndLine|syntax.EmptyEndText) != 0 && !atEnd {
		return false
	}
	boundary := atStart || atEnd
	if op&syntax.EmptyWordBoundary != 0 && !boundary {
		return false
	}
	if op&syntax.EmptyNoWordBoundary != 0 && boundary {
		return false
	}
	return true
}

// lowestFree returns the lowest id in MinVMID..MaxVMID that matches and is not used. Shorter
// ids are smaller, and within a length digits are tried in ascending order, so the first free
// match found is the lowest. Only prefixes of matching ids are visited, and a prefix whose ids
// are all used is skipped whole: the cost never grows with the size of the id space.
func (dfa *digitDFA) lowestFree(used scheduler.IDSet) (int, bool) {
	for length := minDigits; length <= maxDigits; length++ {
		if id, ok := dfa.search(0, length, 0, used); ok {
			return id, true
		}
	}
	return 0, false
}

func (dfa *digitDFA) search(s int32, remaining, prefix int, used scheduler.IDSet) (int, bool) {
	first := 0
	if prefix == 0 {
		first = 1 // no leading zeros
	}
	span := pow10[remaining-1] // ids sharing the prefix extended by one digit
	for d := first; d <= 9; d++ {
		n := dfa.next[s][d]
		if n < 0 || !dfa.live[n][remaining-1] {
			continue
		}
		id := prefix*10 + d
		if used.AllTaken(id*span, id*span+span-1) {
			continue
		}
		if remaining == 1 {
			return id, true
		}
		if found, ok := dfa.search(n, remaining-1, id, used); ok {
			return found, true
		}
	}
	return 0, false
}

var pow10 = [maxDigits]int{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000}

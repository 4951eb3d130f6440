package nodelabels

import (
	"fmt"
	"sort"
	"strings"
)

// Built-in label and taint keys; the prefix is reserved for them.
const (
	ReservedPrefix   = "node.qemu-scheduler/"
	LabelName        = ReservedPrefix + "name"
	LabelArch        = ReservedPrefix + "arch"
	TaintMaintenance = ReservedPrefix + "maintenance"
	TaintHAFenced    = ReservedPrefix + "ha-fenced"
)

// The two Notes line formats, and the prefix a line of this provider starts with.
const (
	NotesLabels = "qemu-scheduler/labels:"
	NotesTaints = "qemu-scheduler/taints:"
	notesPrefix = "qemu-scheduler/"
)

// ValidateUserKey is ValidateKey for keys people write (node blocks, Notes): the built-in
// prefix is refused so that nobody can fake a node's name, arch or HA state.
func ValidateUserKey(key string) error {
	if strings.HasPrefix(key, ReservedPrefix) {
		return fmt.Errorf("key %q uses the prefix %s, which is reserved for the built-in labels and taints; choose another key", key, ReservedPrefix)
	}
	return ValidateKey(key)
}

// Set is the labels and taints from one source.
type Set struct {
	Labels map[string]string
	Taints []Taint
}

// ParseNotes reads the qemu-scheduler lines of a node's Notes:
//
//	qemu-scheduler/labels: zone=a, disk=nvme
//	qemu-scheduler/taints: dedicated=db:NoSchedule, old-hw:PreferNoSchedule
//
// each on a line of its own, leading spaces and a leading "- " allowed; lines not starting with
// qemu-scheduler/ are ignored. Any other qemu-scheduler/ line (a typo such as
// "qemu-scheduler/taint:") is ignored with a warning naming the known keys, so that a typo
// cannot silently open a dedicated node to every VM. A malformed entry is skipped with a
// warning that names the node, the line and the label or taint the node goes without; the
// rest still counts.
func ParseNotes(node, notes string) (Set, []string) {
	set := Set{Labels: map[string]string{}}
	var warnings []string
	// skips are the skipped entries, each with the index of its warning: what the node goes
	// without is known only once every line is read (another entry may give the same key).
	type skip struct {
		warning int
		entry   string
		label   bool
	}
	var skips []skip
	for i, line := range strings.Split(notes, "\n") {
		text := strings.TrimSpace(line)
		if rest, listed := strings.CutPrefix(text, "- "); listed {
			text = strings.TrimSpace(rest)
		}
		rest, isLabels := strings.CutPrefix(text, NotesLabels)
		isTaints := false
		if !isLabels {
			if rest, isTaints = strings.CutPrefix(text, NotesTaints); !isTaints {
				if len(text) >= len(notesPrefix) && strings.EqualFold(text[:len(notesPrefix)], notesPrefix) {
					warnings = append(warnings, unknownNotesKey(node, i+1, strings.TrimSpace(line), notesKey(text)))
				}
				continue
			}
		}
		for _, entry := range strings.Split(rest, ",") {
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			var err error
			if isLabels {
				err = addLabel(set.Labels, entry)
			} else {
				var t Taint
				if t, err = ParseUserTaint(entry); err == nil {
					set.Taints = append(set.Taints, t)
				}
			}
			if err != nil {
				skips = append(skips, skip{len(warnings), entry, isLabels})
				warnings = append(warnings, fmt.Sprintf("node %s, Notes line %d %q: %v; the entry is skipped", node, i+1, strings.TrimSpace(line), err))
			}
		}
	}
	for _, s := range skips {
		warnings[s.warning] += loses(node, s.entry, s.label, set)
	}
	return set, warnings
}

// unknownNotesKey is the warning for a qemu-scheduler/ line of an unknown key: a known key in
// other case or without its colon is named with what the node goes without.
func unknownNotesKey(node string, line int, text, key string) string {
	switch {
	case strings.EqualFold(key+":", NotesLabels):
		return fmt.Sprintf("node %s, Notes line %d %q: write the key as %s (lowercase, followed by a colon); the line is ignored, so node %s has none of its labels",
			node, line, text, NotesLabels, node)
	case strings.EqualFold(key+":", NotesTaints):
		return fmt.Sprintf("node %s, Notes line %d %q: write the key as %s (lowercase, followed by a colon); the line is ignored, so node %s has none of its taints: "+
			"VMs that do not tolerate them may be placed there", node, line, text, NotesTaints, node)
	}
	return fmt.Sprintf("node %s, Notes line %d %q: unknown key %s; the known keys are %s and %s (each followed by a colon); the line is ignored",
		node, line, text, key, NotesLabels[:len(NotesLabels)-1], NotesTaints[:len(NotesTaints)-1])
}

// notesKey is the key a qemu-scheduler/ line starts with: up to its colon or first space.
func notesKey(text string) string {
	if i := strings.IndexAny(text, ": \t"); i >= 0 {
		return text[:i]
	}
	return text
}

// loses says what a node goes without when an entry is skipped: its label or taint of the key
// the entry names, when one can be read; or, when another entry of its Notes (parsed into set)
// gives that key, what the node keeps instead, since saying it goes without would be false.
func loses(node, entry string, label bool, set Set) string {
	key := entry
	if i := strings.IndexAny(entry, "=:"); i >= 0 {
		key = entry[:i]
	}
	key = strings.TrimSpace(key)
	if ValidateUserKey(key) != nil {
		return ""
	}
	if label {
		if v, ok := set.Labels[key]; ok {
			return fmt.Sprintf(", so node %s keeps the label %s=%s of another entry of its Notes", node, key, v)
		}
		return fmt.Sprintf(", so node %s has no label %s from its Notes", node, key)
	}
	var kept []string
	for _, t := range set.Taints {
		if t.Key == key {
			kept = append(kept, FormatTaint(t))
		}
	}
	if len(kept) > 0 {
		return fmt.Sprintf(", so node %s is tainted %s only by another entry of its Notes (%s)", node, key, strings.Join(kept, ", "))
	}
	return fmt.Sprintf(", so node %s is not tainted %s from its Notes: VMs that do not tolerate it may be placed there", node, key)
}

func addLabel(labels map[string]string, entry string) error {
	key, value, hasValue := strings.Cut(entry, "=")
	key, value = strings.TrimSpace(key), strings.TrimSpace(value)
	if !hasValue {
		return fmt.Errorf("label %q has no value; write key=value (the value may be empty: key=)", entry)
	}
	if err := ValidateUserKey(key); err != nil {
		return fmt.Errorf("label %w", err)
	}
	if err := ValidateValue(value); err != nil {
		return fmt.Errorf("label %q: %w", key, err)
	}
	labels[key] = value
	return nil
}

// ParseUserTaint reads a taint people wrote (key[=value]:Effect) and refuses built-in keys.
func ParseUserTaint(s string) (Taint, error) {
	t, err := ParseTaint(s)
	if err != nil {
		return Taint{}, err
	}
	if err := ValidateUserKey(t.Key); err != nil {
		return Taint{}, fmt.Errorf("taint %w", err)
	}
	return t, nil
}

// Facts are what PVE tells about a node that the built-ins come from.
type Facts struct {
	Name string
	// Arch is host-arch, "" when PVE does not report it.
	Arch string
	// HAState is the node row's hastate, "" when HA never ran.
	HAState string
}

// Compose gives a node its final labels and taints: the Notes, overridden per key by the
// provider's node block, plus the built-ins. Taints come out sorted, one per key and effect.
func Compose(f Facts, block, notes Set) Set {
	out := Set{Labels: map[string]string{}}
	for k, v := range notes.Labels {
		out.Labels[k] = v
	}
	for k, v := range block.Labels {
		out.Labels[k] = v
	}
	out.Labels[LabelName] = f.Name
	if f.Arch != "" {
		out.Labels[LabelArch] = f.Arch
	}
	blockKeys := map[string]bool{}
	for _, t := range block.Taints {
		blockKeys[t.Key] = true
	}
	taints := map[[2]string]Taint{}
	add := func(t Taint) { taints[[2]string{t.Key, t.Effect}] = t }
	for _, t := range notes.Taints {
		if !blockKeys[t.Key] {
			add(t)
		}
	}
	for _, t := range block.Taints {
		add(t)
	}
	switch f.HAState {
	case "maintenance":
		add(Taint{Key: TaintMaintenance, Effect: NoSchedule})
	case "fence", "gone":
		add(Taint{Key: TaintHAFenced, Effect: NoSchedule})
	}
	for _, t := range taints {
		out.Taints = append(out.Taints, t)
	}
	sort.Slice(out.Taints, func(i, j int) bool {
		a, b := out.Taints[i], out.Taints[j]
		if a.Key != b.Key {
			return a.Key < b.Key
		}
		return a.Effect < b.Effect
	})
	return out
}

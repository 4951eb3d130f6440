// Package nodelabels gives Proxmox VE nodes Kubernetes-style labels and taints: the syntax of
// keys, values and taints, the qemu-scheduler lines of a node's Notes, how the provider's
// node blocks and the Notes merge, and the built-in labels and taints every node carries. It
// is pure: the provider reads the inputs, the scheduler's plugins read the result.
package nodelabels

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Taint effects. NoExecute is accepted and treated as NoSchedule at placement.
const (
	NoSchedule       = "NoSchedule"
	PreferNoSchedule = "PreferNoSchedule"
	NoExecute        = "NoExecute"
)

// Effects lists the valid taint effects.
var Effects = []string{NoSchedule, PreferNoSchedule, NoExecute}

const (
	maxNameLen   = 63
	maxPrefixLen = 253
)

var (
	namePattern   = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	prefixPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// ValidateKey checks a label or taint key: an optional DNS subdomain prefix and "/", then a
// name of at most 63 characters [A-Za-z0-9._-] that starts and ends alphanumeric (Kubernetes'
// qualified name).
func ValidateKey(key string) error {
	prefix, name, hasPrefix := strings.Cut(key, "/")
	if !hasPrefix {
		name, prefix = prefix, ""
	}
	switch {
	case key == "":
		return fmt.Errorf("key is empty")
	case hasPrefix && prefix == "":
		return fmt.Errorf("key %q has an empty prefix before /", key)
	case hasPrefix && (len(prefix) > maxPrefixLen || !prefixPattern.MatchString(prefix)):
		return fmt.Errorf("key %q: the prefix %q must be a lowercase DNS subdomain (a-z, 0-9, - and ., at most %d characters)", key, prefix, maxPrefixLen)
	case strings.Contains(name, "/"):
		return fmt.Errorf("key %q has more than one /", key)
	}
	if err := checkName(name); err != nil {
		return fmt.Errorf("key %q: the name %w", key, err)
	}
	return nil
}

// ValidateValue checks a label value: empty, or at most 63 characters [A-Za-z0-9._-] that
// start and end alphanumeric.
func ValidateValue(value string) error {
	if value == "" {
		return nil
	}
	if err := checkName(value); err != nil {
		return fmt.Errorf("value %q %w", value, err)
	}
	return nil
}

func checkName(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("is empty")
	case len(s) > maxNameLen:
		return fmt.Errorf("is %d characters long, at most %d are allowed", len(s), maxNameLen)
	case !namePattern.MatchString(s):
		return fmt.Errorf("may hold only A-Z, a-z, 0-9, '-', '_' and '.', and must start and end with a letter or digit")
	}
	return nil
}

// Taint is the scheduler's: a node property that repels VMs not tolerating it.
type Taint = scheduler.Taint

// FormatTaint writes a taint as ParseTaint reads it: key[=value]:Effect.
func FormatTaint(t Taint) string {
	if t.Value == "" {
		return t.Key + ":" + t.Effect
	}
	return t.Key + "=" + t.Value + ":" + t.Effect
}

// ParseTaint reads key[=value]:Effect, e.g. "dedicated=db:NoSchedule" or
// "old-hw:PreferNoSchedule".
func ParseTaint(s string) (Taint, error) {
	spec, effect, hasEffect := cutLast(s, ":")
	if !hasEffect || effect == "" {
		return Taint{}, fmt.Errorf("taint %q has no effect; write key[=value]:Effect with Effect one of %s", s, strings.Join(Effects, ", "))
	}
	if !validEffect(effect) {
		return Taint{}, fmt.Errorf("taint %q has effect %q; use one of %s", s, effect, strings.Join(Effects, ", "))
	}
	key, value, _ := strings.Cut(spec, "=")
	if err := ValidateKey(key); err != nil {
		return Taint{}, fmt.Errorf("taint %q: %w", s, err)
	}
	if err := ValidateValue(value); err != nil {
		return Taint{}, fmt.Errorf("taint %q: %w", s, err)
	}
	return Taint{Key: key, Value: value, Effect: effect}, nil
}

func validEffect(e string) bool {
	for _, v := range Effects {
		if e == v {
			return true
		}
	}
	return false
}

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

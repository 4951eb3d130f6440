package pvesim

// PVE checks every parameter against a JSON schema (pve-common's PVE::JSONSchema), and the
// values of many qemu keys are property strings ("virtio=..,bridge=vmbr0,tag=10") checked key
// by key against their own schema. This file does the same checks, in the same order and with
// the same messages, so a request real PVE refuses is refused here too.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ptype is a JSON schema type.
type ptype int

const (
	tString ptype = iota
	tInteger
	tNumber
	tBoolean
)

// prop is one property's schema: what check_prop looks at.
type prop struct {
	typ        ptype
	required   bool
	enum       []string
	min, max   *float64
	pattern    *regexp.Regexp // anchored at both ends, as PVE matches ^$pattern$
	maxLength  int
	check      func(string) string // a named format's verifier: "" or its die message
	format     *propFormat         // a property string format
	defaultKey bool
	// alias names the property this key stands for; keyAlias, when set, stores the key itself
	// there (net0's "virtio=MAC" is model=virtio, macaddr=MAC).
	alias, keyAlias string
	// requires names a property that must be set along with this one.
	requires string
}

// propFormat is a property string's schema, with the named format's validator if it has one.
type propFormat struct {
	props    map[string]prop
	validate func(parsed map[string]string) string
}

func strProp() prop                              { return prop{typ: tString} }
func boolProp() prop                             { return prop{typ: tBoolean} }
func numProp() prop                              { return prop{typ: tNumber} }
func enumProp(values ...string) prop             { return prop{typ: tString, enum: values} }
func intProp() prop                              { return prop{typ: tInteger} }
func subProp(f *propFormat) prop                 { return prop{typ: tString, format: f} }
func checkedProp(check func(string) string) prop { return prop{typ: tString, check: check} }
func patternProp(pattern string) prop {
	return prop{typ: tString, pattern: regexp.MustCompile(`^(?:` + pattern + `)$`)}
}
func aliasOf(target string) prop { return prop{alias: target} }

func (p prop) atLeast(v float64) prop      { p.min = &v; return p }
func (p prop) atMost(v float64) prop       { p.max = &v; return p }
func (p prop) between(lo, hi float64) prop { return p.atLeast(lo).atMost(hi) }
func (p prop) req() prop                   { p.required = true; return p }
func (p prop) dflt() prop                  { p.defaultKey = true; return p }
func (p prop) maxLen(n int) prop           { p.maxLength = n; return p }
func (p prop) needs(key string) prop       { p.requires = key; return p }

var (
	integerText = regexp.MustCompile(`^[+-]?\d+$`)
	numberText  = regexp.MustCompile(`^[+-]?(\d+\.\d+|\d+\.|\.\d+|\d+)([eE][+-]?\d+)?$`)
)

// checkProp is check_prop for a scalar value at path (e.g. net0, or net0.tag within a
// property string): type, format, pattern, length, range, enum, in that order, the first
// failure reported. It returns "" or PVE's message.
func checkProp(v string, p prop, path string) string {
	switch p.typ {
	case tInteger:
		if !integerText.MatchString(v) {
			return fmt.Sprintf("type check ('integer') failed - got '%s'", v)
		}
	case tNumber:
		if !numberText.MatchString(v) {
			return fmt.Sprintf("type check ('number') failed - got '%s'", v)
		}
	case tBoolean:
		if v != "0" && v != "1" {
			return fmt.Sprintf("type check ('boolean') failed - got '%s'", v)
		}
	}
	if p.format != nil {
		if _, msg := parsePropertyString(p.format, v, path); msg != "" {
			return "invalid format - " + msg
		}
	}
	if p.check != nil {
		if msg := p.check(v); msg != "" {
			return "invalid format - " + msg
		}
	}
	if p.pattern != nil && !p.pattern.MatchString(v) {
		return "value does not match the regex pattern"
	}
	if p.maxLength > 0 && len(v) > p.maxLength {
		return fmt.Sprintf("value may only be %d characters long", p.maxLength)
	}
	if numberText.MatchString(v) {
		f, _ := strconv.ParseFloat(v, 64)
		if p.max != nil && f > *p.max {
			return "value must have a maximum value of " + formatNumber(*p.max)
		}
		if p.min != nil && f < *p.min {
			return "value must have a minimum value of " + formatNumber(*p.min)
		}
	}
	if len(p.enum) > 0 && !contains(p.enum, v) {
		return fmt.Sprintf("value '%s' does not have a value in the enumeration '%s'", v, strings.Join(p.enum, ", "))
	}
	return ""
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// parsePropertyString is parse_property_string: it splits value on commas, maps aliases,
// reads booleans, checks every property, and returns the parsed keys or the message PVE dies
// with. path prefixes the property names in a "format error" (e.g. net0).
func parsePropertyString(f *propFormat, value, path string) (map[string]string, string) {
	res := map[string]string{}
	defaultKey := ""
	for _, part := range strings.Split(value, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, v, hasEq := strings.Cut(part, "=")
		switch {
		case hasEq && k != "" && v != "":
			if _, dup := res[k]; dup {
				return nil, "duplicate key in comma-separated list property: " + k
			}
			p, known := f.props[k]
			if known && p.alias != "" {
				if p.keyAlias != "" {
					if _, dup := res[p.keyAlias]; dup {
						return nil, fmt.Sprintf("key alias '%s' is already defined", p.keyAlias)
					}
					res[p.keyAlias] = k
				}
				k = p.alias
				p, known = f.props[k]
				if _, dup := res[k]; dup {
					return nil, fmt.Sprintf("key '%s' is already defined (via alias)", k)
				}
			}
			if !known {
				return nil, "invalid key in comma-separated list property: " + k
			}
			if p.typ == tBoolean {
				v = normBool(v)
			}
			res[k] = v
		case !hasEq:
			if defaultKey != "" {
				return nil, "duplicate key in comma-separated list property: " + defaultKey
			}
			for name, p := range f.props {
				if !p.defaultKey {
					continue
				}
				defaultKey = name
				if _, set := res[name]; set {
					return nil, "duplicate key in comma-separated list property: " + name
				}
				if p.typ == tBoolean {
					part = normBool(part)
				}
				res[name] = part
			}
			if defaultKey == "" {
				return nil, "value without key, but schema does not define a default key"
			}
		default:
			return nil, "missing key in comma-separated list property"
		}
	}
	errs := map[string]string{}
	at := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	for k, p := range f.props {
		if p.alias != "" {
			continue
		}
		v, set := res[k]
		switch {
		case !set && p.required:
			errs[at(k)] = "property is missing and it is not optional"
		case set:
			if msg := checkProp(v, p, at(k)); msg != "" {
				errs[at(k)] = msg
			}
			if p.requires != "" {
				if _, ok := res[p.requires]; !ok {
					errs[at(p.requires)] = fmt.Sprintf("missing property required by '%s'", at(k))
				}
			}
		}
	}
	if len(errs) > 0 {
		var b strings.Builder
		b.WriteString("format error")
		for _, k := range sortedKeys(errs) {
			fmt.Fprintf(&b, "\n%s: %s", k, errs[k])
		}
		return nil, b.String()
	}
	if f.validate != nil {
		if msg := f.validate(res); msg != "" {
			return nil, msg
		}
	}
	return res, ""
}

// printPropertyString is print_property_string, as PVE writes drives and NICs back: the
// default key first (joined with its key alias, as in virtio=MAC), then the required keys,
// then the rest, each group sorted.
func printPropertyString(f *propFormat, res map[string]string) string {
	var parts []string
	done := map[string]bool{}
	add := func(k string, asDefault bool) {
		v, set := res[k]
		if done[k] || !set {
			return
		}
		done[k] = true
		for name, p := range f.props {
			// the key alias: model=virtio with macaddr prints as virtio=MAC
			if p.keyAlias == k && name == v && p.alias != "" {
				if mac, ok := res[p.alias]; ok {
					parts = append(parts, v+"="+mac)
					done[p.alias] = true
					return
				}
			}
		}
		if asDefault {
			parts = append(parts, v)
			return
		}
		parts = append(parts, k+"="+v)
	}
	keys := sortedKeys(res)
	for k, p := range f.props {
		if p.defaultKey {
			add(k, true)
		}
	}
	for _, k := range keys {
		if f.props[k].required {
			add(k, false)
		}
	}
	for _, k := range keys {
		add(k, false)
	}
	return strings.Join(parts, ",")
}

// checkTyped checks parameter k of p against its schema pr, normalising a boolean to 0 or 1
// in place as PVE's parameter check does; the problem, or "".
func checkTyped(p map[string]string, k string, pr prop) string {
	if pr.typ == tBoolean {
		p[k] = normBool(p[k])
	}
	return checkProp(p[k], pr, k)
}

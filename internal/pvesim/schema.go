package pvesim

import (
	"regexp"
	"slices"
	"strings"
)

// kind is a config key's JSON type in a config GET (qemu-server's check_type: integer and
// boolean become numbers, every other type, memory and cpulimit included, a string).
type kind int

const (
	kString kind = iota
	kInt
	kBool
)

func keyKind(key string) (kind, bool) {
	p, known := keyProp(key)
	switch {
	case !known:
		return kString, false
	case p.typ == tInteger:
		return kInt, true
	case p.typ == tBoolean:
		return kBool, true
	}
	return kString, true
}

// pve9Keys are config keys qemu-server added after 8.2.1 (PVE 8.2.4), which PVE 8.2's schema
// does not define: amd-sev (qemu-server 8.2.6), virtiofsN (8.3.10), running-nets-host-mtu
// (9.0.19), intel-tdx and allow-ksm (9.0.26 on). pve9DriveKeys are such options of drives:
// efidisk0's ms-cert (9.0.26 on).
var (
	pve9Keys      = regexp.MustCompile(`^(amd-sev|virtiofs\d+|running-nets-host-mtu|intel-tdx|allow-ksm)$`)
	pve9DriveKeys = []string{"ms-cert"}
)

// optionExists is qemu-server's option_exists on release v: a config key of its schema.
func optionExists(key string, v versionInfo) bool {
	_, known := keyProp(key)
	return known && (v.major >= 9 || !pve9Keys.MatchString(key))
}

// checkConfig validates config keys and values as release v's schema does, property strings
// key by key, and returns the values as they are stored: booleans as 0/1. problems maps each
// bad key to PVE's message.
func checkConfig(set map[string]string, release versionInfo) (clean map[string]string, problems map[string]string) {
	clean, problems = map[string]string{}, map[string]string{}
	for k, v := range set {
		p, known := keyProp(k)
		if !known || !optionExists(k, release) {
			problems[k] = "property is not defined in schema and the schema does not allow additional properties"
			continue
		}
		if p.typ == tBoolean {
			// The simulator reads form booleans leniently, as JSON clients send true/false.
			v = normBool(v)
		}
		if msg := checkProp(v, p, k); msg != "" {
			problems[k] = msg
			continue
		}
		if f := driveFormatOf(k); f != nil && release.major < 9 {
			d, _ := parsePropertyString(f, v, k)
			if i := slices.IndexFunc(pve9DriveKeys, func(o string) bool { _, set := d[o]; return set }); i >= 0 {
				problems[k] = "invalid format - invalid key in comma-separated list property: " + pve9DriveKeys[i]
				continue
			}
		}
		clean[k] = v
	}
	return clean, problems
}

func boolString(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// parseBool reads a boolean the way the simulator accepts them: 1/0, true/false, yes/no,
// on/off (PVE itself takes true/false only from JSON bodies).
func parseBool(v string) (bool, bool) {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true, true
	case "0", "false", "no", "off":
		return false, true
	}
	return false, false
}

// normBool writes a readable boolean as 1 or 0, as parse_boolean does in property strings,
// and leaves anything else for the type check to refuse.
func normBool(v string) string {
	if b, ok := parseBool(v); ok {
		return boolString(b)
	}
	return v
}

// boolParam reads an optional boolean call parameter; anything unreadable is false.
func boolParam(v string) bool {
	b, _ := parseBool(v)
	return b
}

// checkParams refuses call parameters outside allowed, with PVE's 400 message: the problems by
// parameter, empty when there are none, for the caller to add its own checks to.
func checkParams(p map[string]string, allowed ...string) map[string]string {
	problems := map[string]string{}
	for k := range p {
		if !contains(allowed, k) {
			problems[k] = "property is not defined in schema and the schema does not allow additional properties"
		}
	}
	return problems
}

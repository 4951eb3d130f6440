package pvesim

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// kind is a config key's schema type, which decides both validation and the JSON type a
// config GET renders (qemu-server's check_type: integer and boolean become numbers, every
// other type, memory and cpulimit included, a string).
type kind int

const (
	kString kind = iota
	kInt
	kBool
)

// qemuKeys is the part of qemu-server's config schema the simulator knows. A key outside it
// is refused with PVE's 400, so a client typo shows up in tests instead of being stored.
var qemuKeys = map[string]kind{
	"acpi": kBool, "affinity": kString, "agent": kString, "allow-ksm": kBool, "amd-sev": kString,
	"arch": kString, "args": kString, "audio0": kString, "autostart": kBool, "balloon": kInt,
	"bios": kString, "boot": kString, "bootdisk": kString, "cdrom": kString, "cicustom": kString,
	"cipassword": kString, "citype": kString, "ciupgrade": kBool, "ciuser": kString, "cores": kInt,
	"cpu": kString, "cpulimit": kString, "cpuunits": kInt, "description": kString, "efidisk0": kString,
	"freeze": kBool, "hookscript": kString, "hotplug": kString, "hugepages": kString, "import-working-storage": kString,
	"intel-tdx": kString, "ivshmem": kString, "keephugepages": kBool, "keyboard": kString, "kvm": kBool,
	"localtime": kBool, "lock": kString, "machine": kString, "memory": kString, "meta": kString,
	"migrate_downtime": kString, "migrate_speed": kInt, "name": kString, "nameserver": kString,
	"numa": kBool, "onboot": kBool, "ostype": kString, "protection": kBool, "reboot": kBool,
	"rng0": kString, "scsihw": kString, "searchdomain": kString, "shares": kInt, "smbios1": kString, "smp": kInt,
	"sockets": kInt, "spice_enhancements": kString, "sshkeys": kString, "startdate": kString,
	"startup": kString, "tablet": kBool, "tags": kString, "tdf": kBool, "template": kBool,
	"tpmstate0": kString, "vcpus": kInt, "vga": kString, "vmgenid": kString,
	"vmstatestorage": kString, "watchdog": kString,
}

// indexedKey matches the numbered device keys (net0, scsi12, ipconfig3, unused0, ...), within
// PVE's limits per bus.
var indexedKey = regexp.MustCompile(`^(net|ipconfig|scsi|virtio|sata|ide|unused|serial|usb|hostpci|numa|parallel|virtiofs)(\d+)$`)

var indexLimit = map[string]int{"net": 31, "ipconfig": 31, "scsi": 30, "virtio": 15, "sata": 5, "ide": 3,
	"unused": 255, "serial": 3, "usb": 29, "hostpci": 15, "numa": 7, "parallel": 2, "virtiofs": 9}

func keyKind(key string) (kind, bool) {
	if k, ok := qemuKeys[key]; ok {
		return k, true
	}
	m := indexedKey.FindStringSubmatch(key)
	if m == nil {
		return kString, false
	}
	i, _ := strconv.Atoi(m[2])
	return kString, i <= indexLimit[m[1]] && strconv.Itoa(i) == m[2]
}

// minimums are the schema minimums the simulator enforces.
var minimums = map[string]int{"cores": 1, "sockets": 1, "vcpus": 1, "balloon": 0, "cpuunits": 1, "shares": 0}

var (
	dnsName    = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)
	memoryRe   = regexp.MustCompile(`^(?:current=)?(\d+)$`)
	tagPattern = regexp.MustCompile(`^(?i)[a-z0-9_][a-z0-9_\-+.]*$`)
	// urlEncoded is PVE's urlencoded format (sshkeys): spaces as %20, + / = escaped.
	urlEncoded = regexp.MustCompile(`^[-%a-zA-Z0-9_.!~*'()]*$`)
)

// checkConfig validates config keys and values as PVE's schema would, and returns the values
// as they are stored: booleans as 0/1. problems maps each bad key to PVE's message.
func checkConfig(set map[string]string) (clean map[string]string, problems map[string]string) {
	clean, problems = map[string]string{}, map[string]string{}
	for k, v := range set {
		kd, known := keyKind(k)
		if !known {
			problems[k] = "property is not defined in schema and the schema does not allow additional properties"
			continue
		}
		switch kd {
		case kInt:
			n, err := strconv.Atoi(v)
			if err != nil {
				problems[k] = fmt.Sprintf("type check ('integer') failed - got '%s'", v)
				continue
			}
			if lo, ok := minimums[k]; ok && n < lo {
				problems[k] = fmt.Sprintf("value must have a minimum value of %d", lo)
				continue
			}
		case kBool:
			b, ok := parseBool(v)
			if !ok {
				problems[k] = fmt.Sprintf("type check ('boolean') failed - got '%s'", v)
				continue
			}
			v = "0"
			if b {
				v = "1"
			}
		}
		if msg := checkValue(k, v); msg != "" {
			problems[k] = msg
			continue
		}
		clean[k] = v
	}
	return clean, problems
}

// checkValue covers the string formats clients commonly get wrong.
func checkValue(k, v string) string {
	switch k {
	case "name":
		if !dnsName.MatchString(v) {
			return "invalid format - value does not look like a valid DNS name"
		}
	case "memory":
		m := memoryRe.FindStringSubmatch(v)
		if m == nil {
			return fmt.Sprintf("invalid format - format error current: type check ('integer') failed - got '%s'", v)
		}
		if n, _ := strconv.Atoi(m[1]); n < 16 {
			return "invalid format - format error current: value must have a minimum value of 16"
		}
	case "tags":
		for _, t := range strings.Split(normalizeTags(v), ";") {
			if t != "" && !tagPattern.MatchString(t) {
				return fmt.Sprintf("invalid format - invalid characters in tag '%s'", t)
			}
		}
	case "sshkeys":
		if !urlEncoded.MatchString(v) {
			return "invalid format - invalid urlencoded string: " + v
		}
	}
	return ""
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

// boolParam reads an optional boolean call parameter; anything unreadable is false.
func boolParam(v string) bool {
	b, _ := parseBool(v)
	return b
}

// checkParams refuses call parameters outside allowed, with PVE's 400 message.
func checkParams(p map[string]string, allowed ...string) map[string]string {
	problems := map[string]string{}
	for k := range p {
		if !contains(allowed, k) {
			problems[k] = "property is not defined in schema and the schema does not allow additional properties"
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return problems
}

package pvesim

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math/rand"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

const (
	gib = 1 << 30
	mib = 1 << 20
)

type node struct {
	name      string
	cpus      int
	maxmem    uint64
	baseCPU   float64
	baseMem   uint64
	online    bool
	storages  []*storage
	diskCount map[string]int // per storage: next disk number, for unique volume names
}

type storage struct {
	name     string
	typ      string
	content  []string
	shared   bool
	total    uint64
	used     uint64
	inactive bool
}

type guest struct {
	vmid     int
	node     string
	typ      string // qemu or lxc
	status   string
	lock     string
	pool     string
	config   map[string]string
	hasStats bool // false until the next stats tick when stats lag is simulated
}

func (g *guest) template() bool { return g.config["template"] == "1" }

func (g *guest) name() string {
	if n := g.config["name"]; n != "" {
		return n
	}
	if g.typ == "lxc" {
		return "CT" + strconv.Itoa(g.vmid)
	}
	return "VM " + strconv.Itoa(g.vmid)
}

func (g *guest) vcpus() int {
	if v := atoi(g.config["vcpus"]); v > 0 {
		return v
	}
	return max(atoi(g.config["cores"]), 1) * max(atoi(g.config["sockets"]), 1)
}

func (g *guest) memoryBytes() uint64 {
	m := atoi(strings.TrimPrefix(g.config["memory"], "current="))
	if m == 0 {
		m = 512
	}
	return uint64(m) * mib
}

// digest is the SHA-1 of the serialized config, as PVE computes it over the config file.
func (g *guest) digest() string {
	keys := make([]string, 0, len(g.config))
	for k := range g.config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha1.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s: %s\n", k, g.config[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// numericConfigKeys are rendered as JSON numbers in config GETs (PVE's integer and boolean
// schema types); every other key, memory included, is a string.
var numericConfigKeys = map[string]bool{
	"cores": true, "sockets": true, "vcpus": true, "balloon": true, "onboot": true, "template": true,
	"numa": true, "protection": true, "cpuunits": true, "tablet": true, "acpi": true, "kvm": true,
	"localtime": true, "reboot": true, "shares": true,
}

func (g *guest) configJSON() map[string]any {
	out := make(map[string]any, len(g.config)+1)
	for k, v := range g.config {
		if numericConfigKeys[k] {
			if n, err := strconv.Atoi(v); err == nil {
				out[k] = n
				continue
			}
		}
		if k == "cipassword" {
			out[k] = "**********"
			continue
		}
		out[k] = v
	}
	out["digest"] = g.digest()
	return out
}

var diskKey = regexp.MustCompile(`^(scsi|virtio|sata|ide)\d+$`)

// disks returns the guest's disk keys (cd-roms excluded), sorted.
func (g *guest) disks() []string {
	var keys []string
	for k, v := range g.config {
		if diskKey.MatchString(k) && !strings.Contains(v, "media=cdrom") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// normalizeTags does what PVE does on write: split on ; , and spaces, lowercase, sort,
// de-duplicate, join with ;.
func normalizeTags(s string) string {
	seen := map[string]bool{}
	var tags []string
	for _, t := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' || r == ' ' }) {
		t = strings.ToLower(t)
		if !seen[t] {
			seen[t] = true
			tags = append(tags, t)
		}
	}
	sort.Strings(tags)
	return strings.Join(tags, ";")
}

var tagPattern = regexp.MustCompile(`^[a-z0-9_][a-z0-9_\-+.]*$`)

func randomMAC(rng *rand.Rand) string {
	return fmt.Sprintf("BC:24:11:%02X:%02X:%02X", rng.Intn(256), rng.Intn(256), rng.Intn(256))
}

// withMAC gives a net device string a MAC when it has none ("virtio,bridge=vmbr0" becomes
// "virtio=BC:24:11:..,bridge=vmbr0"), or a new one when fresh is set (clones).
func withMAC(value string, rng *rand.Rand, fresh bool) string {
	parts := strings.Split(value, ",")
	model, mac, hasMAC := strings.Cut(parts[0], "=")
	if hasMAC && !fresh && mac != "" {
		return value
	}
	parts[0] = model + "=" + randomMAC(rng)
	return strings.Join(parts, ",")
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// sizeGiB reads "size=32G" (or M/T) out of a disk string, in GiB.
func sizeGiB(disk string) float64 {
	for _, p := range strings.Split(disk, ",") {
		if v, ok := strings.CutPrefix(p, "size="); ok {
			return parseSize(v)
		}
	}
	return 0
}

// parseSize reads PVE sizes: 32G, 512M, 1T, 1024K, or plain bytes... in GiB.
func parseSize(v string) float64 {
	if v == "" {
		return 0
	}
	unit := v[len(v)-1]
	num, err := strconv.ParseFloat(strings.TrimRight(v, "KMGT"), 64)
	if err != nil {
		return 0
	}
	switch unit {
	case 'K':
		return num / (1 << 20)
	case 'M':
		return num / 1024
	case 'G':
		return num
	case 'T':
		return num * 1024
	}
	return num / gib
}

func formatSize(g float64) string {
	if g == float64(int64(g)) {
		return strconv.FormatInt(int64(g), 10) + "G"
	}
	return strconv.FormatInt(int64(g*1024), 10) + "M"
}

func setDiskSize(disk string, g float64) string {
	parts := strings.Split(disk, ",")
	for i, p := range parts {
		if strings.HasPrefix(p, "size=") {
			parts[i] = "size=" + formatSize(g)
			return strings.Join(parts, ",")
		}
	}
	return disk + ",size=" + formatSize(g)
}

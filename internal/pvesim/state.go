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
	name     string
	cpus     int
	maxmem   uint64
	baseCPU  float64
	baseMem  uint64
	online   bool
	storages []*storage // a shared storage is the same object on every node
	arch     string     // host-arch, "" when not reported
	haState  string     // HA node state; "" follows online (online or unknown)
	config   map[string]string
}

type storage struct {
	name     string
	typ      string
	content  []string
	shared   bool
	total    uint64
	used     uint64
	inactive bool
	volumes  map[string]volumeSize // volume name (vm-100-disk-0) -> its size
	snippets map[string]int        // snippets directory: file name -> size in bytes
	files    map[string]storedFile // iso, vztmpl and import files by volume name (iso/x.iso)
}

// volumeSize is a volume's virtual size and the space it takes on its storage: both the same
// for a full volume, used 0 for a linked clone's (its blocks are the base volume's).
type volumeSize struct {
	size, used uint64
	// base is the volume a linked clone's volume is layered on ("" for a full volume): while
	// one exists, pve-storage refuses to free the base (volume_is_base_and_used).
	base string
}

// alloc creates or resizes a full volume, counting the space it takes.
func (st *storage) alloc(vol string, bytes uint64) { st.put(vol, volumeSize{size: bytes, used: bytes}) }

// put records a volume, counting the space it takes.
func (st *storage) put(vol string, v volumeSize) {
	st.free(vol)
	st.volumes[vol] = v
	st.used += v.used
}

// baseInUse tells whether a linked clone's volume on st is layered on base.
func (st *storage) baseInUse(base string) bool {
	for _, v := range st.volumes {
		if v.base == base {
			return true
		}
	}
	return false
}

// free destroys a volume, if it exists.
func (st *storage) free(vol string) {
	if v, ok := st.volumes[vol]; ok {
		st.used -= min(st.used, v.used)
		delete(st.volumes, vol)
	}
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
	// clones counts clones running from this guest: they hold its config lock, so changes to
	// it wait and time out as in PVE.
	clones int
	// pending holds changes waiting for the next start (see pending.go).
	pending map[string]string
	// agentCalls counts guest agent calls since the last start (see agent.go).
	agentCalls int
	// live is its load while it runs, when set (SetGuestLoad); see liveUsage.
	live *guestLoad
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
	return g.maxcpus()
}

// maxcpus is sockets x cores, the vCPUs the VM may hotplug up to (qemu-server's maxcpus).
func (g *guest) maxcpus() int {
	return max(atoi(g.config["cores"]), 1) * max(atoi(g.config["sockets"]), 1)
}

func (g *guest) memoryBytes() uint64 {
	m := atoi(strings.TrimPrefix(g.config["memory"], "current="))
	if m == 0 {
		m = 512
	}
	return uint64(m) * mib
}

// digest is the SHA-1 of the serialized config (lock included), as PVE computes it over the
// config file.
func (g *guest) digest() string {
	h := sha1.New()
	for _, k := range sortedKeys(g.config) {
		fmt.Fprintf(h, "%s: %s\n", k, g.config[k])
	}
	if g.lock != "" {
		fmt.Fprintf(h, "lock: %s\n", g.lock)
	}
	for _, k := range sortedKeys(g.pending) {
		fmt.Fprintf(h, "[PENDING] %s: %q\n", k, g.pending[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// configJSON renders a config GET: the config with pending values applied (the running one
// when current), plus lock and digest.
func (g *guest) configJSON(current bool) map[string]any {
	cfg := g.view()
	if current {
		cfg = g.config
	}
	out := renderConfig(cfg)
	if g.lock != "" {
		out["lock"] = g.lock
	}
	out["digest"] = g.digest()
	return out
}

// renderConfig gives config values their JSON types: integer and boolean keys as numbers,
// everything else (memory and agent included) as strings; cipassword masked.
func renderConfig(cfg map[string]string) map[string]any {
	out := make(map[string]any, len(cfg)+2)
	for k, v := range cfg {
		if kd, _ := keyKind(k); kd != kString {
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
	return out
}

var (
	diskKey   = regexp.MustCompile(`^(scsi|virtio|sata|ide)\d+$`)
	volumeKey = regexp.MustCompile(`^((scsi|virtio|sata|ide|unused)\d+|efidisk0|tpmstate0)$`)
)

// disks returns the guest's disk keys (cd-roms excluded), sorted.
func (g *guest) disks() []string {
	var keys []string
	for k, v := range g.config {
		if diskKey.MatchString(k) && !isCDROM(v) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// volumes returns every volume the guest's config references, detached (unusedN) ones
// included. Cd-roms own nothing.
func (g *guest) volumes() []volume {
	var out []volume
	for _, k := range sortedKeys(g.config) {
		if v, ok := parseVolume(g.config[k]); ok && volumeKey.MatchString(k) && !isCDROM(g.config[k]) {
			v.key = k
			out = append(out, v)
		}
	}
	return out
}

// volume is a disk in a config: "local-lvm:vm-100-disk-0,size=32G" is on storage local-lvm,
// named vm-100-disk-0.
type volume struct{ key, storage, name string }

func parseVolume(value string) (volume, bool) {
	volid, _, _ := strings.Cut(value, ",")
	st, name, ok := strings.Cut(volid, ":")
	return volume{storage: st, name: name}, ok && st != "" && name != ""
}

func isCDROM(v string) bool { return strings.Contains(v, "media=cdrom") }

// nextVolume names the guest's next disk on a storage: vm-<vmid>-disk-<n> for the lowest n
// whose vm- or base- volume (pve-storage get_next_vm_diskname counts both) is neither on the
// storage nor in the config.
func (g *guest) nextVolume(st *storage) string {
	taken := func(name string) bool {
		if _, exists := st.volumes[name]; exists {
			return true
		}
		for _, v := range g.config {
			if vol, ok := parseVolume(v); ok && vol.storage == st.name && vol.name == name {
				return true
			}
		}
		return false
	}
	for n := 0; ; n++ {
		if !taken(fmt.Sprintf("vm-%d-disk-%d", g.vmid, n)) && !taken(fmt.Sprintf("base-%d-disk-%d", g.vmid, n)) {
			return fmt.Sprintf("vm-%d-disk-%d", g.vmid, n)
		}
	}
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

func randomMAC(rng *rand.Rand) string {
	return fmt.Sprintf("BC:24:11:%02X:%02X:%02X", rng.Intn(256), rng.Intn(256), rng.Intn(256))
}

// withMAC gives a net device string a MAC when it has none, or a new one when fresh is set
// (clones), and writes it as PVE's print_net does: "virtio,bridge=vmbr0" becomes
// "virtio=BC:24:11:..,bridge=vmbr0". A value that cannot be read is kept.
func withMAC(value string, rng *rand.Rand, fresh bool) string {
	n, msg := parsePropertyString(netFormat, value, "")
	if msg != "" {
		return value
	}
	if fresh || n["macaddr"] == "" {
		n["macaddr"] = randomMAC(rng)
	}
	return printPropertyString(netFormat, n)
}

// randomUUID is a random RFC 4122 version 4 uuid, for smbios1 and vmgenid.
func randomUUID(rng *rand.Rand) string {
	b := make([]byte, 16)
	rng.Read(b)
	return formatUUID(b)
}

func formatUUID(b []byte) string {
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
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

// formatBytes is PVE's format_size: the largest unit that divides the size exactly.
func formatBytes(b uint64) string {
	for _, u := range []struct {
		suffix string
		size   uint64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if b >= u.size && b%u.size == 0 {
			return strconv.FormatUint(b/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatUint(b, 10)
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

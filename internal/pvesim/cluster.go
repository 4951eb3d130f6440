package pvesim

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Cluster is the initial state of a simulated cluster, as written in a cluster file.
type Cluster struct {
	Nodes    []NodeSpec    `yaml:"nodes" json:"nodes"`
	Storages []StorageSpec `yaml:"storages" json:"storages"`
	Guests   []GuestSpec   `yaml:"guests" json:"guests"`
	Pools    []string      `yaml:"pools" json:"pools"`
	// NextID sets datacenter.cfg next-id (lower inclusive, upper exclusive).
	NextID *NextIDSpec `yaml:"next_id" json:"next_id"`
	// HARules are PVE 9 HA rules (rules.cfg). Without the key the simulator is PVE 8, which
	// has no /cluster/ha/rules; an empty list (ha_rules: []) is PVE 9 without rules.
	HARules []HARuleSpec `yaml:"ha_rules" json:"ha_rules"`
	// CRS is datacenter.cfg's crs, the HA manager's scheduler, as PVE writes it, e.g.
	// "ha=static,ha-rebalance-on-start=1". PVE 8.2 has the basic and static schedulers and
	// ha-rebalance-on-start; PVE 9.2 adds ha=dynamic and ha-auto-rebalance with its options.
	CRS string `yaml:"crs" json:"crs"`
	// RemoteFiles are the files the simulated web serves to download-url (the simulator
	// reaches no real URL).
	RemoteFiles []RemoteFileSpec `yaml:"remote_files" json:"remote_files"`
}

// HARuleSpec is one PVE 9 HA rule as rules.cfg holds it.
type HARuleSpec struct {
	Rule string `yaml:"rule" json:"rule"`
	// Type is node-affinity or resource-affinity.
	Type string `yaml:"type" json:"type"`
	// Resources are HA resource ids, e.g. vm:100.
	Resources []string `yaml:"resources" json:"resources"`
	// Nodes are node-affinity nodes, each `name` or `name:priority`.
	Nodes    []string `yaml:"nodes" json:"nodes"`
	Strict   bool     `yaml:"strict" json:"strict"`
	Affinity string   `yaml:"affinity" json:"affinity"`
	Disable  bool     `yaml:"disable" json:"disable"`
	Comment  string   `yaml:"comment" json:"comment"`
}

// NodeSpec describes one node.
type NodeSpec struct {
	Name      string  `yaml:"name" json:"name"`
	CPUs      int     `yaml:"cpus" json:"cpus"`
	MemoryGiB float64 `yaml:"memory_gib" json:"memory_gib"`
	// CPULoad and MemUsedGiB are the host's own load, before any guest runs.
	CPULoad    float64 `yaml:"cpu_load" json:"cpu_load"`
	MemUsedGiB float64 `yaml:"mem_used_gib" json:"mem_used_gib"`
	Offline    bool    `yaml:"offline" json:"offline"`
	// HAState is the HA manager's state of the node (online, maintenance, unknown, fence,
	// gone). Once any node has one, HA counts as running: every node row of
	// /cluster/resources carries hastate, as in PVE (absent when HA never ran).
	HAState string `yaml:"hastate" json:"hastate"`
	// Arch is host-arch, which PVE 9.2+ puts on node rows (absent when empty).
	Arch string `yaml:"arch" json:"arch"`
	// Notes is the node's Notes (node config description), e.g. labels for the provider.
	Notes string `yaml:"notes" json:"notes"`
}

// StorageSpec describes a storage and the nodes it is enabled on (all when empty).
type StorageSpec struct {
	Name     string   `yaml:"name" json:"name"`
	Type     string   `yaml:"type" json:"type"`
	Content  []string `yaml:"content" json:"content"`
	Shared   bool     `yaml:"shared" json:"shared"`
	Nodes    []string `yaml:"nodes" json:"nodes"`
	SizeGiB  float64  `yaml:"size_gib" json:"size_gib"`
	UsedGiB  float64  `yaml:"used_gib" json:"used_gib"`
	Inactive bool     `yaml:"inactive" json:"inactive"`
	// Snippets are files in the storage's snippets directory (on each node it is enabled on,
	// unless shared), as an admin copies them there; it needs the snippets content type.
	Snippets []string `yaml:"snippets" json:"snippets"`
}

// GuestSpec describes an existing qemu VM or lxc container.
type GuestSpec struct {
	VMID      int      `yaml:"vmid" json:"vmid"`
	Node      string   `yaml:"node" json:"node"`
	Type      string   `yaml:"type" json:"type"` // qemu (default) or lxc
	Name      string   `yaml:"name" json:"name"`
	Status    string   `yaml:"status" json:"status"` // running or stopped (default)
	Cores     int      `yaml:"cores" json:"cores"`
	Sockets   int      `yaml:"sockets" json:"sockets"`
	MemoryMiB int      `yaml:"memory_mib" json:"memory_mib"`
	Template  bool     `yaml:"template" json:"template"`
	Tags      []string `yaml:"tags" json:"tags"`
	Pool      string   `yaml:"pool" json:"pool"`
	// Config holds further PVE config keys verbatim, e.g. scsi0, net0, ide2.
	Config map[string]string `yaml:"config" json:"config"`
}

// NextIDSpec is datacenter.cfg next-id.
type NextIDSpec struct {
	Lower int `yaml:"lower" json:"lower"`
	Upper int `yaml:"upper" json:"upper"`
}

// ParseCluster reads a cluster file in YAML or JSON (JSON is YAML). Unknown keys are errors.
func ParseCluster(data []byte) (Cluster, error) {
	var c Cluster
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return Cluster{}, fmt.Errorf("cluster file: %s", unknownFieldText.ReplaceAllStringFunc(err.Error(), explainUnknownField))
	}
	return c, c.validate()
}

// unknownFieldText is yaml's message for a key its type lacks (a misspelling, mostly).
var unknownFieldText = regexp.MustCompile(`field (\S+) not found in type pvesim\.(\w+)`)

// fileSections name the cluster file's parts after the types that hold them.
var fileSections = map[string]struct {
	name string
	typ  reflect.Type
}{
	"Cluster": {"at the top level", reflect.TypeOf(Cluster{})}, "NodeSpec": {"in a node", reflect.TypeOf(NodeSpec{})},
	"StorageSpec": {"in a storage", reflect.TypeOf(StorageSpec{})}, "GuestSpec": {"in a guest", reflect.TypeOf(GuestSpec{})},
	"NextIDSpec": {"in next_id", reflect.TypeOf(NextIDSpec{})}, "HARuleSpec": {"in an HA rule", reflect.TypeOf(HARuleSpec{})},
	"RemoteFileSpec": {"in a remote file", reflect.TypeOf(RemoteFileSpec{})},
}

// explainUnknownField rewrites yaml's "field x not found in type pvesim.NodeSpec" in the
// file's words, with the keys that part takes.
func explainUnknownField(msg string) string {
	m := unknownFieldText.FindStringSubmatch(msg)
	sec, ok := fileSections[m[2]]
	if !ok {
		return msg
	}
	var keys []string
	for i := range sec.typ.NumField() {
		keys = append(keys, strings.Split(sec.typ.Field(i).Tag.Get("yaml"), ",")[0])
	}
	return fmt.Sprintf("unknown key %s %s; the keys are %s", m[1], sec.name, strings.Join(keys, ", "))
}

// LoadCluster reads a cluster file from disk.
func LoadCluster(path string) (Cluster, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Cluster{}, err
	}
	return ParseCluster(data)
}

func (c Cluster) validate() error {
	nodes := map[string]bool{}
	for _, n := range c.Nodes {
		if n.Name == "" || n.CPUs <= 0 || n.MemoryGiB <= 0 {
			return fmt.Errorf("cluster file: node %q needs a name, cpus > 0 and memory_gib > 0", n.Name)
		}
		if nodes[n.Name] {
			return fmt.Errorf("cluster file: node %q is listed twice", n.Name)
		}
		if n.HAState != "" && !contains(haNodeStates, n.HAState) {
			return fmt.Errorf("cluster file: node %q has hastate %q; use one of %s", n.Name, n.HAState, strings.Join(haNodeStates, ", "))
		}
		if n.CPULoad < 0 || n.CPULoad > 1 || n.MemUsedGiB < 0 || n.MemUsedGiB > n.MemoryGiB {
			return fmt.Errorf("cluster file: node %q has cpu_load %g and mem_used_gib %g; cpu_load is a fraction of its CPUs (0..1), mem_used_gib at most its memory_gib %g", n.Name, n.CPULoad, n.MemUsedGiB, n.MemoryGiB)
		}
		if len(n.Notes) > maxNodeDescription {
			return fmt.Errorf("cluster file: node %q has notes of %d characters; PVE allows %d", n.Name, len(n.Notes), maxNodeDescription)
		}
		nodes[n.Name] = true
	}
	for _, f := range c.RemoteFiles {
		if !remoteURL.MatchString(f.URL) || f.Size <= 0 {
			return fmt.Errorf("cluster file: remote file %q needs an http(s) url and a size > 0", f.URL)
		}
		for algo := range f.Checksums {
			if !contains(checksumAlgorithms, algo) {
				return fmt.Errorf("cluster file: remote file %q has a checksum %q; the algorithms are %s", f.URL, algo, strings.Join(checksumAlgorithms, ", "))
			}
		}
	}
	storages := map[string]bool{}
	for _, st := range c.Storages {
		if st.Name == "" || st.SizeGiB < 0 || st.UsedGiB < 0 || st.UsedGiB > st.SizeGiB {
			return fmt.Errorf("cluster file: storage %q needs a name and 0 <= used_gib <= size_gib", st.Name)
		}
		if storages[st.Name] {
			return fmt.Errorf("cluster file: storage %q is listed twice; use its nodes list to enable it on several nodes", st.Name)
		}
		storages[st.Name] = true
		if err := st.validateContent(c.release()); err != nil {
			return err
		}
		for _, n := range st.Nodes {
			if !nodes[n] {
				return fmt.Errorf("cluster file: storage %q is enabled on unknown node %q", st.Name, n)
			}
		}
	}
	pools := map[string]bool{}
	for _, p := range c.Pools {
		pools[p] = true
	}
	ids := map[int]bool{}
	for _, g := range c.Guests {
		switch {
		case g.VMID < 100 || g.VMID > 999999999 || ids[g.VMID]:
			return fmt.Errorf("cluster file: guest vmid %d is invalid or duplicated (vmids are unique, 100-999999999)", g.VMID)
		case !nodes[g.Node]:
			return fmt.Errorf("cluster file: guest %d is on unknown node %q", g.VMID, g.Node)
		case g.Type != "" && g.Type != "qemu" && g.Type != "lxc":
			return fmt.Errorf("cluster file: guest %d has type %q; use qemu or lxc", g.VMID, g.Type)
		case g.Status != "" && g.Status != "running" && g.Status != "stopped":
			return fmt.Errorf("cluster file: guest %d has status %q; use running or stopped", g.VMID, g.Status)
		case g.Pool != "" && !pools[g.Pool]:
			return fmt.Errorf("cluster file: guest %d is in pool %q, which is not in pools", g.VMID, g.Pool)
		case g.Template && g.Status == "running":
			return fmt.Errorf("cluster file: guest %d is a template and cannot be running", g.VMID)
		case g.Cores < 0 || g.Sockets < 0 || g.MemoryMiB < 0:
			return fmt.Errorf("cluster file: guest %d has cores %d, sockets %d, memory_mib %d; none can be negative", g.VMID, g.Cores, g.Sockets, g.MemoryMiB)
		}
		if err := g.validateConfig(storages, c.release()); err != nil {
			return err
		}
		ids[g.VMID] = true
	}
	if id := c.NextID; id != nil && (id.Lower != 0 && id.Lower < 100 || id.Upper != 0 && id.Upper <= id.Lower) {
		return fmt.Errorf("cluster file: next_id needs 100 <= lower < upper, got lower %d, upper %d", id.Lower, id.Upper)
	}
	if _, msg := parseCRS(c.CRS, c.release()); msg != "" {
		return fmt.Errorf("cluster file: crs %q: %s (PVE %s's datacenter.cfg; %s)", c.CRS, msg, c.release().release, crsHint(c.release()))
	}
	return c.validateHARules(nodes, ids)
}

// crsHint says what the crs property takes on release v.
func crsHint(v versionInfo) string {
	if v.major < 9 {
		return "it takes ha=basic|static and ha-rebalance-on-start; add ha_rules to simulate PVE " + pve9.release + ", which adds ha=dynamic and ha-auto-rebalance"
	}
	return "it takes ha=basic|static|dynamic, ha-rebalance-on-start, and ha-auto-rebalance with ha-auto-rebalance-threshold (percent), -hold-duration (rounds), -margin (percent) and -method (bruteforce|topsis)"
}

// validateConfig checks a VM's config keys and values against qemu-server's schema, as PVE
// would have refused them, and that its disks are on storages of the file. Containers have
// no config schema here: they are only listed.
func (g GuestSpec) validateConfig(storages map[string]bool, v versionInfo) error {
	if g.Type == "lxc" {
		return nil
	}
	if _, problems := checkConfig(g.Config, v); len(problems) > 0 {
		key := sortedKeys(problems)[0]
		return fmt.Errorf("cluster file: guest %d: config %s: %s", g.VMID, key, problems[key])
	}
	for _, v := range guestFromSpec(g).volumes() {
		if !storages[v.storage] {
			return fmt.Errorf("cluster file: guest %d: %s is on storage %q, which is not in storages", g.VMID, v.key, v.storage)
		}
	}
	return nil
}

// release is the PVE release the cluster file stands for: with ha_rules PVE 9, without PVE 8.
func (c Cluster) release() versionInfo {
	if c.HARules != nil {
		return pve9
	}
	return pve8
}

// validateContent checks the content types against the storage type's (pve-storage's
// plugindata) on release v and the snippets against the content. PVE 8.2's storages have no
// import content (pve-storage 8.2.2 gives it to the esxi type only, which the simulator does
// not model; the directory types got it in 8.2.8, PVE 8.3): PVE would drop it from
// storage.cfg with a warning ("storage does not support content type 'import'"); the cluster
// file is refused instead.
func (st StorageSpec) validateContent(v versionInfo) error {
	valid, known := storageContents[st.Type]
	switch {
	case st.Type == "":
		valid = allContents
	case !known:
		types := slices.Sorted(maps.Keys(storageContents))
		return fmt.Errorf("cluster file: storage %q has type %q; use one of %s, or no type (it then takes every content type)", st.Name, st.Type, strings.Join(types, ", "))
	}
	for _, c := range st.Content {
		if c == "import" && v.major < 9 {
			return fmt.Errorf("cluster file: storage %q cannot hold content \"import\" on PVE %s (PVE 8.2 has it for ESXi import sources only, directory storages take it from PVE 8.3 on); add ha_rules to simulate PVE %s, or drop import", st.Name, v.release, pve9.release)
		}
		if !contains(valid, c) {
			return fmt.Errorf("cluster file: storage %q of type %q cannot hold content %q (it takes %s)", st.Name, st.Type, c, strings.Join(valid, ", "))
		}
	}
	if len(st.Snippets) > 0 && !contains(st.Content, "snippets") {
		return fmt.Errorf("cluster file: storage %q has snippets but not the snippets content type", st.Name)
	}
	for _, f := range st.Snippets {
		if !snippetName.MatchString(f) {
			return fmt.Errorf("cluster file: storage %q: snippet %q is not a file name", st.Name, f)
		}
	}
	return nil
}

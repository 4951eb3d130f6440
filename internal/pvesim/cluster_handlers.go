package pvesim

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
)

func (s *Server) routes() {
	m := http.NewServeMux()
	h := func(pattern string, fn http.HandlerFunc) {
		m.HandleFunc(strings.Replace(pattern, " ", " "+apiPrefix, 1), fn)
	}
	h("POST /access/ticket", s.handleTicket)
	h("GET /access/users", s.handleUsers)
	h("GET /access/users/{userid}", s.handleUser)
	h("GET /access/permissions", s.handlePermissions)
	h("GET /version", s.handleVersion)
	h("GET /cluster/status", s.handleClusterStatus)
	h("GET /cluster/resources", s.handleResources)
	h("GET /cluster/nextid", s.handleNextID)
	h("GET /cluster/options", s.handleOptions)
	h("GET /pools", s.handlePools)
	h("GET /pools/{poolid}", s.handlePool)
	h("PUT /pools/{poolid}", s.handlePoolUpdate)
	h("GET /nodes", s.handleNodes)
	h("GET /nodes/{node}/status", s.handleNodeStatus)
	h("GET /nodes/{node}/version", s.handleNodeVersion)
	h("GET /storage/{storage}", s.handleStorageConfig)
	h("GET /nodes/{node}/storage", s.handleNodeStorages)
	h("GET /nodes/{node}/storage/{storage}/content", s.handleStorageContent)
	h("GET /nodes/{node}/storage/{storage}/content/{volume...}", s.handleVolumeInfo)
	h("GET /nodes/{node}/storage/{storage}/status", s.handleStorageStatus)
	h("DELETE /nodes/{node}/storage/{storage}/content/{volume...}", s.handleVolumeDelete)
	h("POST /nodes/{node}/storage/{storage}/upload", s.handleUpload)
	h("POST /nodes/{node}/storage/{storage}/download-url", s.handleDownloadURL)
	h("GET /nodes/{node}/query-url-metadata", s.handleQueryURLMetadata)
	h("GET /nodes/{node}/config", s.handleNodeConfigGet)
	h("PUT /nodes/{node}/config", s.handleNodeConfigSet)
	h("GET /cluster/ha/status/manager_status", s.handleHAManagerStatus)
	h("GET /cluster/ha/rules", s.rulesAPI(s.handleHARules))
	h("POST /cluster/ha/rules", s.rulesAPI(s.handleHARuleCreate))
	h("GET /cluster/ha/rules/{rule}", s.rulesAPI(s.handleHARuleGet))
	h("PUT /cluster/ha/rules/{rule}", s.rulesAPI(s.handleHARuleUpdate))
	h("DELETE /cluster/ha/rules/{rule}", s.rulesAPI(s.handleHARuleDelete))
	h("GET /cluster/ha/groups", s.groupsAPI("index", s.handleHAGroups))
	h("POST /cluster/ha/groups", s.groupsAPI("create", s.handleHAGroupCreate))
	h("GET /cluster/ha/groups/{group}", s.groupsAPI("read", s.handleHAGroupGet))
	h("PUT /cluster/ha/groups/{group}", s.groupsAPI("update", s.handleHAGroupUpdate))
	h("DELETE /cluster/ha/groups/{group}", s.groupsAPI("delete", s.handleHAGroupDelete))
	h("GET /cluster/ha/resources", s.handleHAResources)
	h("POST /cluster/ha/resources", s.handleHAResourceCreate)
	h("GET /cluster/ha/resources/{sid}", s.handleHAResourceGet)
	h("PUT /cluster/ha/resources/{sid}", s.handleHAResourceUpdate)
	h("DELETE /cluster/ha/resources/{sid}", s.handleHAResourceDelete)
	h("POST /cluster/ha/resources/{sid}/migrate", s.handleHAMove(false))
	h("POST /cluster/ha/resources/{sid}/relocate", s.handleHAMove(true))
	h("GET /cluster/ha/status/current", s.handleHAStatus)
	h("GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces", serveFound(s, s.lookup, s.handleAgentInterfaces))
	h("GET /nodes/{node}/lxc", s.guestList("lxc"))
	h("GET /nodes/{node}/lxc/{vmid}/config", serveFound(s, s.lookupContainer, s.handleConfigGet))
	h("GET /nodes/{node}/qemu", s.guestList("qemu"))
	h("POST /nodes/{node}/qemu", s.handleCreate)
	h("GET /nodes/{node}/qemu/{vmid}/config", serveFound(s, s.lookup, s.handleConfigGet))
	h("GET /nodes/{node}/qemu/{vmid}/pending", serveFound(s, s.lookup, s.handlePending))
	h("POST /nodes/{node}/qemu/{vmid}/config", s.handleConfigSet(true))
	h("PUT /nodes/{node}/qemu/{vmid}/config", s.handleConfigSet(false))
	h("GET /nodes/{node}/qemu/{vmid}/status/current", serveFound(s, s.lookup, s.handleStatusCurrent))
	h("POST /nodes/{node}/qemu/{vmid}/status/{action}", s.handlePower)
	h("POST /nodes/{node}/qemu/{vmid}/clone", serveFound(s, s.lookup, s.handleClone))
	h("POST /nodes/{node}/qemu/{vmid}/migrate", s.handleMigrate)
	h("PUT /nodes/{node}/qemu/{vmid}/resize", s.handleResize)
	h("POST /nodes/{node}/qemu/{vmid}/move_disk", s.handleMoveDisk)
	h("POST /nodes/{node}/qemu/{vmid}/template", s.handleTemplate)
	h("PUT /nodes/{node}/qemu/{vmid}/cloudinit", s.handleCloudInitUpdate)
	h("DELETE /nodes/{node}/qemu/{vmid}", s.handleDelete)
	h("GET /nodes/{node}/tasks", s.handleTaskList)
	h("GET /nodes/{node}/tasks/{upid}/status", serveFound(s, s.taskFor, s.handleTaskStatus))
	h("GET /nodes/{node}/tasks/{upid}/log", serveFound(s, s.taskFor, s.handleTaskLog))
	h("DELETE /nodes/{node}/tasks/{upid}", serveFound(s, s.taskFor, s.handleTaskStop))
	m.HandleFunc("/", notImplemented)
	s.mux = m
}

func (s *Server) node(name string) *node {
	for _, n := range s.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

// requireOnline answers for requests proxied to {node}: 500 for a node outside the cluster,
// 595 with an empty body for an offline one. The caller holds s.mu.
func (s *Server) requireOnline(w http.ResponseWriter, r *http.Request) bool {
	name := r.PathValue("node")
	n := s.node(name)
	switch {
	case n == nil:
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("hostname lookup '%s' failed - failed to get address info for: %s: Name or service not known", name, name))
		return false
	case !n.online:
		writeError(w, 595, "Errors during connection establishment, proxy handler: No route to host")
		return false
	}
	return true
}

// serveFound serves a call on one object of the path under s.mu: the VM lookup finds, or the
// task taskFor finds; find answers the call itself when there is none.
func serveFound[T any](s *Server, find func(http.ResponseWriter, *http.Request) *T, handle func(http.ResponseWriter, *http.Request, *T)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if found := find(w, r); found != nil {
			handle(w, r, found)
		}
	}
}

// onlineParams starts a request proxied to {node}: requireOnline, then the request's
// parameters, refusing any not in allowed. The caller holds s.mu.
func (s *Server) onlineParams(w http.ResponseWriter, r *http.Request, allowed ...string) (map[string]string, bool) {
	if !s.requireOnline(w, r) {
		return nil, false
	}
	return readAllowedParams(w, r, allowed...)
}

// onlineUncheckedParams is onlineParams for a handler that checks the parameters itself
// (reporting the unknown ones together with its own problems). The caller holds s.mu.
func (s *Server) onlineUncheckedParams(w http.ResponseWriter, r *http.Request) (map[string]string, bool) {
	if !s.requireOnline(w, r) {
		return nil, false
	}
	return readParams(w, r)
}

// guestCPUShare is how busy a running guest's vCPUs are, as a fraction.
const guestCPUShare = 0.1

// load is a node's live usage.
type load struct {
	cpu float64 // 0..1 of the node's CPUs
	mem uint64
}

// loads returns every node's live figures, in one pass over the guests: the host's own load,
// plus each running guest's (liveUsage). So placing and starting VMs moves later scores. The
// caller holds s.mu.
func (s *Server) loads() map[string]load {
	out := make(map[string]load, len(s.nodes))
	cpus := make(map[string]int, len(s.nodes))
	for _, n := range s.nodes {
		out[n.name] = load{cpu: n.baseCPU, mem: n.baseMem}
		cpus[n.name] = n.cpus
	}
	for _, g := range s.guests {
		l, known := out[g.node]
		if !known || g.status != "running" {
			continue
		}
		cpu, mem := g.liveUsage()
		l.cpu += cpu / float64(cpus[g.node])
		l.mem += mem
		out[g.node] = l
	}
	for _, n := range s.nodes {
		l := out[n.name]
		out[n.name] = load{cpu: min(l.cpu, 1), mem: min(l.mem, n.maxmem)}
	}
	return out
}

// nodeRow is a node's /cluster/resources and /nodes row; an offline node keeps only its
// capacity.
func nodeRow(n *node, l load) map[string]any {
	row := map[string]any{"id": "node/" + n.name, "type": "node", "node": n.name, "level": "",
		"maxcpu": n.cpus, "maxmem": n.maxmem, "maxdisk": uint64(100 * gib), "status": "offline"}
	if n.online {
		row["status"], row["cpu"], row["mem"], row["disk"], row["uptime"] = "online", l.cpu, l.mem, uint64(10*gib), 86400
		row["cgroup-mode"] = 2
	}
	return row
}

// maxCPU is a guest's vCPUs as PVE reports them: capped at its host's logical CPUs.
func (s *Server) maxCPU(g *guest) int {
	if n := s.node(g.node); n != nil {
		return min(g.vcpus(), n.cpus)
	}
	return g.vcpus()
}

// guestRow is a guest's /cluster/resources row. Without stats (a guest created since the last
// tick, or on an offline node) it has only id, vmid, node, type, status "unknown", and tags,
// lock and pool.
func (s *Server) guestRow(g *guest) resourceRow {
	row := resourceRow{ID: g.typ + "/" + strconv.Itoa(g.vmid), Type: g.typ, VMID: g.vmid, Node: g.node, Status: "unknown",
		Tags: g.config["tags"], Lock: g.lock, Pool: g.pool}
	// PVE's hastate is the CRM's state of the service once the manager status lists it, else
	// the state resources.cfg requests, if any (pve-manager API2/Cluster.pm resources).
	if res := s.haResourceOf(g.vmid); res != nil {
		row.HAState = cmp.Or(s.crmState(res), res.opts["state"])
	}
	n := s.node(g.node)
	if !g.hasStats || n == nil || !n.online {
		return row
	}
	stats := &guestStats{Name: g.name(), MaxCPU: s.maxCPU(g), MaxMem: g.memoryBytes(), MaxDisk: s.diskBytes(g), Template: b2i(g.template())}
	if g.status == "running" {
		stats.CPU, stats.Mem = g.reportedUsage(stats.MaxCPU)
		stats.Uptime = 3600
	}
	row.Status, row.guestStats = g.status, stats
	return row
}

// resourceRow is a guest row of /cluster/resources. A struct rather than a map: encoding 10,000
// maps (keys sorted each time) dominated the answer's cost.
type resourceRow struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	VMID   int    `json:"vmid"`
	Node   string `json:"node"`
	Status string `json:"status"`
	Tags   string `json:"tags,omitempty"`
	Lock   string `json:"lock,omitempty"`
	Pool   string `json:"pool,omitempty"`
	// HAState is the HA resource's state, for guests that are one.
	HAState string `json:"hastate,omitempty"`
	*guestStats
}

// guestStats are the fields PVE fills from its stats broadcast; all present (zero or not) once
// it has arrived.
type guestStats struct {
	Name      string  `json:"name"`
	Template  int     `json:"template"`
	MaxCPU    int     `json:"maxcpu"`
	CPU       float64 `json:"cpu"`
	MaxMem    uint64  `json:"maxmem"`
	Mem       uint64  `json:"mem"`
	MaxDisk   uint64  `json:"maxdisk"`
	Disk      uint64  `json:"disk"`
	NetIn     uint64  `json:"netin"`
	NetOut    uint64  `json:"netout"`
	DiskRead  uint64  `json:"diskread"`
	DiskWrite uint64  `json:"diskwrite"`
	Uptime    int     `json:"uptime"`
}

// diskBytes is a guest's maxdisk: the size of its disks.
func (s *Server) diskBytes(g *guest) uint64 {
	var total float64
	for _, k := range g.disks() {
		total += sizeGiB(g.config[k])
	}
	return uint64(total * gib)
}

func (s *Server) sortedGuests() []*guest {
	list := make([]*guest, 0, len(s.guests))
	for _, g := range s.guests {
		list = append(list, g)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].vmid < list[j].vmid })
	return list
}

func (s *Server) handleResources(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	typ := r.URL.Query().Get("type")
	if typ != "" && typ != "vm" && typ != "node" && typ != "storage" && typ != "sdn" {
		paramError(w, "type", "value '"+typ+"' does not have a value in the enumeration 'vm, storage, node, sdn'")
		return
	}
	rows := []any{}
	if typ == "" {
		for _, p := range sortedKeys(s.pools) {
			rows = append(rows, map[string]any{"id": "/pool/" + p, "type": "pool", "pool": p})
		}
	}
	if typ == "" || typ == "vm" {
		for _, g := range s.sortedGuests() {
			rows = append(rows, s.guestRow(g))
		}
	}
	if typ == "" || typ == "node" {
		loads := s.loads()
		for _, n := range s.nodes {
			rows = append(rows, s.withNodeFacts(nodeRow(n, loads[n.name]), n))
		}
	}
	if typ == "" || typ == "storage" {
		for _, n := range s.nodes {
			for _, st := range n.storages {
				rows = append(rows, storageRow(n, st))
			}
		}
	}
	writeData(w, rows)
}

func storageRow(n *node, st *storage) map[string]any {
	status := "available"
	if st.inactive || !n.online {
		status = "unknown"
	}
	return map[string]any{"id": "storage/" + n.name + "/" + st.name, "type": "storage", "storage": st.name, "node": n.name,
		"plugintype": st.typ, "content": strings.Join(st.content, ","), "shared": b2i(st.shared), "status": status,
		"disk": st.used, "maxdisk": st.total}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sortedKeys are a map's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (s *Server) idBounds() (int, int) {
	lower, upper := 100, 1000000
	if s.nextID != nil {
		if s.nextID.Lower > 0 {
			lower = s.nextID.Lower
		}
		if s.nextID.Upper > 0 {
			upper = s.nextID.Upper
		}
	}
	return lower, upper
}

func (s *Server) handleNextID(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v := r.URL.Query().Get("vmid"); v != "" {
		id, ok := parseVMID(v)
		if !ok {
			paramError(w, "vmid", "invalid format - value does not look like a valid VM ID")
			return
		}
		if _, taken := s.guests[id]; taken {
			paramError(w, "vmid", fmt.Sprintf("VM %d already exists", id))
			return
		}
		writeData(w, strconv.Itoa(id))
		return
	}
	lower, upper := s.idBounds()
	for id := lower; id < upper; id++ {
		if _, taken := s.guests[id]; !taken {
			writeData(w, strconv.Itoa(id))
			return
		}
	}
	writeError(w, http.StatusInternalServerError, fmt.Sprintf("unable to get any free VMID in range [%d, %d]", lower, upper))
}

func parseVMID(v string) (int, bool) {
	id, err := strconv.Atoi(v)
	if err != nil || id < 100 || id > 999999999 || strconv.Itoa(id) != v {
		return 0, false
	}
	return id, true
}

func (s *Server) handleOptions(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	opts := map[string]any{"keyboard": "en-us"}
	if s.nextID != nil {
		nid := map[string]any{}
		if s.nextID.Lower > 0 {
			nid["lower"] = strconv.Itoa(s.nextID.Lower)
		}
		if s.nextID.Upper > 0 {
			nid["upper"] = strconv.Itoa(s.nextID.Upper)
		}
		opts["next-id"] = nid
	}
	if c := s.crs.config; c != nil {
		opts["crs"] = c.options()
	}
	writeData(w, opts)
}

// nodeIP is a node's cluster address, by its place in the cluster file.
func (s *Server) nodeIP(n *node) string {
	return fmt.Sprintf("10.0.0.%d", 11+slices.Index(s.nodes, n))
}

func (s *Server) handleClusterStatus(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows := []map[string]any{{"type": "cluster", "id": "cluster", "name": "sim", "nodes": len(s.nodes), "quorate": 1, "version": 1}}
	for i, n := range s.nodes {
		rows = append(rows, map[string]any{"type": "node", "id": "node/" + n.name, "name": n.name, "nodeid": i + 1,
			"ip": s.nodeIP(n), "local": b2i(i == 0), "online": b2i(n.online), "level": ""})
	}
	writeData(w, rows)
}

func (s *Server) handleNodes(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows := []map[string]any{}
	loads := s.loads()
	for _, n := range s.nodes {
		row := nodeRow(n, loads[n.name])
		row["ssl_fingerprint"] = "80:D4:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:F5"
		delete(row, "cgroup-mode")
		rows = append(rows, row)
	}
	writeData(w, rows)
}

// handleNodeStatus answers as pve-manager's API2/Nodes.pm status: kversion is uname's
// "sysname release version" and current-kernel its fields (get_current_kernel_info), of the
// release's kernel; pveversion is "pve-manager/VERSION/REPOID" (PVE::pvecfg); memory.available
// (MemAvailable) only since pve-manager 9.0.0~19; cpuinfo as ProcFSTools read_cpuinfo, whose hvm
// is whether flags carry vmx or svm.
func (s *Server) handleNodeStatus(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.requireOnline(w, r) {
		return
	}
	n := s.node(r.PathValue("node"))
	l := s.loads()[n.name]
	v := s.pveVersion()
	memory := map[string]any{"total": n.maxmem, "used": l.mem, "free": n.maxmem - l.mem}
	if v.major >= 9 {
		memory["available"] = n.maxmem - l.mem
	}
	writeData(w, map[string]any{
		"uptime": 86400, "idle": 0, "cpu": l.cpu, "wait": 0.0003, "loadavg": []string{"0.15", "0.25", "0.30"},
		"cpuinfo": map[string]any{"model": "Simulated CPU", "vendor": "GenuineIntel", "family": "6", "cpus": n.cpus,
			"cores": max(n.cpus/2, 1), "sockets": 1, "mhz": "3000.000", "hvm": "1", "user_hz": 100, "flags": "fpu vme vmx sse2"},
		"memory":         memory,
		"swap":           map[string]any{"total": 0, "used": 0, "free": 0},
		"ksm":            map[string]any{"shared": 0},
		"rootfs":         map[string]any{"total": uint64(100 * gib), "used": uint64(10 * gib), "free": uint64(90 * gib), "avail": uint64(85 * gib)},
		"kversion":       "Linux " + v.kernelRelease + " " + v.kernelVersion,
		"current-kernel": map[string]any{"sysname": "Linux", "release": v.kernelRelease, "version": v.kernelVersion, "machine": "x86_64"},
		"boot-info":      map[string]any{"mode": "efi", "secureboot": 0},
		"pveversion":     "pve-manager/" + v.version + "/" + v.repoid,
	})
}

package pvesim

import (
	"cmp"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

func (s *Server) guestList(typ string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.requireOnline(w, r) {
			return
		}
		var guests []*guest
		for _, g := range s.guests {
			if g.node == r.PathValue("node") && g.typ == typ {
				guests = append(guests, g)
			}
		}
		// Sorted after filtering: a node's list costs its own guests, not the cluster's.
		slices.SortFunc(guests, func(a, b *guest) int { return a.vmid - b.vmid })
		rows := []map[string]any{}
		for _, g := range guests {
			row := s.listRow(g)
			if typ == "lxc" {
				// pve-container's rows also name their type and report swap.
				row["type"], row["maxswap"], row["swap"] = "lxc", 512*mib, 0
			}
			rows = append(rows, row)
		}
		writeData(w, rows)
	}
}

// listRow is a /nodes/{node}/qemu row: template only when 1, pid only when running.
func (s *Server) listRow(g *guest) map[string]any {
	row := map[string]any{"vmid": g.vmid, "name": g.name(), "status": g.status, "cpus": s.maxCPU(g), "maxmem": g.memoryBytes(),
		"maxdisk": s.diskBytes(g), "disk": 0, "uptime": 0, "cpu": 0, "mem": 0, "netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0}
	if g.template() {
		row["template"] = 1
	}
	if g.status == "running" {
		cpu, mem := g.reportedUsage(s.maxCPU(g))
		row["pid"], row["uptime"], row["cpu"], row["mem"] = 10000+g.vmid, 3600, cpu, mem
	}
	if tags := g.config["tags"]; tags != "" {
		row["tags"] = tags
	}
	if g.lock != "" {
		row["lock"] = g.lock
	}
	return row
}

// lookup finds the qemu guest {vmid} on {node}, answering like PVE when it is not there. The
// caller holds s.mu.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) *guest {
	return s.lookupType(w, r, "qemu")
}

// lookupContainer is lookup for an lxc container.
func (s *Server) lookupContainer(w http.ResponseWriter, r *http.Request) *guest {
	return s.lookupType(w, r, "lxc")
}

func (s *Server) lookupType(w http.ResponseWriter, r *http.Request, typ string) *guest {
	if !s.requireOnline(w, r) {
		return nil
	}
	id, valid := parseVMID(r.PathValue("vmid"))
	if !valid {
		paramError(w, "vmid", "invalid format - value does not look like a valid VM ID")
		return nil
	}
	g, found := s.guests[id]
	if !found || g.node != r.PathValue("node") || g.typ != typ {
		dir := map[string]string{"qemu": "qemu-server", "lxc": "lxc"}[typ]
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("Configuration file 'nodes/%s/%s/%d.conf' does not exist", r.PathValue("node"), dir, id))
		return nil
	}
	return g
}

// lockable tells whether a change may take g's lock: not while its config holds a lock
// (migrate, destroyed, ...; check_lock, which skiplock skips), nor while clones read it (the
// file lock). Otherwise it answers as PVE does. The caller holds s.mu.
func (s *Server) lockable(w http.ResponseWriter, g *guest, skiplock bool) bool {
	switch {
	case g.lock != "" && !skiplock:
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("VM is locked (%s)", g.lock))
		return false
	case g.clones > 0:
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("can't lock file '/var/lock/qemu-server/lock-%d.conf' - got timeout", g.vmid))
		return false
	}
	return true
}

// unlockedWithAllowed is unlockedWithParams for a call whose parameters are all in allowed;
// any other is PVE's 400. The caller holds s.mu.
func (s *Server) unlockedWithAllowed(w http.ResponseWriter, r *http.Request, allowed ...string) (*guest, map[string]string) {
	return s.change(w, r, append([]string{}, allowed...)) // none allowed is not nil
}

// unlockedWithParams starts a change to an unlocked VM: the guest and its request's
// parameters, or nil after the error has been written. The caller holds s.mu.
func (s *Server) unlockedWithParams(w http.ResponseWriter, r *http.Request) (*guest, map[string]string) {
	return s.change(w, r, nil)
}

// change is unlockedWithParams, with the parameters limited to allowed unless nil. skiplock is
// root@pam's only (qemu-server: "Only root may use this option.", its API tokens included)
// and lets the change pass a config lock.
func (s *Server) change(w http.ResponseWriter, r *http.Request, allowed []string) (*guest, map[string]string) {
	g := s.lookup(w, r)
	if g == nil {
		return nil, nil
	}
	p, valid := readParams(w, r)
	if !valid || allowed != nil && !onlyAllowed(w, p, allowed...) {
		return nil, nil
	}
	skiplock := boolParam(p["skiplock"])
	if skiplock && requestUser(r) != "root@pam" {
		paramError(w, "skiplock", "Only root may use this option.")
		return nil, nil
	}
	if !s.lockable(w, g, skiplock) {
		return nil, nil
	}
	return g, p
}

func (s *Server) handleConfigGet(w http.ResponseWriter, r *http.Request, g *guest) {
	writeData(w, g.configJSON(boolParam(r.URL.Query().Get("current"))))
}

func (s *Server) handleStatusCurrent(w http.ResponseWriter, r *http.Request, g *guest) {
	row := s.listRow(g)
	row["ha"] = map[string]any{"managed": 0}
	if res := s.haManaged(g.vmid); res != nil {
		// HA/Config.pm get_service_status: the CRM's state in the manager status (not the
		// verbose one of status/current), null until the CRM has picked the service up.
		var state any
		if crm := s.crmState(res); crm != "" {
			state = crm
		}
		row["ha"] = map[string]any{"managed": 1, "state": state}
	}
	row["qmpstatus"] = g.status
	if g.status == "running" {
		// What QMP reports about the running process and its balloon.
		v := s.pveVersion()
		row["running-machine"], row["running-qemu"] = v.runningMachine(g.config["machine"]), v.qemu
		row["balloon"], row["freemem"] = g.memoryBytes(), g.memoryBytes()/2
	}
	if agentEnabled(g.view()["agent"]) {
		row["agent"] = 1
	}
	writeData(w, row)
}

// storageAlloc is PVE's allocation syntax for a new disk's file: STORAGE:SIZE_GiB.
var storageAlloc = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9\-_.]*):(\d+(?:\.\d+)?)$`)

// change is a validated config change: values to set (new disks already named, NICs with
// MACs, tags normalised) and the volumes to allocate for new disks, or why allocating them
// fails in the worker (failure: the change is not applied and its task fails).
type change struct {
	set     map[string]string
	alloc   []allocation
	failure string
}

type allocation struct {
	st   *storage
	name string
	size volumeSize
}

// prepareConfig validates config keys for guest g as a create or a config write by user does.
// It answers the request itself (400 for schema problems, 500 for PVE's handler errors) and
// returns false when the change is refused. PVE allocates the disks (create_disks) after the
// checks of every drive; when that happens in a worker (inWorker: a create, an asynchronous
// config write), its failure is the change's failure, else the request's error. The caller
// holds s.mu.
func (s *Server) prepareConfig(w http.ResponseWriter, g *guest, user string, raw map[string]string, del []string, inWorker bool) (change, bool) {
	set, problems := checkConfig(raw, s.pveVersion())
	if len(problems) > 0 {
		writeParamError(w, problems)
		return change{}, false
	}
	if k, given := set["sshkeys"]; given {
		if msg := sshKeysProblem(k, s.pveVersion()); msg != "" {
			writeError(w, http.StatusInternalServerError, msg)
			return change{}, false
		}
	}
	// $check_vm_modify_config_perm: the keys to delete, then the keys to set.
	if msg := rootOnly(user, append(slices.Clone(del), sortedKeys(set)...), s.pveVersion()); msg != "" {
		writeError(w, http.StatusInternalServerError, msg)
		return change{}, false
	}
	current := g.view()
	if b := atoi(set["balloon"]); b > 0 {
		mem := set["memory"]
		if mem == "" {
			mem = current["memory"]
		}
		if m := atoi(strings.TrimPrefix(mem, "current=")); m == 0 && b > 512 || m > 0 && b > m {
			writeError(w, http.StatusInternalServerError, "balloon value too large (must be smaller than assigned memory)")
			return change{}, false
		}
	}
	n := s.node(g.node)
	c := change{set: map[string]string{}}
	// A scratch copy names several new disks on one storage apart (disk-0, disk-1, ...).
	scratch := &guest{vmid: g.vmid, config: current}
	for _, k := range driveOrder(set) {
		v := set[k]
		switch f := driveFormatOf(k); {
		case k == "tags":
			v = normalizeTags(v)
		case strings.HasPrefix(k, "net"):
			v = withMAC(v, s.rng, false)
		case f != nil:
			d, _ := parsePropertyString(f, v, k) // checked by checkConfig
			if !checkDrive(k, d) {
				paramError(w, k, "unable to parse drive options")
				return change{}, false
			}
			var a *allocation
			var problem *driveProblem
			if d["import-from"] != "" {
				a, problem = s.importFrom(n, scratch, k, user, d)
			} else {
				a, problem = s.allocate(n, scratch, k, d)
			}
			switch {
			case problem != nil && !problem.inWorker:
				problem.write(w)
				return change{}, false
			case problem != nil && c.failure == "":
				c.failure = problem.msg // create_disks stops at the first drive it fails
			case a != nil:
				c.alloc = append(c.alloc, *a)
			}
			v = printPropertyString(f, d)
		}
		scratch.config[k] = v
		c.set[k] = v
	}
	if c.failure != "" && !inWorker {
		writeError(w, http.StatusInternalServerError, c.failure)
		return change{}, false
	}
	return c, true
}

// driveOrder lists the keys of set with the drives in the order PVE allocates them (ide,
// scsi, virtio, sata, then efidisk0 and tpmstate0; by index within a bus), so new volumes get
// the same names as in PVE.
func driveOrder(set map[string]string) []string {
	buses := []string{"ide", "scsi", "virtio", "sata", "efidisk", "tpmstate", "unused"}
	rank := func(k string) (int, int) {
		m := volumeKeyParts.FindStringSubmatch(k)
		if m == nil {
			return -1, 0
		}
		return slices.Index(buses, m[1]), atoi(m[2])
	}
	keys := sortedKeys(set)
	slices.SortStableFunc(keys, func(a, b string) int {
		ba, ia := rank(a)
		bb, ib := rank(b)
		return cmp.Or(cmp.Compare(ba, bb), cmp.Compare(ia, ib))
	})
	return keys
}

var volumeKeyParts = regexp.MustCompile(`^(ide|scsi|virtio|sata|efidisk|tpmstate|unused)(\d+)$`)

// allocate handles a drive's special file syntax as PVE's create_disks does: STORAGE:SIZE
// allocates a new volume (an EFI disk gets the size of its vars image and, with pre-enrolled
// keys, the Microsoft 2023 certificates), STORAGE:cloudinit the cloud-init drive. It
// rewrites d's file and size, and returns the allocation or PVE's complaint.
func (s *Server) allocate(n *node, g *guest, key string, d map[string]string) (*allocation, *driveProblem) {
	if size := d["size"]; size != "" {
		d["size"] = formatBytes(uint64(parseSize(size) * gib))
	}
	if m := storageAlloc.FindStringSubmatch(d["file"]); m != nil {
		st, problem := s.newDiskStorage(n, m[1])
		if problem != nil {
			return nil, problem
		}
		size, _ := strconv.ParseFloat(m[2], 64)
		bytes := uint64(size * gib)
		switch key {
		case "efidisk0":
			bytes = 128 << 10
			if d["efitype"] == "4m" {
				bytes = 4 << 20
			}
			if d["pre-enrolled-keys"] == "1" && s.pveVersion().major >= 9 {
				d["ms-cert"] = "2023k"
			}
		case "tpmstate0":
			bytes = 4 << 20
		}
		name, msg := g.newVolume(st)
		if msg != "" {
			return nil, workerProblem("%s", msg) // vdisk_create_base
		}
		d["file"], d["size"] = m[1]+":"+name, formatBytes(bytes)
		return &allocation{st, name, volumeSize{size: bytes, used: bytes}}, nil
	}
	if name, isCI := strings.CutSuffix(d["file"], ":cloudinit"); isCI {
		// $check_storage_access leaves cloud-init drives alone: create_disks finds the storage.
		if _, msg := s.activeStorage(n.name, name); msg != "" {
			return nil, workerProblem("%s", msg)
		}
		if _, msg := imageStorage(n, name); msg != "" {
			return nil, workerProblem("%s", msg)
		}
		d["file"], d["media"] = fmt.Sprintf("%s:vm-%d-cloudinit", name, g.vmid), "cdrom"
		return nil, nil
	}
	// An existing volume: PVE records the size volume_size_info reads, whatever the request
	// said. Cd-roms (isos, none) and paths outside a storage are left as given.
	if vol, ok := parseVolume(d["file"]); ok && d["media"] != "cdrom" {
		if !s.storageExists(vol.storage) { // check_volume_access, before any worker
			return nil, earlyProblem("storage '%s' does not exist", vol.storage)
		}
		st, msg := s.activeStorage(n.name, vol.storage)
		if msg != "" {
			return nil, workerProblem("%s", msg)
		}
		v, msg := st.volumeSize(vol.name)
		if v.size == 0 && msg == "" || strings.HasPrefix(msg, "volume_size_info") {
			msg = fmt.Sprintf("volume %s:%s does not exist", vol.storage, vol.name)
		}
		if msg != "" {
			return nil, workerProblem("%s", msg)
		}
		d["size"] = formatBytes(v.size)
	}
	return nil, nil
}

// newDiskStorage is the storage a new disk (STORAGE:SIZE) is allocated on, checked as PVE
// checks it: before any worker, by $check_storage_access (in storage.cfg, "storage 'x' does
// not exist"; with images, a 400 on storage), then in create_disks by vdisk_alloc's
// activate_storage (enabled on the node, online).
func (s *Server) newDiskStorage(n *node, name string) (*storage, *driveProblem) {
	cfg := s.anyStorage(name)
	switch {
	case cfg == nil:
		return nil, earlyProblem("storage '%s' does not exist", name)
	case !contains(cfg.content, "images"):
		return nil, paramProblem("storage", "storage '%s' does not support vm images", name)
	}
	st, msg := s.activeStorage(n.name, name)
	if msg != "" {
		return nil, workerProblem("%s", msg)
	}
	return st, nil
}

// imageStorage finds a storage on n that can hold disk images, or PVE's complaint.
func imageStorage(n *node, name string) (*storage, string) {
	st := n.storage(name)
	switch {
	case st == nil:
		return nil, fmt.Sprintf("storage '%s' does not exist", name)
	case !contains(st.content, "images"):
		return nil, fmt.Sprintf("storage '%s' does not support vm images", name)
	}
	return st, ""
}

func (n *node) storage(name string) *storage {
	for _, st := range n.storages {
		if st.name == name {
			return st
		}
	}
	return nil
}

// storageOf is the storage a volume of guest g lives on, if its node has it.
func (s *Server) storageOf(g *guest, name string) *storage {
	if n := s.node(g.node); n != nil {
		return n.storage(name)
	}
	return nil
}

// commit applies the change to g: at once, or pending for what a running VM cannot take.
func (c change) commit(g *guest) {
	for _, k := range sortedKeys(c.set) {
		if k == "lock" { // the config's lock line, which root@pam may write
			g.lock = c.set[k]
			continue
		}
		g.set(k, c.set[k])
	}
	for _, a := range c.alloc {
		a.st.put(a.name, a.size)
	}
}

// createParams are the POST /nodes/{node}/qemu parameters that are not VM config.
// On PVE 9 also ha-managed (qemu-server 9.0.23 on).
var createParams = []string{"vmid", "start", "pool", "storage", "archive", "force", "unique", "live-restore", "bwlimit"}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, valid := s.onlineUncheckedParams(w, r)
	if !valid {
		return
	}
	params := createParams
	if s.pveVersion().major >= 9 {
		params = append(slices.Clone(createParams), "ha-managed")
	}
	cfg := map[string]string{}
	for k, v := range p {
		if !contains(params, k) {
			cfg[k] = v
		}
	}
	haManaged, validBool := parseBool(cmp.Or(p["ha-managed"], "0"))
	if !validBool {
		paramError(w, "ha-managed", fmt.Sprintf("type check ('boolean') failed - got '%s'", p["ha-managed"]))
		return
	}
	vmid, valid := parseVMID(p["vmid"])
	switch {
	case p["vmid"] == "":
		paramError(w, "vmid", "property is missing and it is not optional")
		return
	case !valid:
		paramError(w, "vmid", "invalid format - value does not look like a valid VM ID")
		return
	}
	n := s.node(r.PathValue("node"))
	if other, taken := s.guests[vmid]; taken {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("unable to create VM %d - VM %d already exists on node '%s'", vmid, vmid, other.node))
		return
	}
	if pool := p["pool"]; pool != "" && !s.pools[pool] {
		writeError(w, http.StatusForbidden, fmt.Sprintf("Permission check failed (pool '%s' does not exist)", pool))
		return
	}
	g := &guest{vmid: vmid, node: n.name, typ: "qemu", status: "stopped", pool: p["pool"], config: map[string]string{}, hasStats: !s.statsLag}
	if t, _ := parseBool(cfg["template"]); t {
		g.config["template"] = "1" // create_disks makes the new disks base volumes
	}
	user := requestUser(r)
	c, valid := s.prepareConfig(w, g, user, cfg, nil, true)
	if !valid {
		return
	}
	for _, k := range sortedKeys(c.set) {
		if msg := realDevice(user, k, c.set[k], "set"); msg != "" {
			writeError(w, http.StatusInternalServerError, msg)
			return
		}
	}
	// PVE gives every new VM a SMBIOS uuid, a generation id and creation metadata.
	defaults := map[string]string{"smbios1": "uuid=" + randomUUID(s.rng), "vmgenid": randomUUID(s.rng),
		"meta": fmt.Sprintf("creation-qemu=%s,ctime=%d", s.pveVersion().qemu, time.Now().Unix())}
	for k, v := range defaults {
		if _, given := c.set[k]; !given {
			c.set[k] = v
		}
	}
	start := boolParam(p["start"])
	// The VM exists from now on, locked until the task ends: other creates meet "already
	// exists", and /cluster/resources lists it with lock "create". A disk its worker fails to
	// allocate fails the task, which frees the disks allocated before and removes the VM.
	g.lock = "create"
	created := taskOK
	if c.failure != "" {
		created = func() outcome { return taskError("unable to create VM %d - %s", vmid, c.failure) }
	} else {
		c.commit(g)
	}
	s.guests[vmid] = g
	writeData(w, s.startTask(r, n.name, "qmcreate", vmid, created, func(ok bool) {
		s.settleNew(g, ok)
		if ok && haManaged && s.stillThere(g, n.name) {
			// "Add as HA resource" (ha-manager add vm:N --state started|stopped), before the
			// autostart, which for an HA-managed VM only requests the state the HA manager then
			// brings about: the simulator leaves the start to the CRM's next round.
			sid := fmt.Sprintf("vm:%d", vmid)
			if s.haResources[sid] == nil {
				s.haResources[sid] = &haResource{sid: sid, typ: "vm", vmid: vmid, opts: map[string]string{"state": map[bool]string{true: "started", false: "stopped"}[start]}}
				s.haActive = true
			}
			return
		}
		if ok && start && s.stillThere(g, n.name) {
			// "Execute autostart": once the VM is created and unlocked, the create's worker
			// calls vm_start, which forks a qmstart worker of its own: its failure is not the
			// create's (qemu-server API2/Qemu.pm create_vm).
			s.startTask(r, n.name, "qmstart", vmid, func() outcome {
				if failed, stop := s.lockedOrGone(g, n.name, false); stop {
					return failed
				}
				return s.vmStart(g)
			}, nil)
		}
	}))
}

// configParams are the config-write parameters that are not VM config.
var configParams = []string{"delete", "revert", "digest", "skiplock", "force", "background_delay"}

// handleConfigSet is POST (async, a qmconfig task) or PUT (sync) .../config.
func (s *Server) handleConfigSet(async bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		g, p := s.unlockedWithParams(w, r)
		if g == nil {
			return
		}
		if d := p["digest"]; d != "" && d != g.digest() {
			writeError(w, http.StatusInternalServerError, "checksum mismatch (file change by other user?)")
			return
		}
		cfg := map[string]string{}
		for k, v := range p {
			if !contains(configParams, k) {
				cfg[k] = v
			}
		}
		splitList := func(v string) []string {
			return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == 0 })
		}
		del, revert := splitList(p["delete"]), splitList(p["revert"])
		if len(cfg) == 0 && len(del) == 0 && len(revert) == 0 {
			writeError(w, http.StatusInternalServerError, "no options specified")
			return
		}
		// update_vm_api's checks of revert, then delete (the cdrom alias is ide2); a revert of a
		// key also set is reported as delete's problem, as PVE does.
		release := s.pveVersion()
		for _, k := range revert {
			_, both := cfg[k]
			switch {
			case !optionExists(k, release):
				paramError(w, "revert", fmt.Sprintf("unknown option '%s'", k))
				return
			case both:
				paramError(w, "delete", fmt.Sprintf("you can't use '-%s' and -revert %s' at the same time", k, k))
				return
			}
		}
		for i, k := range del {
			if k == "cdrom" {
				k, del[i] = "ide2", "ide2"
			}
			_, both := cfg[k]
			switch {
			case both:
				paramError(w, "delete", fmt.Sprintf("you can't use '-%s' and -delete %s' at the same time", k, k))
				return
			case contains(revert, k):
				paramError(w, "revert", fmt.Sprintf("you can't use '-delete %s' and -revert %s' at the same time", k, k))
				return
			case !optionExists(k, release):
				paramError(w, "delete", fmt.Sprintf("unknown option '%s'", k))
				return
			}
		}
		user := requestUser(r)
		c, valid := s.prepareConfig(w, g, user, cfg, del, async)
		if !valid {
			return
		}
		force := boolParam(p["force"])
		apply := func() outcome {
			if s.guests[g.vmid] != g {
				return taskError("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", g.node, g.vmid)
			}
			if c.failure != "" {
				// create_disks failed: PVE keeps what update_vm wrote before that drive (the
				// deletes, the keys it handled first); the simulator writes nothing.
				return taskError("%s", c.failure)
			}
			if msg := deviceChange(user, g.view(), c.set, del); msg != "" {
				return taskError("%s", msg)
			}
			for _, k := range revert {
				delete(g.pending, k) // the current value stays, the pending change goes
			}
			stopped := g.status != "running"
			if stopped {
				g.applyPending()
			}
			generate := stopped && addsCloudInitDrive(g, c.set)
			c.commit(g)
			warnings := s.deleteKeys(g, del, force)
			// qemu-server generates a new cloud-init drive of a stopped VM after writing the
			// config, which stays written when that fails.
			if msg := s.cloudInitProblem(g); generate && msg != "" {
				return taskError("%s", msg)
			}
			return outcome{warnings: warnings}
		}
		if !async {
			if o := apply(); o.err != "" {
				writeError(w, http.StatusInternalServerError, o.err)
				return
			}
			writeData(w, nil)
			return
		}
		writeData(w, s.startTask(r, g.node, "qmconfig", g.vmid, apply, nil))
	}
}

// firstUnused is the first unusedN key the guest's config does not hold, where a detached
// volume goes.
func (g *guest) firstUnused() string {
	for i := 0; ; i++ {
		if _, used := g.config[fmt.Sprintf("unused%d", i)]; !used {
			return fmt.Sprintf("unused%d", i)
		}
	}
}

// deleteKeys removes config keys as PVE does: a disk is detached to the first free unusedN
// (destroyed with force), an unusedN volume is destroyed, and a key that is not set is a
// warning. The caller holds s.mu.
func (s *Server) deleteKeys(g *guest, keys []string, force bool) []string {
	var warnings []string
	for _, k := range keys {
		v, set := g.view()[k]
		if k == "lock" {
			v, set = g.lock, g.lock != ""
		}
		switch {
		case k == "lock" && set:
			g.lock = ""
			continue
		case !set:
			warnings = append(warnings, fmt.Sprintf("cannot delete '%s' - not set in current configuration!", k))
			continue
		case !volumeKey.MatchString(k) || isCDROM(v):
		case force || strings.HasPrefix(k, "unused"):
			if vol, ok := parseVolume(v); ok {
				if st := s.storageOf(g, vol.storage); st != nil {
					st.free(vol.name)
				}
			}
		default:
			if vol, ok := parseVolume(v); ok {
				g.set(g.firstUnused(), vol.storage+":"+vol.name)
			}
		}
		g.unset(k)
	}
	return warnings
}

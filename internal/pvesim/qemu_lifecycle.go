package pvesim

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// stillThere reports whether g is still the guest vmid on node when a task runs: an outside
// actor may have deleted or moved it since the request.
func (s *Server) stillThere(g *guest, node string) bool {
	return s.guests[g.vmid] == g && g.node == node
}

func missingConfig(node string, vmid int) outcome {
	return taskError("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", node, vmid)
}

// startProblem is why starting g on its node fails, "" when it does not. vm_start_nolock
// generates the cloud-init drive first; then PVE 8 runs config_to_command, which refuses more
// vCPUs (sockets x cores) than the node has CPUs, before activate_volumes, which fails on a
// disk the node's storage does not hold. PVE 9 activates the volumes first (qemu-server 9.0.1,
// "activate volumes before config_to_command()", for -blockdev). The caller holds s.mu.
func (s *Server) startProblem(g *guest) string {
	if msg := s.cloudInitProblem(g); msg != "" {
		return msg
	}
	vcpus := func() string {
		if n := s.node(g.node); n != nil && g.maxcpus() > n.cpus {
			return fmt.Sprintf("MAX %d vcpus allowed per VM on this node", n.cpus)
		}
		return ""
	}
	volumes := func() string {
		if v, st := s.missingVolume(g); st != nil {
			return st.activateError(v.name)
		}
		return ""
	}
	checks := []func() string{vcpus, volumes}
	if s.haRules != nil { // PVE 9
		checks = []func() string{volumes, vcpus}
	}
	for _, check := range checks {
		if msg := check(); msg != "" {
			return msg
		}
	}
	return ""
}

// missingVolume is the first disk of g (unused volumes aside, as get_current_vm_volumes
// leaves them) that its node's storage does not hold, with that storage: a guest the HA
// manager recovered away from its disks on local storage. The caller holds s.mu.
func (s *Server) missingVolume(g *guest) (volume, *storage) {
	for _, v := range g.volumes() {
		if strings.HasPrefix(v.key, "unused") {
			continue
		}
		if st := s.storageOf(g, v.storage); st != nil {
			if _, held := st.volumes[v.name]; !held {
				return v, st
			}
		}
	}
	return volume{}, nil
}

// activateError is how starting a VM fails on a volume the storage does not hold:
// activate_volumes' error (LvmThinPlugin's activate_lv, LVMPlugin's lvchange, ZFSPoolPlugin's
// wait for the zvol link), or for file storages QEMU's failure to open it (vm_start_nolock).
func (st *storage) activateError(volname string) string {
	lv := strings.TrimPrefix(st.volumePath(volname), "/dev/")
	switch st.typ {
	case "lvmthin":
		return "no such logical volume " + lv
	case "lvm":
		return fmt.Sprintf("can't activate LV '/dev/%s':   Failed to find logical volume \"%s\"", lv, lv)
	case "zfspool", "zfs":
		return fmt.Sprintf("timeout: no zvol device link for '%s' found after 300 sec.", volname)
	}
	return "start failed: QEMU exited with code 1"
}

// powerParams are each power action's parameters in qemu-server 8.2 (vm_start, vm_stop,
// vm_shutdown, vm_reboot); PVE 9 adds vm_start's powerParams9.
var powerParams = map[string][]string{
	"start": {"skiplock", "stateuri", "migratedfrom", "migration_type", "migration_network", "machine",
		"targetstorage", "timeout", "force-cpu"},
	"stop":     {"skiplock", "migratedfrom", "timeout", "keepActive", "overrule-shutdown"},
	"shutdown": {"skiplock", "timeout", "forceStop", "keepActive"},
	"reboot":   {"timeout"},
}

// powerParams9 are vm_start's parameters since qemu-server 9.0 (conntrack state, 2025-07;
// nets-host-mtu, 2025-09), for migrations.
var powerParams9 = []string{"with-conntrack-state", "nets-host-mtu"}

// rootPowerParams are the parameters each power action takes from root@pam alone, in the
// order qemu-server checks them ("Only root may use this option."; vm_start's
// $get_root_param).
var rootPowerParams = map[string][]string{
	"start": {"stateuri", "skiplock", "migratedfrom", "migration_type", "migration_network", "targetstorage",
		"force-cpu", "with-conntrack-state", "nets-host-mtu"},
	"stop":     {"skiplock", "keepActive", "migratedfrom"},
	"shutdown": {"skiplock", "keepActive"},
}

func (s *Server) handlePower(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	types := map[string]string{"start": "qmstart", "stop": "qmstop", "shutdown": "qmshutdown", "reboot": "qmreboot"}
	action := r.PathValue("action")
	typ, known := types[action]
	if !known {
		notImplemented(w, r)
		return
	}
	g := s.lookup(w, r)
	if g == nil {
		return
	}
	allowed := powerParams[action]
	if action == "start" && s.pveVersion().major >= 9 {
		allowed = append(slices.Clone(allowed), powerParams9...)
	}
	p, valid := readAllowedParams(w, r, allowed...)
	if !valid {
		return
	}
	for _, k := range rootPowerParams[action] {
		if v := p[k]; v != "" && v != "0" && requestUser(r) != "root@pam" {
			paramError(w, k, "Only root may use this option.")
			return
		}
	}
	skiplock := boolParam(p["skiplock"])
	// vm_reboot refuses a VM that does not run before it forks its worker.
	if action == "reboot" && g.status != "running" {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("VM %d not running", g.vmid))
		return
	}
	if res := s.haManaged(g.vmid); res != nil && action != "reboot" {
		// PVE hands power changes of an HA resource to the HA manager.
		s.haTask(w, r, res, map[string]string{"start": "hastart", "stop": "hastop", "shutdown": "hastop"}[action], "")
		return
	}
	node := g.node
	// PVE checks the lock and the state inside the worker, so these are task failures.
	writeData(w, s.startTask(r, node, typ, g.vmid, func() outcome {
		if failed, stop := s.lockedOrGone(g, node, skiplock); stop {
			return failed
		}
		switch action {
		case "start":
			return s.vmStart(g)
		case "reboot":
			if g.status != "running" {
				return taskError("VM %d not running", g.vmid)
			}
			g.applyPending()
			// The reboot task ends with the shutdown; the start that follows fails on its own.
			if s.startProblem(g) != "" {
				g.status = "stopped"
				return taskOK()
			}
			g.boot()
		default:
			g.status = "stopped"
		}
		return taskOK()
	}, nil))
}

// lockedOrGone is a power worker's first check: the guest must still be on node (an outside
// actor may have moved or deleted it) and unlocked, unless skiplock. The caller holds s.mu.
func (s *Server) lockedOrGone(g *guest, node string, skiplock bool) (outcome, bool) {
	switch {
	case !s.stillThere(g, node):
		return missingConfig(node, g.vmid), true
	case g.lock != "" && !skiplock:
		return taskError("VM is locked (%s)", g.lock), true
	}
	return outcome{}, false
}

// vmStart is vm_start's worker once the guest is found and unlocked: templates and running
// guests are refused, pending changes applied, then the start's own checks (startProblem).
// The caller holds s.mu.
func (s *Server) vmStart(g *guest) outcome {
	switch {
	case g.template():
		return taskError("you can't start a vm if it's a template")
	case g.status == "running":
		return taskError("VM %d already running", g.vmid)
	}
	g.applyPending()
	if msg := s.startProblem(g); msg != "" {
		return taskError("%s", msg)
	}
	g.boot()
	return taskOK()
}

var resizeSize = regexp.MustCompile(`^\+?\d+(\.\d+)?[KMGT]?$`)

// handleResize is PUT .../resize (resize_vm): only the parameters and skiplock are checked
// before the resize task forks; the task loads the config and refuses there (checksum, lock,
// a missing disk, a cd-rom, a smaller size), and leaves a disk of the asked size alone.
func (s *Server) handleResize(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.requireOnline(w, r) {
		return
	}
	vmid, valid := parseVMID(r.PathValue("vmid"))
	if !valid {
		paramError(w, "vmid", "invalid format - value does not look like a valid VM ID")
		return
	}
	p, ok := readAllowedParams(w, r, "disk", "size", "digest", "skiplock")
	if !ok {
		return
	}
	key, size := p["disk"], p["size"]
	skiplock := boolParam(p["skiplock"])
	switch {
	case key == "":
		paramError(w, "disk", "property is missing and it is not optional")
		return
	case size == "":
		paramError(w, "size", "property is missing and it is not optional")
		return
	case !resizeSize.MatchString(size):
		paramError(w, "size", "value does not match the regex pattern")
		return
	case skiplock && requestUser(r) != "root@pam":
		paramError(w, "skiplock", "Only root may use this option.")
		return
	}
	node := r.PathValue("node")
	writeData(w, s.startTask(r, node, "resize", vmid, func() outcome {
		g := s.guests[vmid]
		if g == nil || g.node != node || g.typ != "qemu" {
			return missingConfig(node, vmid)
		}
		disk, exists := g.config[key]
		switch {
		case g.clones > 0:
			return taskError("can't lock file '/var/lock/qemu-server/lock-%d.conf' - got timeout", vmid)
		case p["digest"] != "" && p["digest"] != g.digest():
			return taskError("checksum mismatch (file change by other user?)")
		case g.lock != "" && !skiplock:
			return taskError("VM is locked (%s)", g.lock)
		case !exists || !volumeKey.MatchString(key):
			return taskError("disk '%s' does not exist", key)
		case isCDROM(disk):
			return taskError("you can't resize a cdrom")
		}
		current := sizeGiB(disk)
		target := parseSize(strings.TrimPrefix(size, "+"))
		if strings.HasPrefix(size, "+") {
			target += current
		}
		switch {
		case target < current:
			return taskError("shrinking disks is not supported")
		case target == current:
			return taskOK()
		}
		g.config[key] = setDiskSize(disk, target)
		if vol, ok := parseVolume(disk); ok {
			if st := s.storageOf(g, vol.storage); st != nil {
				// A linked clone's volume takes only the space it grew by.
				old := st.volumes[vol.name]
				size := uint64(target * gib)
				st.put(vol.name, volumeSize{size: size, used: old.used + size - min(size, old.size), base: old.base})
			}
		}
		return taskOK()
	}, nil))
}

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, p := s.unlockedWithAllowed(w, r, "purge", "destroy-unreferenced-disks", "skiplock")
	if g == nil {
		return
	}
	// destroy_vm's $early_checks, in their order.
	switch {
	case g.view()["protection"] == "1":
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("can't remove VM %d - protection mode enabled", g.vmid))
		return
	case s.haResourceOf(g.vmid) != nil && !boolParam(p["purge"]):
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("unable to remove VM %d - used in HA resources and purge parameter not set.", g.vmid))
		return
	case g.status == "running":
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("VM %d is running - destroy failed", g.vmid))
		return
	}
	unreferenced := boolParam(p["destroy-unreferenced-disks"])
	g.lock = "destroyed"
	writeData(w, s.startTask(r, g.node, "qmdestroy", g.vmid, func() outcome {
		if s.guests[g.vmid] != g {
			return missingConfig(g.node, g.vmid)
		}
		// destroy_vm keeps a template whose base volume a linked clone still uses.
		for _, v := range g.volumes() {
			if st := s.storageOf(g, v.storage); g.template() && st != nil && st.baseInUse(v.name) {
				return taskError("base volume '%s:%s' is still in use by linked cloned", v.storage, v.name)
			}
		}
		s.dropGuest(g)
		if res := s.haResourceOf(g.vmid); res != nil {
			// purge: delete_service_from_config takes the resource out of resources.cfg and,
			// on PVE 9, out of every HA rule (deleting a rule it was the last resource of).
			delete(s.haResources, res.sid)
			s.purgeFromHARules(res.sid)
		}
		if n := s.node(g.node); n != nil && unreferenced {
			for _, st := range n.storages {
				for name := range st.volumes {
					if strings.HasPrefix(name, fmt.Sprintf("vm-%d-", g.vmid)) || strings.HasPrefix(name, fmt.Sprintf("base-%d-", g.vmid)) {
						st.free(name)
					}
				}
			}
		}
		return taskOK()
	}, func(bool) { g.lock = "" }))
}

func (s *Server) handleMigrate(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, p := s.unlockedWithAllowed(w, r, "target", "online", "force", "with-local-disks", "targetstorage", "bwlimit",
		"migration_type", "migration_network", "with-conntrack-state")
	if g == nil {
		return
	}
	target := s.node(p["target"])
	switch {
	case p["target"] == "":
		paramError(w, "target", "property is missing and it is not optional")
		return
	case target == nil:
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("no such cluster node '%s'", p["target"]))
		return
	case target.name == g.node:
		paramError(w, "target", "target is local node.")
		return
	}
	for _, k := range []string{"force", "migration_type", "migration_network"} {
		if v := p[k]; v != "" && v != "0" && requestUser(r) != "root@pam" {
			paramError(w, k, "Only root may use this option.")
			return
		}
	}
	// migrate_vm checks that the target is a cluster member, not that it is up: the task
	// finds out (targetFailed).
	if g.status == "running" && !boolParam(p["online"]) {
		writeError(w, http.StatusInternalServerError, "can't migrate running VM without --online")
		return
	}
	if res := s.haManaged(g.vmid); res != nil {
		s.haTask(w, r, res, "hamigrate", target.name)
		return
	}
	moves, msg := s.localDiskMoves(g, target, p["targetstorage"])
	if msg != "" {
		writeError(w, http.StatusInternalServerError, msg)
		return
	}
	writeData(w, s.startMigration(r, g, target, moves, boolParam(p["with-local-disks"]), nil))
}

// scanLocalVolumes is phase 1's scan of g's volumes on local storage (QemuMigrate.pm
// scan_local_volumes), nil when the migration may go on: a local ISO ("local cdrom image";
// the cloud-init drive is generated and moves), a base volume linked clones use, an attached
// disk of a running VM without with-local-disks and a physical cd-rom drive are logged, and
// the migration aborts; then a linked clone's volume on local storage aborts it. The caller
// holds s.mu.
func (s *Server) scanLocalVolumes(g *guest, withLocalDisks bool) *outcome {
	volumeErrors, otherErrors := map[string]string{}, []string{}
	var clone, base string
	for _, k := range sortedKeys(g.config) {
		v := g.config[k]
		file, _, _ := strings.Cut(v, ",")
		if !volumeKey.MatchString(k) || file == "none" {
			continue
		}
		if file == "cdrom" {
			otherErrors = append(otherErrors, "can't migrate local cdrom drive")
			continue
		}
		vol, ok := parseVolume(v)
		st := s.storageOf(g, vol.storage)
		if !ok || st == nil || st.shared {
			continue
		}
		volid := vol.storage + ":" + vol.name
		switch {
		case isCDROM(v) && !strings.HasSuffix(vol.name, "-cloudinit"):
			volumeErrors[volid] = "local cdrom image"
		case st.baseInUse(vol.name):
			volumeErrors[volid] = "referenced by linked clone(s)"
		case !isCDROM(v) && !strings.HasPrefix(k, "unused") && g.status == "running" && !withLocalDisks:
			volumeErrors[volid] = "can't live migrate attached local disks without with-local-disks option"
		case st.volumes[vol.name].base != "" && clone == "":
			clone, base = volid, st.volumes[vol.name].base
		}
	}
	aborted := func(err string, log ...string) *outcome {
		log = append(log, "ERROR: migration aborted (duration 00:00:01): Problem found while scanning volumes - "+err)
		return &outcome{err: "migration aborted", log: log}
	}
	if len(volumeErrors) > 0 || len(otherErrors) > 0 {
		var log []string
		for _, volid := range sortedKeys(volumeErrors) {
			log = append(log, fmt.Sprintf("can't migrate local disk '%s': %s", volid, volumeErrors[volid]))
		}
		return aborted("can't migrate VM - check log", append(log, otherErrors...)...)
	}
	if clone != "" {
		return aborted(fmt.Sprintf("can't migrate '%s' as it's a clone of '%s'", clone, base))
	}
	return nil
}

// localDiskMoves are the disks of g on local storage, which move with it to target: each
// needs its storage, or targetstorage, on the target ("storage ... is not available on node",
// check_storage_availability). The caller holds s.mu.
func (s *Server) localDiskMoves(g *guest, target *node, targetStorage string) ([]diskMove, string) {
	var moves []diskMove
	vols := g.volumes()
	// The cloud-init drive is generated on the source and copied like a disk (its volume is
	// not simulated, only its place in the config).
	for _, k := range sortedKeys(g.config) {
		if v, ok := parseVolume(g.config[k]); ok && volumeKey.MatchString(k) && strings.HasSuffix(v.name, "-cloudinit") {
			v.key = k
			vols = append(vols, v)
		}
	}
	for _, v := range vols {
		from := s.storageOf(g, v.storage)
		if from == nil || from.shared {
			continue
		}
		toName := v.storage
		if targetStorage != "" && targetStorage != "1" {
			toName = targetStorage
		}
		to, msg := imageStorage(target, toName)
		if msg != "" {
			return moves, fmt.Sprintf("storage '%s' is not available on node '%s'", toName, target.name)
		}
		moves = append(moves, diskMove{from, to, v.key, v.name, strings.HasSuffix(v.name, "-cloudinit")})
	}
	return moves, ""
}

// diskMove is a disk on local storage that a migration copies to the target's storage;
// generated for the cloud-init drive, whose volume the simulator does not keep.
type diskMove struct {
	from, to  *storage
	key, vol  string
	generated bool
}

// startMigration runs qemu-server's migration of g to target (an HA move runs the same, from
// the LRM): a qmigrate task on the source node, with g locked "migrate" until it ends; then the
// disks in moves are on the target's storage and g is on target. A target that failed while
// the task ran fails it (targetFailed) and g stays on its source. done, when set, runs after
// the task either way. The caller holds s.mu and has checked the request.
func (s *Server) startMigration(r *http.Request, g *guest, target *node, moves []diskMove, withLocalDisks bool, done func(ok bool)) string {
	g.lock = "migrate"
	source := g.node
	// The worker's first step (prepare) tests the ssh connection to the target: a target down
	// before the worker runs (when the task starts, or while it is held) fails there.
	early := !target.online || s.holds("qmigrate")
	upid := s.startTask(r, source, "qmigrate", g.vmid, func() outcome {
		if !s.stillThere(g, source) {
			return missingConfig(source, g.vmid) // recovered elsewhere meanwhile
		}
		if !target.online {
			return targetFailed(g, early)
		}
		for _, m := range moves {
			// phase 1 sizes each local volume (volume_size_info) before copying any.
			if _, held := m.from.volumes[m.vol]; !held && !m.generated {
				_, msg := m.from.volumeSize(m.vol)
				return outcome{err: "migration aborted", log: []string{
					fmt.Sprintf("can't migrate local disk '%s:%s': %s", m.from.name, m.vol, msg),
					"ERROR: migration aborted (duration 00:00:01): Problem found while scanning volumes - can't migrate VM - check log",
				}}
			}
		}
		if o := s.scanLocalVolumes(g, withLocalDisks); o != nil {
			return *o
		}
		for _, m := range moves {
			if !m.generated {
				size := m.from.volumes[m.vol].size
				m.from.free(m.vol)
				m.to.alloc(m.vol, size)
			}
			if m.to != m.from {
				g.config[m.key] = m.to.name + strings.TrimPrefix(g.config[m.key], m.from.name)
			}
		}
		g.node = target.name
		return taskOK()
	}, func(ok bool) {
		g.lock = ""
		if done != nil {
			done(ok)
		}
	})
	// QemuMigrate.pm phase1's first line, logged before the migrate lock is set: while the
	// task runs, what names its target.
	t := s.tasks[upid]
	t.log = append([]string{fmt.Sprintf("starting migration of VM %d to node '%s' (%s)", g.vmid, target.name, s.nodeIP(target))}, t.log...)
	return upid
}

// targetFailed is how qemu-server's migration ends when its target node fails before the
// guest's config has moved there (pve-guest-common AbstractMigrate.pm migrate, qemu-server
// QemuMigrate.pm): the config move is the last step (phase3_cleanup, move_config_to_node), so
// the guest stays on, and owned by, its source node; nothing is copied to the target and the
// migrate lock is released by the phase's cleanup. A target down early (before the worker
// ran: prepare's ssh test) and any stopped guest (prepare or phase 1) fail before phase 2:
// "migration aborted". A running guest whose target fails once the worker runs fails in
// phase 2 (QEMU's migration stream breaks; phase2_cleanup cancels it and the guest runs on at
// the source), and the task ends "migration problems".
func targetFailed(g *guest, early bool) outcome {
	if g.status == "running" && !early {
		return outcome{err: "migration problems", log: []string{
			"migration status error: failed - Unable to write to socket: Broken pipe",
			"ERROR: online migrate failure - aborting",
			"aborting phase 2 - cleanup resources",
			"ERROR: migration finished with problems (duration 00:00:01)",
		}}
	}
	return outcome{err: "migration aborted", log: []string{
		"ERROR: migration aborted (duration 00:00:01): Can't connect to destination address using public key",
	}}
}

// clonedVolume renames a source volume for the clone: base-9000-disk-0 becomes
// vm-<newid>-disk-0, vm-9000-cloudinit becomes vm-<newid>-cloudinit.
var (
	clonedVolume = regexp.MustCompile(`^(base|vm)-\d+-(disk-\d+|cloudinit)`)
	smbiosUUID   = regexp.MustCompile(`uuid=[0-9a-fA-F-]+`)
)

// cloneParams are the clone call's parameters.
var cloneParams = []string{"newid", "name", "description", "target", "full", "storage", "format", "pool", "snapname", "bwlimit"}

func (s *Server) handleClone(w http.ResponseWriter, r *http.Request, src *guest) {
	p, ok := readAllowedParams(w, r, cloneParams...)
	if !ok {
		return
	}
	newid, valid := parseVMID(p["newid"])
	switch {
	case p["newid"] == "":
		paramError(w, "newid", "property is missing and it is not optional")
		return
	case !valid:
		paramError(w, "newid", "invalid format - value does not look like a valid VM ID")
		return
	case p["name"] != "" && !dnsName.MatchString(p["name"]):
		paramError(w, "name", "invalid format - value does not look like a valid DNS name")
		return
	case p["format"] != "" && !contains([]string{"raw", "qcow2", "vmdk"}, p["format"]):
		paramError(w, "format", fmt.Sprintf("value '%s' does not have a value in the enumeration 'raw, qcow2, vmdk'", p["format"]))
		return
	}
	if pool := p["pool"]; pool != "" && !s.pools[pool] {
		writeError(w, http.StatusForbidden, fmt.Sprintf("Permission check failed (pool '%s' does not exist)", pool))
		return
	}
	srcNode := s.node(src.node)
	target := srcNode
	if t := p["target"]; t != "" {
		// clone_vm checks that the target is a cluster member, not that it is up: the clone
		// runs on the source node and its config moves to the target's directory in pmxcfs.
		if target = s.node(t); target == nil {
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("no such cluster node '%s'", t))
			return
		}
	}
	full := !src.template()
	if v, given := p["full"]; given {
		full = boolParam(v)
	}
	if status, msg := s.cloneCheck(src, srcNode, target, full, p); msg != "" {
		if status == http.StatusBadRequest {
			paramError(w, "storage", msg)
			return
		}
		writeError(w, status, msg)
		return
	}
	// The config-file check looks only at the node the call runs on; an id taken elsewhere
	// fails inside the task.
	if other, taken := s.guests[newid]; taken && other.node == src.node {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("unable to create VM %d: config file already exists", newid))
		return
	}
	clone := &guest{vmid: newid, node: target.name, typ: "qemu", status: "stopped", pool: p["pool"], config: map[string]string{}, hasStats: !s.statsLag}
	var allocs []allocation
	for _, k := range sortedKeys(src.config) {
		v := src.config[k]
		switch {
		case k == "template" || k == "parent" || k == "vmstate" || strings.HasPrefix(k, "unused"):
			continue
		case strings.HasPrefix(k, "net"):
			v = withMAC(v, s.rng, true)
		case k == "smbios1":
			v = smbiosUUID.ReplaceAllString(v, "uuid="+randomUUID(s.rng))
		case k == "vmgenid":
			v = randomUUID(s.rng)
		case volumeKey.MatchString(k):
			vol, isVolume := parseVolume(v)
			if !isVolume || !clonedVolume.MatchString(vol.name) {
				break
			}
			// clone_disk copies each disk, and the cloud-init drive (never a cd-rom to clone_vm),
			// to the storage asked for, else to its own.
			stName := vol.storage
			if p["storage"] != "" && full && (!isCDROM(v) || strings.HasSuffix(vol.name, "-cloudinit")) {
				stName = p["storage"]
			}
			name := clonedVolume.ReplaceAllString(vol.name, fmt.Sprintf("vm-%d-$2", newid))
			_, rest, _ := strings.Cut(v, ",")
			v = stName + ":" + name
			if rest != "" {
				v += "," + rest
			}
			if st := target.storage(stName); st != nil && !isCDROM(v) {
				size := volumeSize{size: uint64(sizeGiB(v) * gib)}
				if full {
					size.used = size.size
				} else {
					size.base = vol.name
				}
				allocs = append(allocs, allocation{st, name, size})
			}
		}
		clone.config[k] = v
	}
	clone.config["name"] = p["name"]
	if clone.config["name"] == "" {
		clone.config["name"] = "Copy-of-VM-" + src.name()
	}
	if d := p["description"]; d != "" {
		clone.config["description"] = d
	}
	src.clones++
	// The worker writes the new config, locked, before it copies the disks; an id taken on
	// another node makes it fail instead.
	other, taken := s.guests[newid]
	if !taken {
		clone.lock = "clone"
		change{set: map[string]string{}, alloc: allocs}.commit(clone)
		s.guests[newid] = clone
	}
	writeData(w, s.startTask(r, src.node, "qmclone", src.vmid, func() outcome {
		if taken {
			return taskError("clone failed: unable to create VM %d - VM %d already exists on node '%s'", newid, newid, other.node)
		}
		return taskOK()
	}, func(ok bool) {
		src.clones--
		s.settleNew(clone, ok)
	}))
}

// settleNew ends the lock of a guest a create or clone task made: a failed task removes it
// with its disks, as PVE cleans up after a failed create.
func (s *Server) settleNew(g *guest, ok bool) {
	if s.guests[g.vmid] != g {
		return
	}
	g.lock = ""
	if !ok {
		s.dropGuest(g)
	}
}

// dropGuest removes a guest and frees its disks.
func (s *Server) dropGuest(g *guest) {
	for _, v := range g.volumes() {
		if st := s.storageOf(g, v.storage); st != nil {
			st.free(v.name)
		}
	}
	delete(s.guests, g.vmid)
}

// cloneCheck applies clone_vm's checks before it forks ($load_and_check, in its order) from
// the storage on: the status and message of a refusal (400: of the storage parameter), or
// 0 and "".
func (s *Server) cloneCheck(src *guest, srcNode, target *node, full bool, p map[string]string) (int, string) {
	const failed = http.StatusInternalServerError
	// $load_and_check: the storage enabled here, for images, and on another target shared.
	if name := p["storage"]; name != "" {
		st := srcNode.storage(name)
		switch {
		case st == nil && !s.storageExists(name):
			return failed, fmt.Sprintf("storage '%s' does not exist", name)
		case st == nil:
			return failed, fmt.Sprintf("storage '%s' is not available on node '%s'", name, srcNode.name)
		case !contains(st.content, "images"):
			return http.StatusBadRequest, fmt.Sprintf("storage '%s' does not support vm images", name)
		case target != srcNode && target.storage(name) == nil:
			return failed, fmt.Sprintf("storage '%s' is not available on node '%s'", name, target.name)
		case target != srcNode && !st.shared:
			return failed, fmt.Sprintf("can't clone to non-shared storage '%s'", name)
		}
	}
	switch {
	case src.lock != "":
		return failed, fmt.Sprintf("VM is locked (%s)", src.lock)
	case p["snapname"] != "": // the simulator's VMs have no snapshots
		return failed, fmt.Sprintf("snapshot '%s' does not exist", p["snapname"])
	case !full && p["storage"] != "":
		return failed, "parameter 'storage' not allowed for linked clones"
	case !full && p["format"] != "":
		return failed, "parameter 'format' not allowed for linked clones"
	}
	if !full {
		for _, v := range src.volumes() {
			// tpmstate0 (and the cloud-init drive, a cd-rom here) is copied even into a linked clone.
			if v.key == "tpmstate0" || strings.HasPrefix(v.key, "unused") {
				continue
			}
			if msg := s.linkedCloneProblem(src, v.key, v); msg != "" {
				return failed, msg
			}
		}
	}
	if target != srcNode {
		for _, v := range src.volumes() {
			if st := srcNode.storage(v.storage); !strings.HasPrefix(v.key, "unused") && (st == nil || !st.shared) {
				return failed, fmt.Sprintf("can't clone VM to node '%s' (VM uses local storage)", target.name)
			}
		}
	}
	return 0, ""
}

package pvesim

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// driveNames are qemu-server's valid_drive_names (Drive.pm), in its order: the enum of the
// template call's disk parameter. PVE 8.2 and 9 have the same.
var driveNames = func() []string {
	var names []string
	for _, bus := range []struct {
		name  string
		count int
	}{{"ide", 4}, {"scsi", 31}, {"virtio", 16}, {"sata", 6}} {
		for i := range bus.count {
			names = append(names, fmt.Sprintf("%s%d", bus.name, i))
		}
	}
	return append(names, "efidisk0", "tpmstate0")
}()

// noTemplateFeature are the storage types whose volumes lack pve-storage's 'template'
// feature (volume_has_feature): LVM (commented out as "fixme" in LVMPlugin), iSCSI and PBS;
// their create_base dies. The file storages (Plugin: raw, qcow2, vmdk), btrfs, lvmthin, rbd,
// zfspool and zfs have it for a volume that is not a base volume yet ('current'), and 'clone'
// for a base volume (btrfs for a current raw volume too).
var noTemplateFeature = []string{"lvm", "iscsi", "pbs"}

// baseCapable tells whether st can hold base volumes (and linked clones of them).
func baseCapable(st *storage) bool { return !slices.Contains(noTemplateFeature, st.typ) }

// newVolume names a new disk of g on st as create_disks does: vdisk_alloc's next free name,
// which vdisk_create_base turns into a base volume when g is a template (is_template of the
// create's parameters, or of the config a write changes); a storage without base volumes then
// refuses ("can't create base images in lvm storage").
func (g *guest) newVolume(st *storage) (string, string) {
	name := g.nextVolume(st)
	switch {
	case !g.template():
		return name, ""
	case !baseCapable(st):
		return "", fmt.Sprintf("can't create base images in %s storage", st.typ)
	}
	return "base-" + strings.TrimPrefix(name, "vm-"), ""
}

// linkedCloneProblem is clone_vm's refusal of a linked clone for drive key of g, whose volume
// needs pve-storage's 'clone' feature (a base volume; btrfs clones any raw volume), or "". The
// message names the volume from qemu-server 8.3 on (PVE 9).
func (s *Server) linkedCloneProblem(g *guest, key string, vol volume) string {
	if st := s.storageOf(g, vol.storage); st != nil && baseCapable(st) && (strings.HasPrefix(vol.name, "base-") || st.typ == "btrfs") {
		return ""
	}
	if s.pveVersion().major < 9 {
		return fmt.Sprintf("Linked clone feature is not supported for drive '%s'", key)
	}
	return fmt.Sprintf("Linked clone feature is not supported for '%s:%s' (%s)", vol.storage, vol.name, key)
}

// handleTemplate is POST /nodes/{node}/qemu/{vmid}/template (qemu-server API2/Qemu.pm,
// method 'template'; the same in PVE 8.2 and 9): $load_and_check refuses before the qmtemplate
// worker forks and again inside it, under the config's file lock; the worker sets template: 1
// and calls template_create. VM.Allocate is the simulator's users' (all-powerful). PVE does
// not look at HA: an HA-managed VM converts like any other once stopped.
func (s *Server) handleTemplate(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.lookup(w, r)
	if g == nil {
		return
	}
	p, ok := readAllowedParams(w, r, "disk")
	if !ok {
		return
	}
	disk := p["disk"]
	if disk != "" && !slices.Contains(driveNames, disk) {
		paramError(w, "disk", fmt.Sprintf("value '%s' does not have a value in the enumeration '%s'", disk, strings.Join(driveNames, ", ")))
		return
	}
	if msg := templateProblem(g, disk); msg != "" {
		writeError(w, http.StatusInternalServerError, msg)
		return
	}
	node := g.node
	writeData(w, s.startTask(r, node, "qmtemplate", g.vmid, func() outcome {
		switch {
		case !s.stillThere(g, node):
			return missingConfig(node, g.vmid)
		case g.clones > 0: // a clone reading the VM holds its file lock (lock_config)
			return taskError("can't lock file '/var/lock/qemu-server/lock-%d.conf' - got timeout", g.vmid)
		}
		if msg := templateProblem(g, disk); msg != "" {
			return taskError("%s", msg)
		}
		g.config["template"] = "1"
		s.createBases(g, disk)
		return taskOK()
	}, nil))
}

// templateProblem is $load_and_check's refusal, in its order, or "": check_lock, snapshots
// (the simulator's VMs have none), a template without disk, a running VM.
func templateProblem(g *guest, disk string) string {
	switch {
	case g.lock != "":
		return fmt.Sprintf("VM is locked (%s)", g.lock)
	case g.template() && disk == "":
		return "you can't convert a template to a template"
	case g.status == "running":
		return "you can't convert a VM to template if VM is running"
	}
	return ""
}

// createBases is template_create (QemuServer.pm): each drive, or only disk when given, that is
// no cd-rom (a cloud-init drive is one there) and whose volume has the storage's 'template'
// feature becomes a base volume (vdisk_create_base: vm-N-disk-M is renamed base-N-disk-M,
// read-only; a linked clone's stays layered on its base). Other volumes are left as they are,
// without a word. Detached (unusedN) volumes are not drives.
func (s *Server) createBases(g *guest, disk string) {
	for _, key := range driveNames {
		value, set := g.config[key]
		if !set || isCDROM(value) || disk != "" && key != disk {
			continue
		}
		vol, ok := parseVolume(value)
		st := s.storageOf(g, vol.storage)
		if !ok || st == nil || !baseCapable(st) || !strings.HasPrefix(vol.name, "vm-") {
			continue
		}
		base := "base-" + strings.TrimPrefix(vol.name, "vm-")
		size := st.volumes[vol.name]
		st.free(vol.name)
		st.put(base, size)
		_, rest, _ := strings.Cut(value, ",")
		g.config[key] = vol.storage + ":" + base
		if rest != "" {
			g.config[key] += "," + rest
		}
	}
}

package pvesim

import (
	"fmt"
	"net/http"
	"strings"
)

// moveDiskParams are qemu-server's move_vm_disk parameters; moving to another VM
// (target-vmid, target-disk, target-digest) is not simulated and refused as unknown.
var moveDiskParams = []string{"disk", "storage", "format", "delete", "digest", "bwlimit"}

// handleMoveDisk is POST /nodes/{node}/qemu/{vmid}/move_disk (qemu-server API2/Qemu.pm
// move_vm_disk): a qmmove task copies the disk's volume to another storage of the node; the
// source volume stays as unusedN unless delete is set. The checks of load_and_check_move run
// before the task starts: lock, digest, a disk with a volume, no cd-rom, not the same storage
// with the same format, a storage that takes images.
func (s *Server) handleMoveDisk(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, p := s.unlockedWithAllowed(w, r, moveDiskParams...)
	if g == nil {
		return
	}
	key, storeID := p["disk"], p["storage"]
	switch {
	case key == "":
		paramError(w, "disk", "property is missing and it is not optional")
		return
	case !volumeKey.MatchString(key):
		paramError(w, "disk", fmt.Sprintf("value '%s' does not have a value in the enumeration of drive names", key))
		return
	case storeID == "":
		paramError(w, "storage", "property is missing and it is not optional")
		return
	case p["digest"] != "" && p["digest"] != g.digest():
		writeError(w, http.StatusInternalServerError, "detected modified configuration - file changed by other user? Try again.")
		return
	}
	value, exists := g.config[key]
	vol, hasVolume := parseVolume(value)
	n := s.node(g.node)
	switch {
	case !exists:
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("disk '%s' does not exist", key))
		return
	case isCDROM(value):
		writeError(w, http.StatusInternalServerError, "you can't move a cdrom")
		return
	case !hasVolume:
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("disk '%s' has no associated volume", key))
		return
	case vol.storage == storeID && (p["format"] == "" || p["format"] == "raw"):
		writeError(w, http.StatusInternalServerError, "you can't move to the same storage with same format")
		return
	}
	to, msg := s.activeStorage(g.node, storeID)
	if msg != "" {
		writeError(w, http.StatusInternalServerError, msg)
		return
	}
	if !contains(to.content, "images") {
		paramError(w, "storage", fmt.Sprintf("storage '%s' does not support vm images", storeID))
		return
	}
	from := n.storage(vol.storage)
	del := boolParam(p["delete"])
	node := g.node
	writeData(w, s.startTask(r, node, "qmmove", g.vmid, func() outcome {
		if !s.stillThere(g, node) {
			return missingConfig(node, g.vmid)
		}
		size := volumeSize{}
		if from != nil {
			size = from.volumes[vol.name]
		}
		name := g.nextVolume(to)
		to.alloc(name, size.size) // a full copy
		g.config[key] = to.name + ":" + name
		if _, rest, _ := strings.Cut(value, ","); rest != "" {
			g.config[key] += "," + rest
		}
		switch {
		case del && from != nil:
			from.free(vol.name)
		case !del:
			g.config[g.firstUnused()] = vol.storage + ":" + vol.name
		}
		return taskOK()
	}, nil))
}

// handleCloudInitUpdate is PUT /nodes/{node}/qemu/{vmid}/cloudinit (qemu-server
// cloudinit_update): the cloud-init drive is generated again from the current config, which
// fails as a start would when a cicustom snippet is missing; without a cloud-init drive there
// is nothing to do.
func (s *Server) handleCloudInitUpdate(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, _ := s.unlockedWithAllowed(w, r)
	if g == nil {
		return
	}
	if msg := s.cloudInitProblem(g); msg != "" {
		writeError(w, http.StatusInternalServerError, msg)
		return
	}
	writeData(w, nil)
}

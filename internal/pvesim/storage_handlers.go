package pvesim

// A storage's status and a volume's attributes, as pve-storage's API2/Storage/Status.pm
// (read_status) and API2/Storage/Content.pm (info) answer them, and the size qemu-server
// reads when a drive names an existing volume.

import (
	"fmt"
	"net/http"
	"strings"
)

// handleStorageStatus is GET /nodes/{node}/storage/{storage}/status: storage_info's entry for
// the storage as the node sees it. Every storage of the cluster has one; on a node it is not
// enabled on, enabled is 0, and a storage that is not active reports 0 bytes. A storage
// the cluster does not have is a 400 "No such storage.".
func (s *Server) handleStorageStatus(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.onlineParams(w, r); !ok {
		return
	}
	name := r.PathValue("storage")
	if msg := checkStorageID(name); msg != "" {
		paramError(w, "storage", "invalid format - "+msg)
		return
	}
	st := s.node(r.PathValue("node")).storage(name)
	enabled := st != nil
	if st == nil {
		st = s.anyStorage(name)
	}
	if st == nil {
		paramError(w, "storage", "No such storage.")
		return
	}
	out := map[string]any{"type": st.typ, "content": strings.Join(st.content, ","), "shared": b2i(st.shared),
		"enabled": b2i(enabled), "active": 0, "total": 0, "used": 0, "avail": 0}
	if enabled && !st.inactive {
		out["active"], out["total"], out["used"], out["avail"] = 1, st.total, st.used, st.total-min(st.used, st.total)
	}
	writeData(w, out)
}

// anyStorage is storage name on whichever node has it, nil when the cluster has none.
func (s *Server) anyStorage(name string) *storage {
	for _, n := range s.nodes {
		if st := n.storage(name); st != nil {
			return st
		}
	}
	return nil
}

// handleVolumeInfo is GET /nodes/{node}/storage/{storage}/content/{volume}: path, size, used
// and format of a volume. The volume is a full volume id (its storage must match) or a name
// on {storage}; pve-storage registers the content path with an empty fragment delimiter, so
// the volume may contain slashes.
func (s *Server) handleVolumeInfo(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.onlineParams(w, r); !ok {
		return
	}
	storeID, volume := r.PathValue("storage"), r.PathValue("volume")
	volname := volume
	if strings.Contains(volume, ":") {
		m := volumeIDText.FindStringSubmatch(volume)
		switch {
		case m == nil:
			paramError(w, "volume", fmt.Sprintf("unable to parse volume ID '%s'\n", volume))
			return
		case m[1] != storeID:
			paramError(w, "volume", fmt.Sprintf("storage ID mismatch (%s != %s)\n", m[1], storeID))
			return
		}
		volname = m[2]
	}
	st, msg := s.activeStorage(r.PathValue("node"), storeID)
	if msg != "" {
		writeError(w, http.StatusInternalServerError, msg)
		return
	}
	v, msg := st.volumeSize(volname)
	if msg == "" && v.size == 0 {
		msg = fmt.Sprintf("volume '%s:%s' has size zero", storeID, volname)
	}
	if msg != "" {
		writeError(w, http.StatusInternalServerError, msg)
		return
	}
	writeData(w, map[string]any{"path": st.volumePath(volname), "size": v.size, "used": v.used, "format": "raw"})
}

// volumeSize is volume_size_info of an image volume: its sizes, or the storage plugin's
// complaint when the volume is not there (a directory storage finds no file to stat and
// so no format; the block storages' tools fail to open it).
func (st *storage) volumeSize(volname string) (volumeSize, string) {
	if v, ok := st.volumes[volname]; ok {
		return v, ""
	}
	volid := st.name + ":" + volname
	switch st.typ {
	case "rbd":
		return volumeSize{}, fmt.Sprintf("rbd error: rbd: error opening image %s: (2) No such file or directory", volname)
	case "lvm", "lvmthin":
		return volumeSize{}, fmt.Sprintf("can't get size of '%s': Failed to find logical volume \"%s\"", st.volumePath(volname), strings.TrimPrefix(st.volumePath(volname), "/dev/"))
	case "zfspool", "zfs":
		return volumeSize{}, "Could not get zfs volume size"
	}
	return volumeSize{}, fmt.Sprintf("volume_size_info on '%s' failed - no format", volid)
}

// volumePath is where a volume lives on a node, as PVE::Storage::path names it for the
// storage's type (the simulator's volume group, pool and directory are named after the
// storage).
func (st *storage) volumePath(volname string) string {
	switch st.typ {
	case "rbd":
		return fmt.Sprintf("rbd:%s/%s", st.name, volname)
	case "lvm", "lvmthin":
		return fmt.Sprintf("/dev/%s/%s", st.name, volname)
	case "zfspool", "zfs":
		return fmt.Sprintf("/dev/zvol/%s/%s", st.name, volname)
	}
	return fmt.Sprintf("/mnt/pve/%s/images/%s", st.name, volname)
}

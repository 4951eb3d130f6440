package pvesim

// A storage's status and a volume's attributes, as pve-storage's API2/Storage/Status.pm
// (read_status) and API2/Storage/Content.pm (info) answer them, and the size qemu-server
// reads when a drive names an existing volume.

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// storageInfo is pve-storage's storage_info entry for a storage of the cluster as node n sees
// it: enabled 0 where it is not enabled, and 0 bytes unless it is active there.
func storageInfo(n *node, st *storage) map[string]any {
	// A local storage is one object per node: the node's own copy holds its figures.
	own := n.storage(st.name)
	enabled := own != nil
	if enabled {
		st = own
	}
	out := map[string]any{"type": st.typ, "content": strings.Join(st.content, ","), "shared": b2i(st.shared),
		"enabled": b2i(enabled), "active": 0, "total": 0, "used": 0, "avail": 0}
	if enabled && !st.inactive {
		out["active"], out["total"], out["used"], out["avail"] = 1, st.total, st.used, st.total-min(st.used, st.total)
	}
	return out
}

// handleStorageStatus is GET /nodes/{node}/storage/{storage}/status (Status.pm read_status):
// the storage's storage_info entry; a storage the cluster does not have is a 400 "No such
// storage.".
func (s *Server) handleStorageStatus(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.onlineParams(w, r); !ok {
		return
	}
	name := r.PathValue("storage")
	if !validStorageID(w, name) {
		return
	}
	st := s.anyStorage(name)
	if st == nil {
		paramError(w, "storage", "No such storage.")
		return
	}
	writeData(w, storageInfo(s.node(r.PathValue("node")), st))
}

// handleNodeStorages is GET /nodes/{node}/storage (Status.pm index): every storage of the
// cluster with its storage_info entry and used_fraction when it has a size, sorted by id.
// content keeps the enabled storages holding one of the types, enabled those enabled, storage
// one storage (400 when the cluster has none), target the shared storages enabled on both
// nodes.
func (s *Server) handleNodeStorages(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.onlineParams(w, r, "content", "enabled", "format", "storage", "target")
	if !ok {
		return
	}
	n := s.node(r.PathValue("node"))
	if id := p["storage"]; id != "" && s.anyStorage(id) == nil {
		paramError(w, "storage", "No such storage.")
		return
	}
	target := s.node(p["target"])
	if p["target"] != "" && p["target"] != "localhost" && target == nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("no such cluster node '%s'", p["target"]))
		return
	}
	wanted := strings.FieldsFunc(p["content"], func(r rune) bool { return r == ',' || r == ';' || r == ' ' })
	rows := []map[string]any{}
	for _, st := range s.clusterStorages() {
		info := storageInfo(n, st)
		enabled := info["enabled"] == 1
		switch {
		case len(wanted) > 0 && (!enabled || !slices.ContainsFunc(wanted, func(c string) bool { return contains(st.content, c) })):
			continue
		case boolParam(p["enabled"]) && !enabled, p["storage"] != "" && p["storage"] != st.name:
			continue
		case target != nil && target != n && (!st.shared || !enabled || target.storage(st.name) == nil):
			continue
		}
		info["storage"] = st.name
		if total, _ := info["total"].(uint64); total > 0 {
			info["used_fraction"] = float64(info["used"].(uint64)) / float64(total)
		}
		rows = append(rows, info)
	}
	writeData(w, rows)
}

// clusterStorages are the cluster's storages (storage.cfg), one per id, sorted by id.
func (s *Server) clusterStorages() []*storage {
	byName := map[string]*storage{}
	for _, n := range s.nodes {
		for _, st := range n.storages {
			if byName[st.name] == nil {
				byName[st.name] = st
			}
		}
	}
	out := make([]*storage, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[name])
	}
	return out
}

// validStorageID answers a {storage} that is not a storage ID with PVE's 400 (its schema's
// pve-storage-id format).
func validStorageID(w http.ResponseWriter, id string) bool {
	if msg := checkStorageID(id); msg != "" {
		paramError(w, "storage", "invalid format - "+msg)
		return false
	}
	return true
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
// and format of a volume (an image, or a file: iso, vztmpl, snippets raw, import images their
// own format). The volume is a full volume id (its storage must match) or a name
// on {storage}; pve-storage registers the content path with an empty fragment delimiter, so
// the volume may contain slashes.
func (s *Server) handleVolumeInfo(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.onlineParams(w, r); !ok {
		return
	}
	storeID := r.PathValue("storage")
	volname, ok := realVolumeName(w, storeID, r.PathValue("volume"))
	if !ok {
		return
	}
	st, msg := s.activeStorage(r.PathValue("node"), storeID)
	if msg != "" {
		writeError(w, http.StatusInternalServerError, msg)
		return
	}
	if f, format, isFile := st.fileVolume(volname); isFile {
		writeData(w, map[string]any{"path": st.filePath(volname), "size": f.size, "used": f.size, "format": format})
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

// realVolumeName is Content.pm's real_volume_id for the content calls: the volume's name on
// storeID, from a name or a full volume id of that storage, or a 400 for the volume.
func realVolumeName(w http.ResponseWriter, storeID, volume string) (string, bool) {
	if !strings.Contains(volume, ":") {
		return volume, true
	}
	m := volumeIDText.FindStringSubmatch(volume)
	switch {
	case m == nil:
		paramError(w, "volume", fmt.Sprintf("unable to parse volume ID '%s'\n", volume))
		return "", false
	case m[1] != storeID:
		paramError(w, "volume", fmt.Sprintf("storage ID mismatch (%s != %s)\n", m[1], storeID))
		return "", false
	}
	return m[2], true
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

// handleStorageConfig is GET /storage/{storage} (pve-storage API2/Storage/Config.pm read): the
// storage's storage.cfg section with its id and the file's digest; content and nodes as comma
// lists, shared 1 where storage.cfg (or the type) makes it shared, path for file based types.
// Type-specific keys (vgname, pool, server, export...) are not simulated.
func (s *Server) handleStorageConfig(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := readAllowedParams(w, r); !ok {
		return
	}
	name := r.PathValue("storage")
	if !validStorageID(w, name) {
		return
	}
	st := s.anyStorage(name)
	if st == nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("storage '%s' does not exist", name))
		return
	}
	writeData(w, s.storageSection(st))
}

// storageSection is a storage's storage.cfg section as Config.pm answers it.
func (s *Server) storageSection(st *storage) map[string]any {
	out := map[string]any{"storage": st.name, "type": st.typ, "content": strings.Join(st.content, ","), "digest": s.storageDigest()}
	if st.shared {
		out["shared"] = 1
	}
	if fileStorage(st.typ) {
		out["path"] = "/mnt/pve/" + st.name
	}
	var nodes []string
	for _, n := range s.nodes {
		if n.storage(st.name) != nil {
			nodes = append(nodes, n.name)
		}
	}
	if len(nodes) < len(s.nodes) {
		out["nodes"] = strings.Join(nodes, ",")
	}
	return out
}

// storageDigest is the SHA-1 of storage.cfg as the simulator would write it.
func (s *Server) storageDigest() string {
	h := sha1.New()
	for _, st := range s.clusterStorages() {
		fmt.Fprintf(h, "%s: %s\n\tcontent %s\n\tshared %d\n", st.typ, st.name, strings.Join(st.content, ","), b2i(st.shared))
		for _, n := range s.nodes {
			if n.storage(st.name) != nil {
				fmt.Fprintf(h, "\tnode %s\n", n.name)
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

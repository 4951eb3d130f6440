package pvesim

// Snippets and storage content, as pve-storage and qemu-server handle them. PVE has no API to
// upload a snippet (the upload call takes iso, vztmpl and import only): an admin copies the
// file into the storage's snippets directory, which the cluster file's snippets list and
// PutSnippet play. GET .../storage/{storage}/content lists what a storage holds; cicustom
// volumes are only checked when the cloud-init drive is generated (at start, or when a
// stopped VM gains the drive), as qemu-server's Cloudinit.pm does.

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
)

// storageContents are the content types of PVE's storage plugins (plugindata), by type;
// dir-like types take every one.
var storageContents = map[string][]string{
	"dir": allContents, "nfs": allContents, "cifs": allContents, "btrfs": allContents, "glusterfs": allContents,
	"cephfs":  {"vztmpl", "iso", "backup", "snippets", "import"},
	"lvm":     {"images", "rootdir", "none"},
	"lvmthin": {"images", "rootdir", "none"},
	"rbd":     {"images", "rootdir", "none"},
	"zfspool": {"images", "rootdir", "none"},
	"zfs":     {"images", "none"},
	"iscsi":   {"images", "none"},
	"pbs":     {"backup", "none"},
}

var allContents = []string{"images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import", "none"}

// snippetSpecSize is the size of a snippet the cluster file places.
const snippetSpecSize = 512

// snippetName is a file a snippets directory can hold: a name, no directory.
var snippetName = regexp.MustCompile(`^[^/\x00]+$`)

// fileStorage tells whether a storage type keeps volumes as files under a path (where
// snippets live); block storages parse volume names of their own.
func fileStorage(typ string) bool {
	return typ == "" || slices.Equal(storageContents[typ], allContents) || typ == "cephfs"
}

func (st *storage) putSnippet(name string, size int) {
	if st.snippets == nil {
		st.snippets = map[string]int{}
	}
	st.snippets[name] = size
}

// PutSnippet places a snippet file of size bytes on storage as seen from node (the same file
// on every node for a shared storage), as an admin copying it into the snippets directory
// does. The storage must be enabled on the node and have the snippets content type.
func (s *Server) PutSnippet(node, storageName, name string, size int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.node(node)
	if n == nil {
		return fmt.Errorf("no node %q", node)
	}
	st := n.storage(storageName)
	switch {
	case st == nil:
		return fmt.Errorf("storage %q is not enabled on %s", storageName, node)
	case !contains(st.content, "snippets"):
		return fmt.Errorf("storage %q has no snippets content type (content: %s)", storageName, strings.Join(st.content, ","))
	case !snippetName.MatchString(name):
		return fmt.Errorf("%q is not a file name", name)
	}
	st.putSnippet(name, size)
	return nil
}

// handleStorageContent is GET /nodes/{node}/storage/{storage}/content: the volumes of the
// content types the storage has (or of the one asked for), sorted by volume id.
func (s *Server) handleStorageContent(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, valid := s.onlineUncheckedParams(w, r)
	if !valid {
		return
	}
	delete(p, "storage")
	if !onlyAllowed(w, p, "content", "vmid") {
		return
	}
	name, content := r.PathValue("storage"), p["content"]
	if !validStorageID(w, name) {
		return
	}
	if content != "" && !contains(allContents, content) {
		paramError(w, "content", fmt.Sprintf("invalid format - invalid content type '%s'", content))
		return
	}
	vmid := -1
	if v, ok := p["vmid"]; ok {
		id, valid := parseVMID(v)
		if !valid {
			paramError(w, "vmid", "invalid format - value does not look like a valid VM ID")
			return
		}
		vmid = id
	}
	st, msg := s.activeStorage(r.PathValue("node"), name)
	if msg != "" {
		writeError(w, http.StatusInternalServerError, msg)
		return
	}
	rows := []map[string]any{}
	if (content == "" || content == "images") && contains(st.content, "images") {
		for vol, v := range st.volumes {
			m := volumeOwner.FindStringSubmatch(vol)
			if m != nil && (vmid < 0 || atoi(m[1]) == vmid) {
				rows = append(rows, map[string]any{"volid": st.name + ":" + vol, "content": "images", "format": "raw",
					"size": v.size, "vmid": atoi(m[1]), "ctime": volumeCTime})
			}
		}
	}
	// Snippets have no owner: a vmid filter leaves them out, as in pve-storage.
	if (content == "" || content == "snippets") && contains(st.content, "snippets") && vmid < 0 {
		for file, size := range st.snippets {
			rows = append(rows, map[string]any{"volid": st.name + ":snippets/" + file, "content": "snippets",
				"format": "snippet", "size": size, "ctime": volumeCTime})
		}
	}
	// So do the template, ISO and import files (storage_files.go).
	for volname, f := range st.files {
		c, file, _ := strings.Cut(volname, "/")
		if (content == "" || content == c) && contains(st.content, c) && vmid < 0 {
			rows = append(rows, map[string]any{"volid": st.name + ":" + volname, "content": c,
				"format": fileFormat(c, file), "size": f.size, "ctime": volumeCTime})
		}
	}
	slices.SortFunc(rows, func(a, b map[string]any) int {
		return strings.Compare(strings.ToLower(a["volid"].(string)), strings.ToLower(b["volid"].(string)))
	})
	writeData(w, rows)
}

// volumeOwner takes the owner VMID from an image volume name (vm-100-disk-0, base-9000-disk-0).
var volumeOwner = regexp.MustCompile(`^(?:base|vm|subvol)-(\d+)-`)

// volumeCTime is the creation time the simulator reports for every volume.
var volumeCTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

// activeStorage is storage name as node sees it, or pve-storage's complaint: unknown in the
// cluster, not enabled on the node, not online. The caller holds s.mu.
func (s *Server) activeStorage(node, name string) (*storage, string) {
	st := s.node(node).storage(name)
	switch {
	case st == nil && !s.storageExists(name):
		return nil, fmt.Sprintf("storage '%s' does not exist", name)
	case st == nil:
		return nil, fmt.Sprintf("storage '%s' is not available on node '%s'", name, node)
	case st.inactive:
		return nil, fmt.Sprintf("storage '%s' is not online", name)
	}
	return st, ""
}

func (s *Server) storageExists(name string) bool {
	for _, n := range s.nodes {
		if n.storage(name) != nil {
			return true
		}
	}
	return false
}

// cicustomKeys are the cicustom volumes in the order qemu-server reads them.
var cicustomKeys = []string{"network", "user", "meta", "vendor"}

// cloudInitProblem is why generating g's cloud-init drive fails, "" when it does not: each
// cicustom volume must parse on its storage as a snippet (parse_volname) and the file must be
// there on g's node (abs_filesystem_path). Without a cloud-init drive nothing is generated.
// The caller holds s.mu.
func (s *Server) cloudInitProblem(g *guest) string {
	cfg := g.view()
	if !hasCloudInitDrive(g.vmid, cfg) || cfg["cicustom"] == "" {
		return ""
	}
	files, _ := parsePropertyString(cicustomFormat, cfg["cicustom"], "") // checked on write
	for _, k := range cicustomKeys {
		volid := files[k]
		if volid == "" {
			continue
		}
		m := volumeIDText.FindStringSubmatch(volid)
		name, volname := m[1], m[2]
		if !s.storageExists(name) {
			return fmt.Sprintf("storage '%s' does not exist", name)
		}
		st, msg := s.activeStorage(g.node, name)
		typ := s.storageType(name)
		file, isSnippet := strings.CutPrefix(volname, "snippets/")
		isSnippet = isSnippet && snippetName.MatchString(file)
		_, _, parseMsg := parseVolname(typ, volname, s.pveVersion())
		switch {
		case parseMsg != "":
			return parseMsg
		case !isSnippet:
			return fmt.Sprintf("%s is not in the snippets directory", volid)
		case msg != "":
			return msg
		}
		if _, ok := st.snippets[file]; !ok {
			return fmt.Sprintf("can't find file '%s'", volid)
		}
	}
	return ""
}

func (s *Server) storageType(name string) string {
	for _, n := range s.nodes {
		if st := n.storage(name); st != nil {
			return st.typ
		}
	}
	return ""
}

// hasCloudInitDrive tells whether cfg has the VM's cloud-init drive (vm-VMID-cloudinit).
func hasCloudInitDrive(vmid int, cfg map[string]string) bool {
	marker := fmt.Sprintf("vm-%d-cloudinit", vmid)
	for k, v := range cfg {
		if volumeKey.MatchString(k) && strings.Contains(v, marker) {
			return true
		}
	}
	return false
}

// addsCloudInitDrive tells whether a change to g adds a cloud-init drive g does not have yet:
// on a stopped VM, qemu-server then generates the drive right after writing the config.
func addsCloudInitDrive(g *guest, set map[string]string) bool {
	if hasCloudInitDrive(g.vmid, g.view()) {
		return false
	}
	return hasCloudInitDrive(g.vmid, set)
}

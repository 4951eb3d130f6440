package pvesim

import (
	"fmt"
	"net/http"
	"strings"
)

// A drive's import-from, as qemu-server's API2/Qemu.pm takes it on create and on a config
// write: $check_drive_param wants the new-disk syntax STORAGE:0 (and efitype with
// pre-enrolled-keys for efidisk0, version for tpmstate0); $check_storage_access wants a
// source volume of type images (a VM's disk) or, since qemu-server 8.2.7 ("api: create:
// implement extracting disks when needed for import-from", PVE 8.3), import (a file of a
// storage's import directory), or a file system path, which only root@pam may pass
// (PVE::Storage::check_volume_access); create_disks then copies the source into a new volume
// of the source's size on STORAGE and records that volume without import-from or format.
// The simulator copies instantly; an OVA's disks (import/x.ova/disk.vmdk, extracted first) are
// not simulated.

// driveProblem is why a drive of a create or a config write is refused, and when PVE finds
// it: a parameter error (a 400 naming param), an error of the checks before any worker
// ($check_storage_access and the like: a 500 of the request), or create_disks' failure, which
// a create and an asynchronous config write meet in their worker (inWorker: the task fails).
type driveProblem struct {
	param    string
	msg      string
	inWorker bool
}

func paramProblem(param, format string, a ...any) *driveProblem {
	return &driveProblem{param: param, msg: fmt.Sprintf(format, a...)}
}

func earlyProblem(format string, a ...any) *driveProblem {
	return &driveProblem{msg: fmt.Sprintf(format, a...)}
}

func workerProblem(format string, a ...any) *driveProblem {
	return &driveProblem{msg: fmt.Sprintf(format, a...), inWorker: true}
}

// write answers a refusal before any worker.
func (p *driveProblem) write(w http.ResponseWriter) {
	if p.param != "" {
		paramError(w, p.param, p.msg)
		return
	}
	writeError(w, http.StatusInternalServerError, p.msg)
}

// importFrom imports d's import-from source into a new volume of guest g on node n, for the
// user the request is authenticated as, rewriting d as create_disks records the drive. The
// caller holds s.mu.
func (s *Server) importFrom(n *node, g *guest, key, user string, d map[string]string) (*allocation, *driveProblem) {
	source := d["import-from"]
	m := storageAlloc.FindStringSubmatch(d["file"])
	if m == nil || parseSize(m[2]) != 0 {
		return nil, paramProblem(key, "'import-from' requires special syntax - use <storage ID>:0,import-from=<source>")
	}
	switch {
	case key == "efidisk0" && (d["efitype"] == "" || d["pre-enrolled-keys"] == ""):
		required := "efitype"
		if d["efitype"] != "" {
			required = "pre-enrolled-keys"
		}
		return nil, paramProblem(key, "need to specify '%s' when using 'import-from'", required)
	case key == "tpmstate0" && d["version"] == "":
		return nil, paramProblem(key, "need to specify 'version' when using 'import-from'")
	}
	// $check_storage_access checks the destination, then the source; create_disks' worker
	// reads the source, then allocates the destination inside the import's eval.
	dest, destProblem := s.newDiskStorage(n, m[1])
	if destProblem != nil && !destProblem.inWorker {
		return nil, destProblem
	}
	size, problem := s.importSize(n, g, key, user, source)
	switch {
	case problem != nil:
		return nil, problem
	case destProblem != nil:
		return nil, workerProblem("cannot import from '%s' - %s", source, destProblem.msg)
	}
	name, msg := g.newVolume(dest)
	if msg != "" {
		return nil, workerProblem("%s", msg)
	}
	d["file"], d["size"] = m[1]+":"+name, formatBytes(size)
	delete(d, "import-from")
	delete(d, "format")
	return &allocation{dest, name, volumeSize{size: size, used: size}}, nil
}

// importSize checks drive key's import-from source and reads its size: the path's access, the
// storage and the volume's type before any worker ($check_storage_access), the rest in
// create_disks.
func (s *Server) importSize(n *node, g *guest, key, user, source string) (uint64, *driveProblem) {
	id := volumeIDText.FindStringSubmatch(source)
	if id == nil {
		if user != "root@pam" {
			return 0, earlyProblem("Only root can pass arbitrary filesystem paths.")
		}
		return 0, workerProblem("can't find file '%s'", source) // the simulator has no file system
	}
	storeID, volname := id[1], id[2]
	if !s.storageExists(storeID) {
		return 0, earlyProblem("storage '%s' does not exist", storeID)
	}
	v := s.pveVersion()
	vtype, owner, msg := parseVolname(s.storageType(storeID), volname, v)
	switch {
	case msg != "":
		return 0, earlyProblem("%s", msg)
	case vtype != "images" && (vtype != "import" || v.major < 9):
		want := "not an image"
		if v.major >= 9 {
			want = "needs to be 'images' or 'import'"
		}
		return 0, paramProblem(key, "%s has wrong type '%s' - %s", source, vtype, want)
	}
	failed := func(format string, a ...any) (uint64, *driveProblem) {
		return 0, workerProblem("cannot import from '%s' - %s", source, fmt.Sprintf(format, a...))
	}
	st, msg := s.activeStorage(n.name, storeID)
	if msg != "" {
		return failed("%s", msg)
	}
	if vtype == "import" {
		f, ok := st.files[volname]
		if !ok {
			// The untrusted image's check (file_size_info) runs before the copy's eval.
			return 0, workerProblem("failed to stat '%s'", st.filePath(volname))
		}
		return uint64(f.size), nil
	}
	vol, ok := st.volumes[volname]
	switch {
	case !ok:
		return failed("could not get size of %s", source)
	case strings.HasSuffix(volname, "-cloudinit"):
		return failed("cannot import from cloudinit disk")
	}
	if o := s.guests[atoi(owner)]; o != nil && o != g && o.node != n.name {
		return failed("owner VM %s not on local node", owner)
	}
	return vol.size, nil
}

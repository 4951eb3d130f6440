package pvesim

// Files on a storage (iso images, container templates, import images) and the calls that add
// and remove volumes, as pve-storage's API2/Storage/Status.pm (upload, download_url) and
// API2/Storage/Content.pm (delete) do them, with pve-manager's query-url-metadata.
//
// The simulator cannot reach the internet: download-url and query-url-metadata fetch from a
// table of remote files (the cluster file's remote_files, or PutRemoteFile). A URL outside it
// answers as a web server's 404 does. The download task then creates the file on the storage
// with the remote file's size.

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// RemoteFileSpec is a file the simulated web serves at URL, for download-url and
// query-url-metadata: its size in bytes and, optionally, its checksums by algorithm (md5,
// sha1, sha224, sha256, sha384, sha512) to verify a download's checksum against.
type RemoteFileSpec struct {
	URL       string            `yaml:"url" json:"url"`
	Size      int64             `yaml:"size" json:"size"`
	Checksums map[string]string `yaml:"checksums" json:"checksums"`
}

// storedFile is a file in one of a storage's file directories: its size and the checksums the
// simulator knows of it (all of them for an upload, the remote file's for a download).
type storedFile struct {
	size int64
	sums map[string]string
}

// fileContentDirs are the directories of pve-storage's vtype_subdirs for the file contents
// the simulator keeps.
var fileContentDirs = map[string]string{"iso": "template/iso", "vztmpl": "template/cache", "import": "import"}

// checksumAlgorithms is the checksum-algorithm enumeration of upload and download-url.
var checksumAlgorithms = []string{"md5", "sha1", "sha224", "sha256", "sha384", "sha512"}

// PutRemoteFile makes the simulated web serve f (see RemoteFileSpec).
func (s *Server) PutRemoteFile(f RemoteFileSpec) error {
	if !remoteURL.MatchString(f.URL) || f.Size <= 0 {
		return fmt.Errorf("remote file %q needs an http(s) url and a size > 0", f.URL)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remoteFiles[f.URL] = f
	return nil
}

// remoteURL is download-url's and query-url-metadata's url pattern.
var remoteURL = regexp.MustCompile(`^https?://.*$`)

// Volume names pve-storage's directory plugin accepts for the file contents (ISO_EXT_RE_0,
// VZTMPL_EXT_RE_1, SAFE_CHAR_CLASS_RE with UPLOAD_IMPORT_EXT_RE_1).
var (
	isoFile    = regexp.MustCompile(`(?i)^[^/]+\.(?:iso|img)$`)
	vztmplFile = regexp.MustCompile(`(?i)^[^/]+\.(tar|tar\.(?:gz|xz|zst|bz2))$`)
	importFile = regexp.MustCompile(`^[a-zA-Z0-9\-.+=_]+\.(ova|qcow2|raw|vmdk)$`)
	unsafeChar = regexp.MustCompile(`[^a-zA-Z0-9_.-]`)
)

// normalizeContentFilename is PVE::Storage::normalize_content_filename: the base name with
// every character outside [a-zA-Z0-9_.-] replaced by '_'.
func normalizeContentFilename(name string) string {
	name = strings.TrimSuffix(name, "\n")
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	return unsafeChar.ReplaceAllString(name, "_")
}

// fileFormat is the format pve-storage's get_subdir_files lists a file with.
func fileFormat(content, name string) string {
	switch content {
	case "iso":
		return "iso"
	case "vztmpl":
		if ext := strings.ToLower(vztmplFile.FindStringSubmatch(name)[1]); ext != "tar" {
			return "t" + strings.TrimPrefix(ext, "tar.")
		}
		return "tar"
	}
	return importFile.FindStringSubmatch(name)[1]
}

// fileParams checks the parameters upload and download-url share (content, filename and the
// checksum pair) as release v's schema does, with extra the call's other parameters; it
// returns the problems by parameter, empty when there are none.
func fileParams(p map[string]string, v versionInfo, extra ...string) map[string]string {
	problems := checkParams(p, append([]string{"content", "filename", "checksum", "checksum-algorithm"}, extra...)...)
	for _, k := range []string{"content", "filename"} {
		if _, ok := p[k]; !ok {
			problems[k] = "property is missing and it is not optional"
		}
	}
	if c, ok := p["content"]; ok && !contains(fileContents(v), c) {
		if !contains(allContents, c) {
			problems["content"] = fmt.Sprintf("invalid format - invalid content type '%s'", c)
		} else {
			problems["content"] = fmt.Sprintf("value '%s' does not have a value in the enumeration '%s'", c, strings.Join(fileContents(v), ", "))
		}
	}
	if len(p["filename"]) > 255 {
		problems["filename"] = "value may only be 255 characters long"
	}
	if a, ok := p["checksum-algorithm"]; ok && !contains(checksumAlgorithms, a) {
		problems["checksum-algorithm"] = fmt.Sprintf("value '%s' does not have a value in the enumeration '%s'", a, strings.Join(checksumAlgorithms, ", "))
	}
	for k, requires := range map[string]string{"checksum": "checksum-algorithm", "checksum-algorithm": "checksum"} {
		if _, ok := p[k]; ok {
			if _, given := p[requires]; !given {
				problems[requires] = fmt.Sprintf("missing property required by '%s'", k)
			}
		}
	}
	return problems
}

// fileContents are the contents upload and download-url take on release v, in their
// enumeration's order: import since pve-storage 8.2.8 ("api: allow ova upload/download", PVE 8.3).
func fileContents(v versionInfo) []string {
	if v.major >= 9 {
		return []string{"iso", "vztmpl", "import"}
	}
	return []string{"iso", "vztmpl"}
}

// fileTarget checks the storage and file name of an upload (download false) or a download to
// node n, in Status.pm's order: the storage enabled there (storage_check_enabled), file based,
// for a download configured for the content; for an upload a file was sent; the name's
// extension right for the content; for an upload the content configured; the storage
// activated (an upload to another node activates it over ssh). It returns the storage and the
// normalized name, or answers as PVE does. The caller holds s.mu.
func (s *Server) fileTarget(w http.ResponseWriter, n *node, storeID, content, filename string, download, sent bool) (*storage, string, bool) {
	fail := func(format string, a ...any) (*storage, string, bool) {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf(format, a...))
		return nil, "", false
	}
	var st *storage
	if n != nil {
		st = n.storage(storeID)
	}
	switch {
	case st == nil && !s.storageExists(storeID):
		return fail("storage '%s' does not exist", storeID)
	case st == nil:
		return fail("storage '%s' is not available on node '%s'", storeID, n.name)
	case !fileStorage(st.typ) && download:
		return fail("can't upload to storage type '%s', not a file based storage!", st.typ)
	case !fileStorage(st.typ):
		return fail("can't upload to storage type '%s'", st.typ)
	case download && !contains(st.content, content):
		return fail("storage '%s' is not configured for content-type '%s'", storeID, content)
	case !download && !sent:
		return fail("missing temporary file name")
	}
	name := normalizeContentFilename(filename)
	switch {
	case content == "iso" && !isoFile.MatchString(name), content == "vztmpl" && !vztmplFile.MatchString(name):
		paramError(w, "filename", "wrong file extension")
		return nil, "", false
	case content == "import" && !importFile.MatchString(name):
		paramError(w, "filename", "invalid filename or wrong extension")
		return nil, "", false
	case !download && !contains(st.content, content):
		return fail("storage '%s' does not support '%s' content", storeID, content)
	case !n.online:
		return fail("can't activate storage '%s' on node '%s': command '/usr/sbin/pvesm status --storage %s' failed: exit code 255", storeID, n.name, storeID)
	case st.inactive:
		return fail("storage '%s' is not online", storeID)
	}
	return st, name, true
}

// putFile stores a file, counting its size on the storage (an existing file is replaced).
func (st *storage) putFile(volname string, f storedFile) {
	st.dropFile(volname)
	if st.files == nil {
		st.files = map[string]storedFile{}
	}
	st.files[volname] = f
	st.used += uint64(f.size)
}

// dropFile removes a file, if it is there, and tells whether it was.
func (st *storage) dropFile(volname string) bool {
	f, ok := st.files[volname]
	if ok {
		st.used -= min(st.used, uint64(f.size))
		delete(st.files, volname)
	}
	return ok
}

// fileVolume is a file volume st holds (iso/x.iso, snippets/x.yaml...) with the format the
// directory plugin's parse_volname gives it: raw, an import image's its extension.
func (st *storage) fileVolume(volname string) (storedFile, string, bool) {
	content, file, _ := strings.Cut(volname, "/")
	if size, ok := st.snippets[file]; content == "snippets" && ok {
		return storedFile{size: int64(size)}, "raw", true
	}
	f, ok := st.files[volname]
	if !ok {
		return storedFile{}, "", false
	}
	if content == "import" {
		return f, fileFormat(content, file), true
	}
	return f, "raw", true
}

// filePath is where a file volume (iso/x.iso) lives on a directory storage.
func (st *storage) filePath(volname string) string {
	content, name, _ := strings.Cut(volname, "/")
	dir := fileContentDirs[content]
	if dir == "" {
		dir = content // snippets
	}
	return fmt.Sprintf("/mnt/pve/%s/%s/%s", st.name, dir, name)
}

// handleUpload is POST /nodes/{node}/storage/{storage}/upload (Status.pm upload): a
// multipart/form-data body whose file part is named "filename", as pve-http-server takes it
// (its file name is the filename parameter, the other parts and the query the remaining
// ones). An imgcopy task verifies the checksum, when given, and writes the file (an existing
// one is overwritten). ISO and OVA contents are not inspected.
func (s *Server) handleUpload(w http.ResponseWriter, r *http.Request) {
	p, body, ok := readUpload(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if problems := fileParams(p, s.pveVersion(), "tmpfilename"); len(problems) > 0 {
		writeParamError(w, problems)
		return
	}
	nodeName, storeID := r.PathValue("node"), r.PathValue("storage")
	if !validStorageID(w, storeID) {
		return
	}
	n := s.node(nodeName)
	if n == nil {
		n = &node{name: nodeName} // a name outside the cluster: no storage is enabled there
	}
	st, name, ok := s.fileTarget(w, n, storeID, p["content"], p["filename"], false, body != nil)
	if !ok {
		return
	}
	volname := p["content"] + "/" + name
	writeData(w, s.startWorker(r, nodeName, "imgcopy", "", func() outcome {
		if algo := p["checksum-algorithm"]; algo != "" && !strings.EqualFold(body.sums[algo], p["checksum"]) {
			return taskError("checksum mismatch: got '%s' != expect '%s'", body.sums[algo], p["checksum"])
		}
		st.putFile(volname, *body)
		return taskOK()
	}, nil))
}

// readUpload reads an upload request: its parameters and the uploaded file (nil without a
// file part), answering as pve-http-server does when the body is not multipart/form-data.
func readUpload(w http.ResponseWriter, r *http.Request) (map[string]string, *storedFile, bool) {
	ctype := r.Header.Get("Content-Type")
	if r.ContentLength == 0 || ctype == "" {
		p, ok := readParams(w, r)
		return p, nil, ok
	}
	mt, mp, err := mime.ParseMediaType(ctype)
	if err != nil || mt != "multipart/form-data" || mp["boundary"] == "" {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("upload 'Content-Type '%s' not implemented", ctype))
		return nil, nil, false
	}
	p := map[string]string{}
	for k, v := range r.URL.Query() {
		p[k] = v[0]
	}
	if _, given := p["tmpfilename"]; given {
		writeError(w, http.StatusInternalServerError, "'tmpfilename' query parameter is not allowed for file uploads")
		return nil, nil, false
	}
	var file *storedFile
	mr := multipart.NewReader(r.Body, mp["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			writeError(w, http.StatusInternalServerError, "upload failed")
			return nil, nil, false
		}
		if part.FileName() == "" {
			v, _ := io.ReadAll(io.LimitReader(part, 1<<16))
			p[part.FormName()] = strings.TrimSpace(string(v))
			continue
		}
		if part.FormName() != "filename" {
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("wrong field name '%s' for file upload, expected 'filename'", part.FormName()))
			return nil, nil, false
		}
		p["filename"] = strings.TrimSpace(part.FileName())
		f, err := hashFile(part)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "upload failed")
			return nil, nil, false
		}
		file = &f
	}
	p["tmpfilename"] = "/var/tmp/pveupload-" + randomHex(16)
	return p, file, true
}

// hashFile reads an uploaded file, taking its size and every checksum the upload may ask for.
func hashFile(r io.Reader) (storedFile, error) {
	hashes := map[string]hash.Hash{"md5": md5.New(), "sha1": sha1.New(), "sha224": sha256.New224(),
		"sha256": sha256.New(), "sha384": sha512.New384(), "sha512": sha512.New()}
	writers := make([]io.Writer, 0, len(hashes))
	for _, h := range hashes {
		writers = append(writers, h)
	}
	n, err := io.Copy(io.MultiWriter(writers...), r)
	f := storedFile{size: n, sums: map[string]string{}}
	for algo, h := range hashes {
		f.sums[algo] = hex.EncodeToString(h.Sum(nil))
	}
	return f, err
}

// downloadCompressions is download-url's compression enumeration (KNOWN_COMPRESSION_FORMATS).
var downloadCompressions = []string{"gz", "lzo", "zst", "bz2"}

// handleDownloadURL is POST /nodes/{node}/storage/{storage}/download-url (Status.pm
// download_url): a download task (id: the file name) that fetches url from the simulated web
// (see RemoteFileSpec) into the storage's directory for content, as
// PVE::Tools::download_file_from_url does: an existing file is kept when a given checksum
// matches it and refused otherwise ("refusing to override existing file"), a checksum is
// verified when the remote file declares one for the algorithm (the simulator has no bytes to
// hash otherwise), and decompression is for ISO images only.
func (s *Server) handleDownloadURL(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.onlineUncheckedParams(w, r)
	if !ok {
		return
	}
	problems := fileParams(p, s.pveVersion(), "url", "compression", "verify-certificates")
	if u, given := p["url"]; !given {
		problems["url"] = "property is missing and it is not optional"
	} else if !remoteURL.MatchString(u) {
		problems["url"] = "value does not match the regex pattern"
	}
	if c, given := p["compression"]; given && !contains(downloadCompressions, c) {
		problems["compression"] = fmt.Sprintf("value '%s' does not have a value in the enumeration '%s'", c, strings.Join(downloadCompressions, ", "))
	}
	if v, given := p["verify-certificates"]; given {
		if _, valid := parseBool(v); !valid {
			problems["verify-certificates"] = "type check ('boolean') failed - got '" + v + "'"
		}
	}
	if len(problems) > 0 {
		writeParamError(w, problems)
		return
	}
	node, storeID, content := r.PathValue("node"), r.PathValue("storage"), p["content"]
	st, name, ok := s.fileTarget(w, s.node(node), storeID, content, p["filename"], true, false)
	if !ok {
		return
	}
	volname := content + "/" + name
	dest := st.filePath(volname)
	algo, want := p["checksum-algorithm"], p["checksum"]
	writeData(w, s.startWorker(r, node, "download", name, func() outcome {
		if c := p["compression"]; c != "" && content != "iso" {
			return taskError("decompression not supported for %s", content)
		}
		if old, exists := st.files[volname]; exists {
			switch got := old.sums[algo]; {
			case algo == "":
				return taskError("refusing to override existing file '%s'", dest)
			case got == "" || strings.EqualFold(got, want):
				return taskOK() // "OK, got correct file already, no need to download"
			default:
				return taskError("checksum mismatch: got '%s' != expect '%s', aborting", got, want)
			}
		}
		remote, found := s.remoteFiles[p["url"]]
		if !found {
			// wget's exit code 8: the server answered with an error (404).
			return taskError("download failed: command 'wget --progress=dot:giga -O %s.tmp_dwnl.%d %s' failed: exit code 8", dest, s.pid, p["url"])
		}
		if got := remote.Checksums[algo]; algo != "" && got != "" && !strings.EqualFold(got, want) {
			return taskError("checksum mismatch: got '%s' != expect '%s'", got, want)
		}
		st.putFile(volname, storedFile{size: remote.Size, sums: remote.Checksums})
		return taskOK()
	}, nil))
}

// handleQueryURLMetadata is GET /nodes/{node}/query-url-metadata (pve-manager API2/Nodes.pm
// query_url_metadata): a HEAD request to url on the simulated web; the file name is the
// URL's last path segment, the size the remote file's, the type application/octet-stream.
// A URL the simulated web does not serve fails as a 404 does.
func (s *Server) handleQueryURLMetadata(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.onlineParams(w, r, "url", "verify-certificates")
	if !ok {
		return
	}
	u, given := p["url"]
	switch {
	case !given:
		paramError(w, "url", "property is missing and it is not optional")
		return
	case !remoteURL.MatchString(u):
		paramError(w, "url", "value does not match the regex pattern")
		return
	}
	remote, found := s.remoteFiles[u]
	if !found {
		writeError(w, http.StatusInternalServerError, "invalid server response: '404 Not Found'")
		return
	}
	out := map[string]any{"size": remote.Size, "mimetype": "application/octet-stream"}
	if m := urlFileName.FindStringSubmatch(u); m != nil && m[1] != "" {
		out["filename"] = m[1]
	}
	writeData(w, out)
}

// dirImage is a directory storage's image volume name, VMID/file.
var dirImage = regexp.MustCompile(`^(\d+)/\S+$`)

// urlFileName is query_url_metadata's file name of a URL without Content-Disposition.
var urlFileName = regexp.MustCompile(`^[^?]+/([^?/]*)(?:\?.*)?$`)

// handleVolumeDelete is DELETE /nodes/{node}/storage/{storage}/content/{volume} (Content.pm
// delete): the volume id (a name on {storage}, or a full id whose storage must match) must
// parse for its storage's type; an imgdel task (id "VMID@storage" for a guest's volume) frees
// it. PVE does not look at guest configs: a volume a VM still uses is deleted all the same and
// the config keeps naming it. A missing file is a warning ("disk image ... does not exist"),
// a missing block volume the storage tool's error; a base volume a linked clone is layered on
// is refused (vdisk_free: "base volume ... is still in use by linked clones"). With delay, a
// task that has ended answers null, or its error.
func (s *Server) handleVolumeDelete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.onlineParams(w, r, "delay")
	if !ok {
		return
	}
	if d, given := p["delay"]; given {
		if n, err := strconv.Atoi(d); err != nil {
			paramError(w, "delay", "type check ('integer') failed - got '"+d+"'")
			return
		} else if n < 1 || n > 30 {
			paramError(w, "delay", fmt.Sprintf("value must have a minimum value of 1 and a maximum value of 30, got %d", n))
			return
		}
	}
	storeID := r.PathValue("storage")
	volname, ok := realVolumeName(w, storeID, r.PathValue("volume"))
	if !ok {
		return
	}
	typ := s.storageType(storeID)
	if !s.storageExists(storeID) {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("storage '%s' does not exist", storeID))
		return
	}
	_, owner, msg := parseVolname(typ, volname, s.pveVersion())
	if msg != "" {
		writeError(w, http.StatusInternalServerError, msg)
		return
	}
	id := storeID
	if owner != "" {
		id = owner + "@" + storeID
	}
	node := r.PathValue("node")
	upid := s.startWorker(r, node, "imgdel", id, func() outcome {
		st, msg := s.activeStorage(node, storeID)
		if msg != "" {
			return taskError("%s", msg)
		}
		var res outcome
		switch content, file, _ := strings.Cut(volname, "/"); {
		case content == "snippets" && st.snippets[file] != 0:
			delete(st.snippets, file)
		case fileContentDirs[content] != "" && st.dropFile(volname):
		case st.baseInUse(volname):
			return taskError("base volume '%s' is still in use by linked clones", volname)
		case st.hasVolume(volname):
			st.free(volname)
		case fileStorage(st.typ):
			res.warnings = []string{fmt.Sprintf("WARN: disk image '%s' does not exist", s.volumeFilePath(st, volname))}
		default:
			return taskError("%s", missingBlockVolume(st, volname))
		}
		return res
	}, nil)
	if t := s.tasks[upid]; p["delay"] != "" && t.done {
		if t.exit != "OK" && !strings.HasPrefix(t.exit, "WARNINGS") {
			writeError(w, http.StatusInternalServerError, t.exit)
			return
		}
		writeData(w, nil)
		return
	}
	writeData(w, upid)
}

func (st *storage) hasVolume(volname string) bool {
	_, ok := st.volumes[volname]
	return ok
}

// volumeFilePath is the path of a volume on a directory storage: a file's, or an image's.
func (s *Server) volumeFilePath(st *storage, volname string) string {
	if content, _, _ := strings.Cut(volname, "/"); fileContentDirs[content] != "" || content == "snippets" {
		return st.filePath(volname)
	}
	return st.volumePath(volname)
}

// missingBlockVolume is the storage tool's complaint when a block storage has no such volume
// to free (free_image of the LVM-thin, RBD and ZFS plugins).
func missingBlockVolume(st *storage, volname string) string {
	switch st.typ {
	case "lvm", "lvmthin":
		return fmt.Sprintf("lvremove '%s/%s' error:   Failed to find logical volume \"%s/%s\"", st.name, volname, st.name, volname)
	case "rbd":
		return fmt.Sprintf("rbd snap purge '%s' error: rbd: error opening image %s: (2) No such file or directory", volname, volname)
	}
	return fmt.Sprintf("zfs error: cannot open '%s/%s': dataset does not exist", st.name, volname)
}

// parseVolname is the storage plugin's parse_volname on release v: the volume's vtype
// (images, iso, vztmpl, snippets, backup, import) and owner VMID ("" for files), or the
// plugin's complaint. The directory plugin parses import/ names since pve-storage 8.2.8
// ("plugin: dir: implement import content type", PVE 8.3); on PVE 8.2 they do not parse.
func parseVolname(typ, volname string, v versionInfo) (vtype, owner, msg string) {
	m := volumeOwner.FindStringSubmatch(volname)
	if !fileStorage(typ) {
		if m == nil {
			kind := map[string]string{"lvm": "lvm", "lvmthin": "lvm", "rbd": "rbd", "zfspool": "zfs", "zfs": "zfs", "iscsi": "iscsi", "pbs": "PBS"}[typ]
			return "", "", fmt.Sprintf("unable to parse %s volume name '%s'", kind, volname)
		}
		return "images", m[1], ""
	}
	content, file, _ := strings.Cut(volname, "/")
	switch {
	case m != nil:
		return "images", m[1], "" // the simulator names a directory storage's images as block storages do
	case content == "snippets" && snippetName.MatchString(file), content == "iso" && isoFile.MatchString(file),
		content == "vztmpl" && vztmplFile.MatchString(file), content == "backup" && snippetName.MatchString(file),
		content == "import" && importFile.MatchString(file) && v.major >= 9:
		return content, "", ""
	}
	if m := dirImage.FindStringSubmatch(volname); m != nil {
		return "images", m[1], ""
	}
	return "", "", fmt.Sprintf("unable to parse directory volume name '%s'", volname)
}

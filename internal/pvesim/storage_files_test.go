package pvesim_test

// The storage calls of bpg's file resources (proxmox_virtual_environment_file,
// proxmox_virtual_environment_download_file) and its download cleanup: upload, download-url,
// query-url-metadata, volume delete and task stop, each as PVE answers it.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

func filesCluster(t *testing.T, opts ...pvesim.Option) (*pvesim.Server, *api) {
	t.Helper()
	c, err := pvesim.ParseCluster([]byte(`
nodes:
  - {name: pve1, cpus: 8, memory_gib: 32}
  - {name: pve2, cpus: 8, memory_gib: 32, offline: true}
storages:
  - {name: local, type: dir, content: [iso, vztmpl, import, images, snippets], size_gib: 100}
  - {name: fast, type: lvmthin, content: [images], nodes: [pve1], size_gib: 100}
  - {name: tmpl, type: dir, content: [vztmpl], nodes: [pve1], size_gib: 10}
  - {name: nas, type: nfs, content: [iso], nodes: [pve1], size_gib: 10, inactive: true}
guests:
  - {vmid: 100, node: pve1, name: web, config: {scsi0: "fast:vm-100-disk-0,size=4G"}}
ha_rules: [] # PVE 9: PVE 8.2's directory storages have no import content
remote_files:
  - url: https://example.org/images/debian.iso
    size: 654311424
    checksums: {sha256: 0f1e2d}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := pvesim.NewTestServer(t, c, opts...)
	return s, newAPI(t, s)
}

// volumes lists a storage's volume ids with their sizes (GET .../content).
func (a *api) volumes(node, storage string) map[string]float64 {
	a.t.Helper()
	out := map[string]float64{}
	for _, row := range a.ok(a.get("/nodes/" + node + "/storage/" + storage + "/content")).list() {
		out[row["volid"].(string)], _ = row["size"].(float64)
	}
	return out
}

// taskLog is a task's log lines.
func (a *api) taskLog(upid string) string {
	a.t.Helper()
	var lines []string
	for _, row := range a.ok(a.get("/nodes/" + strings.Split(upid, ":")[1] + "/tasks/" + upid + "/log")).list() {
		lines = append(lines, row["t"].(string))
	}
	return strings.Join(lines, "\n")
}

// pve-manager API2/Tasks.pm stop_task: the UPID must parse ("unable to parse worker upid")
// and name a task of that node ("no such task"); RESTEnvironment check_worker(upid, 1) sends
// a running worker SIGTERM, whose handler (fork_worker) dies "received interrupt", so the task
// ends with that error and its work is not done; a finished task is left alone. The answer is
// null either way. bpg calls it after a download-url task failed.
func TestTaskStop(t *testing.T) {
	s, a := filesCluster(t)
	s.HoldTasks()
	upid := a.ok(a.form(http.MethodPost, "/nodes/pve1/storage/local/download-url", url.Values{
		"url": {"https://example.org/images/debian.iso"}, "content": {"iso"}, "filename": {"debian.iso"}})).str()
	if st := a.ok(a.get("/nodes/pve1/tasks/" + upid + "/status")).obj(); st["status"] != "running" {
		t.Fatalf("held task = %v", st)
	}
	stop := a.ok(a.form(http.MethodDelete, "/nodes/pve1/tasks/"+upid, nil))
	if stop.env.Data != nil {
		t.Errorf("stop answered %s, want null data", stop.body)
	}
	st := a.ok(a.get("/nodes/pve1/tasks/" + upid + "/status")).obj()
	if st["status"] != "stopped" || st["exitstatus"] != "received interrupt" {
		t.Errorf("stopped task = %v, want stopped with 'received interrupt'", st)
	}
	s.ReleaseTasks() // the held completion must not run the download after all
	if v := a.volumes("pve1", "local"); len(v) != 0 {
		t.Errorf("an interrupted download left %v", v)
	}
	// Stopping it again, now finished: null, and the status stays.
	a.ok(a.form(http.MethodDelete, "/nodes/pve1/tasks/"+upid, nil))
	if got := a.wait(upid)["exitstatus"]; got != "received interrupt" {
		t.Errorf("exit status after a second stop = %v", got)
	}
	for path, want := range map[string]string{
		"/nodes/pve1/tasks/UPID:pve1:bad":                               "unable to parse worker upid",
		"/nodes/pve1/tasks/" + strings.Replace(upid, "pve1", "pve3", 1): "no such task",
	} {
		if r := a.form(http.MethodDelete, path, nil); r.code != http.StatusBadRequest || r.env.Errors["upid"] != want {
			t.Errorf("DELETE %s = %s %s, want 400 upid: %s", path, r.status, r.body, want)
		}
	}
	if r := a.form(http.MethodDelete, "/nodes/pve1/tasks/"+upid, url.Values{"force": {"1"}}); r.code != http.StatusBadRequest || r.env.Errors["force"] == "" {
		t.Errorf("stop with an unknown parameter = %s %s, want 400", r.status, r.body)
	}
}

// pve-storage API2/Storage/Content.pm delete: the volume is a name on {storage} or a full id
// of that storage ("storage ID mismatch"), parsed by its storage's plugin ("unable to parse
// lvm volume name"); an imgdel task with id "VMID@storage" (the owner's) runs
// PVE::Storage::vdisk_free. Nothing looks at guest configs: a disk VM 100 still uses is freed
// and the config keeps naming it. A missing file is Plugin::free_image's warning ("disk image
// ... does not exist", the task ends WARNINGS: 1), a missing LVM-thin volume lvremove's error.
// With delay, an ended task answers null (or dies with its status).
func TestVolumeDelete(t *testing.T) {
	_, a := filesCluster(t)
	upid := a.ok(a.form(http.MethodDelete, "/nodes/pve1/storage/fast/content/fast:vm-100-disk-0", nil)).str()
	if !strings.Contains(upid, ":imgdel:100@fast:") {
		t.Errorf("UPID %q, want an imgdel task with id 100@fast", upid)
	}
	if exit := a.wait(upid)["exitstatus"]; exit != "OK" {
		t.Errorf("deleting a used disk: %v, want OK (PVE does not check guest configs)", exit)
	}
	if _, left := a.volumes("pve1", "fast")["fast:vm-100-disk-0"]; left {
		t.Error("the deleted volume is still listed")
	}
	if cfg := a.ok(a.get("/nodes/pve1/qemu/100/config")).obj(); !strings.HasPrefix(cfg["scsi0"].(string), "fast:vm-100-disk-0") {
		t.Errorf("scsi0 = %v, want the config unchanged", cfg["scsi0"])
	}
	// The volume is gone: lvremove fails inside the task.
	if exit := a.task(a.form(http.MethodDelete, "/nodes/pve1/storage/fast/content/vm-100-disk-0", nil)); exit != `lvremove 'fast/vm-100-disk-0' error:   Failed to find logical volume "fast/vm-100-disk-0"` {
		t.Errorf("deleting a missing LVM-thin volume: %q", exit)
	}
	upid = a.ok(a.form(http.MethodDelete, "/nodes/pve1/storage/local/content/local:iso/none.iso", nil)).str()
	if exit := a.wait(upid)["exitstatus"]; exit != "WARNINGS: 1" || !strings.Contains(a.taskLog(upid), "disk image '/mnt/pve/local/template/iso/none.iso' does not exist") {
		t.Errorf("deleting a missing file: %v, log %q", exit, a.taskLog(upid))
	}
	if r := a.form(http.MethodDelete, "/nodes/pve1/storage/local/content/local:iso/none.iso", url.Values{"delay": {"5"}}); r.code != http.StatusOK || r.env.Data != nil {
		t.Errorf("delete with delay = %s %s, want null once the task ended", r.status, r.body)
	}
	if r := a.form(http.MethodDelete, "/nodes/pve1/storage/fast/content/vm-100-disk-0", url.Values{"delay": {"5"}}); r.code != http.StatusInternalServerError || !strings.Contains(r.status, "lvremove") {
		t.Errorf("failing delete with delay = %s, want 500 with the task's error", r.status)
	}
	for _, tc := range []struct {
		path        string
		code        int
		param, want string
	}{
		{"/nodes/pve1/storage/fast/content/local:iso/x.iso", 400, "volume", "storage ID mismatch (local != fast)\n"},
		{"/nodes/pve1/storage/fast/content/disk.img", 500, "", "unable to parse lvm volume name 'disk.img'"},
		{"/nodes/pve1/storage/local/content/iso/notes.txt", 500, "", "unable to parse directory volume name 'iso/notes.txt'"},
		{"/nodes/pve1/storage/nope/content/vm-100-disk-0", 500, "", "storage 'nope' does not exist"},
		{"/nodes/pve1/storage/local/content/iso/x.iso?delay=31", 400, "delay", "value must have a minimum value of 1 and a maximum value of 30, got 31"},
	} {
		r := a.do(mustRequest(t, http.MethodDelete, a.s.URL()+"/api2/json"+tc.path))
		got := strings.TrimPrefix(r.status, r.status[:4])
		if tc.param != "" {
			got = r.env.Errors[tc.param]
		}
		if r.code != tc.code || got != tc.want {
			t.Errorf("DELETE %s = %d %q, want %d %q", tc.path, r.code, got, tc.code, tc.want)
		}
	}
}

func mustRequest(t *testing.T, method, target string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// upload sends a multipart upload as bpg's APIUpload builds it: a content field, then the
// file part named field (PVE wants "filename").
func (a *api) upload(node, storage string, fields map[string]string, field, name string, data []byte) reply {
	a.t.Helper()
	var body bytes.Buffer
	m := multipart.NewWriter(&body)
	for k, v := range fields {
		_ = m.WriteField(k, v)
	}
	if field != "" {
		part, _ := m.CreateFormFile(field, name)
		_, _ = part.Write(data)
	}
	_ = m.Close()
	req, err := http.NewRequest(http.MethodPost, a.s.URL()+"/api2/json/nodes/"+node+"/storage/"+storage+"/upload", &body)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", m.FormDataContentType())
	return a.do(req)
}

// pve-storage API2/Storage/Status.pm upload: content is iso, vztmpl or import; the file
// comes as the multipart part "filename" (pve-http-server's file_upload_multipart), its name
// normalized (normalize_content_filename) and checked for the content's extension; the
// storage must be file based ("can't upload to storage type") and have the content; an
// imgcopy task verifies the checksum and copies the file in, overwriting one of that name.
func TestUpload(t *testing.T) {
	_, a := filesCluster(t)
	data := []byte("an iso image")
	sum := sha256.Sum256(data)
	upid := a.ok(a.upload("pve1", "local", map[string]string{"content": "iso", "checksum": hex.EncodeToString(sum[:]), "checksum-algorithm": "sha256"},
		"filename", "my disk.iso", data)).str()
	if !strings.Contains(upid, ":imgcopy::") {
		t.Errorf("UPID %q, want an imgcopy task without id", upid)
	}
	if exit := a.wait(upid)["exitstatus"]; exit != "OK" {
		t.Fatalf("upload: %v", exit)
	}
	if size, ok := a.volumes("pve1", "local")["local:iso/my_disk.iso"]; !ok || size != float64(len(data)) {
		t.Errorf("content after upload = %v, want local:iso/my_disk.iso of %d bytes", a.volumes("pve1", "local"), len(data))
	}
	// Content.pm info of the file: parse_volname gives ISOs the format raw.
	info := a.ok(a.get("/nodes/pve1/storage/local/content/local:iso/my_disk.iso")).obj()
	if info["path"] != "/mnt/pve/local/template/iso/my_disk.iso" || info["size"] != float64(len(data)) || info["format"] != "raw" {
		t.Errorf("volume info of the uploaded ISO = %v", info)
	}
	if exit := a.task(a.upload("pve1", "local", map[string]string{"content": "iso", "checksum": "00", "checksum-algorithm": "sha256"}, "filename", "x.iso", data)); exit != "checksum mismatch: got '"+hex.EncodeToString(sum[:])+"' != expect '00'" {
		t.Errorf("upload with a wrong checksum: %q", exit)
	}
	for _, tc := range []struct {
		storage string
		fields  map[string]string
		field   string
		file    string
		code    int
		param   string
		want    string
	}{
		{"local", map[string]string{"content": "iso"}, "filename", "notes.txt", 400, "filename", "wrong file extension"},
		{"local", map[string]string{"content": "import"}, "filename", "disk.iso", 400, "filename", "invalid filename or wrong extension"},
		{"local", map[string]string{"content": "images"}, "filename", "x.iso", 400, "content", "value 'images' does not have a value in the enumeration 'iso, vztmpl, import'"},
		{"local", map[string]string{"content": "iso", "checksum": "00"}, "filename", "x.iso", 400, "checksum-algorithm", "missing property required by 'checksum'"},
		{"fast", map[string]string{"content": "iso"}, "filename", "x.iso", 500, "", "can't upload to storage type 'lvmthin'"},
		{"tmpl", map[string]string{"content": "iso"}, "filename", "x.iso", 500, "", "storage 'tmpl' does not support 'iso' content"},
		{"nas", map[string]string{"content": "iso"}, "filename", "x.iso", 500, "", "storage 'nas' is not online"},
		{"local", map[string]string{"content": "iso"}, "file", "x.iso", 500, "", "wrong field name 'file' for file upload, expected 'filename'"},
		{"local", map[string]string{"content": "iso", "filename": "x.iso"}, "", "", 500, "", "missing temporary file name"},
	} {
		r := a.upload("pve1", tc.storage, tc.fields, tc.field, tc.file, data)
		got := strings.TrimPrefix(r.status, r.status[:4])
		if tc.param != "" {
			got = r.env.Errors[tc.param]
		}
		if r.code != tc.code || got != tc.want {
			t.Errorf("upload %v %s to %s = %d %q (%s), want %d %q", tc.fields, tc.file, tc.storage, r.code, got, r.body, tc.code, tc.want)
		}
	}
	// On the offline node the storage cannot be activated over ssh.
	if r := a.upload("pve2", "local", map[string]string{"content": "iso"}, "filename", "x.iso", data); r.code != 500 || !strings.Contains(r.status, "can't activate storage 'local' on node 'pve2'") {
		t.Errorf("upload to an offline node = %s", r.status)
	}
	if r := a.form(http.MethodPost, "/nodes/pve1/storage/local/upload", url.Values{"content": {"iso"}, "filename": {"x.iso"}}); r.code != 500 || !strings.Contains(r.status, "upload 'Content-Type 'application/x-www-form-urlencoded' not implemented") {
		t.Errorf("a form upload = %s", r.status)
	}
}

// pve-storage API2/Storage/Status.pm download_url with PVE::Tools::download_file_from_url, and
// pve-manager API2/Nodes.pm query_url_metadata, against the simulated web (remote_files):
// a download task (id: the file name) creates the file with the remote size; an existing
// file is refused without a checksum ("refusing to override existing file", what bpg's
// overwrite_unmanaged looks for) and kept when the checksum matches; a declared checksum is
// verified; decompression is for ISOs only; a URL nobody serves fails as wget does on a 404.
func TestDownloadURL(t *testing.T) {
	_, a := filesCluster(t)
	const iso = "https://example.org/images/debian.iso"
	meta := a.ok(a.form(http.MethodGet, "/nodes/pve1/query-url-metadata", url.Values{"url": {iso}, "verify-certificates": {"1"}})).obj()
	if meta["filename"] != "debian.iso" || meta["size"] != 654311424.0 {
		t.Errorf("query-url-metadata = %v", meta)
	}
	if r := a.form(http.MethodGet, "/nodes/pve1/query-url-metadata", url.Values{"url": {"https://example.org/missing.iso"}}); r.code != 500 || r.status[4:] != "invalid server response: '404 Not Found'" {
		t.Errorf("query-url-metadata of an unknown URL = %s", r.status)
	}
	download := func(extra url.Values) reply {
		p := url.Values{"url": {iso}, "content": {"iso"}, "filename": {"debian.iso"}, "node": {"pve1"}, "storage": {"local"}}
		for k, v := range extra {
			p[k] = v
		}
		return a.form(http.MethodPost, "/nodes/pve1/storage/local/download-url", p)
	}
	upid := a.ok(download(nil)).str()
	if !strings.Contains(upid, ":download:debian.iso:") {
		t.Errorf("UPID %q, want a download task with id debian.iso", upid)
	}
	if exit := a.wait(upid)["exitstatus"]; exit != "OK" {
		t.Fatalf("download: %v", exit)
	}
	if size := a.volumes("pve1", "local")["local:iso/debian.iso"]; size != 654311424 {
		t.Errorf("downloaded file size %v, content %v", size, a.volumes("pve1", "local"))
	}
	if exit := a.task(download(nil)); exit != "refusing to override existing file '/mnt/pve/local/template/iso/debian.iso'" {
		t.Errorf("second download: %q", exit)
	}
	if exit := a.task(download(url.Values{"checksum": {"0F1E2D"}, "checksum-algorithm": {"sha256"}})); exit != "OK" {
		t.Errorf("download of a file already there with its checksum: %q", exit)
	}
	if exit := a.task(download(url.Values{"checksum": {"abcd"}, "checksum-algorithm": {"sha256"}})); exit != "checksum mismatch: got '0f1e2d' != expect 'abcd', aborting" {
		t.Errorf("download over a file with another checksum: %q", exit)
	}
	if exit := a.task(download(url.Values{"filename": {"other.iso"}, "checksum": {"abcd"}, "checksum-algorithm": {"sha256"}})); exit != "checksum mismatch: got '0f1e2d' != expect 'abcd'" {
		t.Errorf("download with a wrong checksum: %q", exit)
	}
	if exit := a.task(download(url.Values{"url": {"https://example.org/missing.iso"}, "filename": {"missing.iso"}})); !strings.HasPrefix(exit, "download failed: command 'wget --progress=dot:giga -O /mnt/pve/local/template/iso/missing.iso.tmp_dwnl.") {
		t.Errorf("download of an unknown URL: %q", exit)
	}
	if exit := a.task(download(url.Values{"content": {"vztmpl"}, "filename": {"ct.tar.zst"}, "compression": {"zst"}})); exit != "decompression not supported for vztmpl" {
		t.Errorf("decompressing a template: %q", exit)
	}
	for _, tc := range []struct {
		extra url.Values
		code  int
		param string
		want  string
	}{
		{url.Values{"url": {"ftp://example.org/x.iso"}}, 400, "url", "value does not match the regex pattern"},
		{url.Values{"compression": {"xz"}}, 400, "compression", "value 'xz' does not have a value in the enumeration 'gz, lzo, zst, bz2'"},
		{url.Values{"content": {"snippets"}}, 400, "content", "value 'snippets' does not have a value in the enumeration 'iso, vztmpl, import'"},
		{url.Values{"filename": {"debian.img.txt"}}, 400, "filename", "wrong file extension"},
		// bpg repeats node and storage in the body; another value than the path's is refused.
		{url.Values{"storage": {"other"}}, 400, "storage", "duplicate parameter (already defined in URI) with conflicting values!"},
	} {
		r := download(tc.extra)
		if r.code != tc.code || r.env.Errors[tc.param] != tc.want {
			t.Errorf("download-url %v = %s %s, want %d %s: %s", tc.extra, r.status, r.body, tc.code, tc.param, tc.want)
		}
	}
	for storage, want := range map[string]string{
		"fast": "can't upload to storage type 'lvmthin', not a file based storage!",
		"tmpl": "storage 'tmpl' is not configured for content-type 'iso'",
		"nas":  "storage 'nas' is not online",
	} {
		r := a.form(http.MethodPost, "/nodes/pve1/storage/"+storage+"/download-url", url.Values{"url": {iso}, "content": {"iso"}, "filename": {"d.iso"}})
		if r.code != 500 || r.status[4:] != want {
			t.Errorf("download-url to %s = %s, want 500 %s", storage, r.status, want)
		}
	}
	// The file resource's delete is Content.pm delete of the downloaded volume.
	if exit := a.task(a.form(http.MethodDelete, "/nodes/pve1/storage/local/content/"+url.PathEscape("local:iso/debian.iso"), nil)); exit != "OK" {
		t.Errorf("deleting the downloaded file: %q", exit)
	}
	if v := a.volumes("pve1", "local"); len(v) != 0 {
		t.Errorf("content after delete = %v", v)
	}
}

// pve-storage API2/Storage/Config.pm read: the storage.cfg section with storage and digest,
// content and nodes as comma lists; an unknown storage is storage_config's "storage 'x' does
// not exist". bpg's file resource reads it before copying a snippet over ssh (to check the
// content type and find the directory).
func TestStorageConfig(t *testing.T) {
	_, a := filesCluster(t)
	local := a.ok(a.get("/storage/local")).obj()
	fast := a.ok(a.get("/storage/fast")).obj()
	if local["storage"] != "local" || local["type"] != "dir" || local["content"] != "iso,vztmpl,import,images,snippets" ||
		local["path"] != "/mnt/pve/local" || local["nodes"] != nil || local["shared"] != nil {
		t.Errorf("GET /storage/local = %v", local)
	}
	if fast["type"] != "lvmthin" || fast["nodes"] != "pve1" || fast["path"] != nil {
		t.Errorf("GET /storage/fast = %v", fast)
	}
	if d, _ := local["digest"].(string); len(d) != 40 || d != fast["digest"] {
		t.Errorf("digests %v and %v, want the one SHA-1 of storage.cfg", local["digest"], fast["digest"])
	}
	if r := a.get("/storage/nope"); r.code != 500 || r.status[4:] != "storage 'nope' does not exist" {
		t.Errorf("GET /storage/nope = %s", r.status)
	}
}

// A linked clone's disk is layered on its template's base volume, and PVE keeps the base while
// one exists: pve-storage PVE::Storage::vdisk_free dies "base volume '<name>' is still in use
// by linked clones" (so the imgdel task fails), and qemu-server's destroy_vm checks a
// template's volumes first (volume_is_base_and_used) and dies "base volume '<volid>' is still
// in use by linked cloned" (sic), leaving the template. Once the clone is gone, both succeed.
func TestBaseVolumeInUse(t *testing.T) {
	_, a := lab(t)
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"300"}, "full": {"0"}})); exit != "OK" {
		t.Fatalf("linked clone: %s", exit)
	}
	if exit := a.task(a.form(http.MethodDelete, "/nodes/pve1/storage/ceph/content/ceph:base-9000-disk-0", nil)); exit != "base volume 'base-9000-disk-0' is still in use by linked clones" {
		t.Errorf("deleting a base volume in use: %q", exit)
	}
	if exit := a.task(a.form(http.MethodDelete, "/nodes/pve1/qemu/9000", nil)); exit != "base volume 'ceph:base-9000-disk-0' is still in use by linked cloned" {
		t.Errorf("destroying a template with a linked clone: %q", exit)
	}
	if st := a.ok(a.get("/nodes/pve1/qemu/9000/status/current")).obj(); st["template"] != 1.0 || st["lock"] != nil {
		t.Errorf("template after the refused destroy = %v, want it there and unlocked", st)
	}
	if _, ok := a.volumes("pve1", "ceph")["ceph:base-9000-disk-0"]; !ok {
		t.Error("the base volume is gone")
	}
	if exit := a.task(a.form(http.MethodDelete, "/nodes/pve1/qemu/300", nil)); exit != "OK" {
		t.Fatalf("destroying the linked clone: %s", exit)
	}
	if exit := a.task(a.form(http.MethodDelete, "/nodes/pve1/qemu/9000", nil)); exit != "OK" {
		t.Errorf("destroying the template without clones: %q", exit)
	}
}

// PVE 8.2 (pve-manager 8.2.4 with pve-storage 8.2.2) has no import content on its own
// storages: the directory types' plugindata lists it from pve-storage 8.2.8 on ("plugin: dir:
// implement import content type"), upload and download-url take content iso and vztmpl only
// until then ("api: allow ova upload/download"), and the directory plugin's parse_volname
// does not parse import/ names ("unable to parse directory volume name"). PVE 9 takes all three.
func TestImportContentPerRelease(t *testing.T) {
	const pve8 = `
nodes:
  - {name: pve1, cpus: 8, memory_gib: 32}
storages:
  - {name: local, type: dir, content: [iso, vztmpl, images, snippets], size_gib: 100}
remote_files:
  - {url: "https://example.org/images/disk.qcow2", size: 1048576}
`
	if _, err := pvesim.ParseCluster([]byte(strings.Replace(pve8, "iso, vztmpl", "iso, vztmpl, import", 1))); err == nil ||
		!strings.Contains(err.Error(), `storage "local" cannot hold content "import" on PVE 8.2`) {
		t.Errorf("a PVE 8 cluster file with import content: %v, want it refused", err)
	}
	if _, err := pvesim.ParseCluster([]byte(strings.Replace(pve8, "iso, vztmpl", "iso, vztmpl, import", 1) + "ha_rules: []\n")); err != nil {
		t.Errorf("a PVE 9 cluster file with import content: %v", err)
	}
	c, err := pvesim.ParseCluster([]byte(pve8))
	if err != nil {
		t.Fatal(err)
	}
	a := newAPI(t, pvesim.NewTestServer(t, c))
	const enum = "value 'import' does not have a value in the enumeration 'iso, vztmpl'"
	if r := a.upload("pve1", "local", map[string]string{"content": "import"}, "filename", "disk.qcow2", []byte("qcow2")); r.code != 400 || r.env.Errors["content"] != enum {
		t.Errorf("PVE 8 upload of an import file = %s %s, want 400 content: %s", r.status, r.body, enum)
	}
	r := a.form(http.MethodPost, "/nodes/pve1/storage/local/download-url", url.Values{"content": {"import"}, "filename": {"disk.qcow2"}, "url": {"https://example.org/images/disk.qcow2"}})
	if r.code != 400 || r.env.Errors["content"] != enum {
		t.Errorf("PVE 8 download-url of an import file = %s %s, want 400 content: %s", r.status, r.body, enum)
	}
	const unparsable = "unable to parse directory volume name 'import/disk.qcow2'"
	if r := a.form(http.MethodDelete, "/nodes/pve1/storage/local/content/local:import/disk.qcow2", nil); r.code != 500 || !strings.Contains(r.status, unparsable) {
		t.Errorf("PVE 8 delete of an import volume = %s, want 500 %s", r.status, unparsable)
	}
}

package pvesim_test

// What real clients (the bpg and Telmate Terraform providers) call beyond our own client, each
// answered as PVE answers it; the PVE source of each behaviour is named in its test.

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// pve-storage API2/Storage/Status.pm read_status (and index, for every storage) returns storage_info's entry for the
// storage: every storage of storage.cfg has one on every node (enabled 0 where it is not
// enabled, and 0 bytes unless active), an unknown storage is a 400 "No such storage.". bpg
// reads it for every datastore of a template cloned to another node, to decide whether the
// clone can go straight to its target.
func TestStorageStatus(t *testing.T) {
	c, err := pvesim.ParseCluster([]byte(`
nodes:
  - {name: pve1, cpus: 8, memory_gib: 32}
  - {name: pve2, cpus: 8, memory_gib: 32}
  - {name: pve3, cpus: 8, memory_gib: 32, offline: true}
storages:
  - {name: ceph, type: rbd, content: [images], shared: true, size_gib: 100, used_gib: 40}
  - {name: fast, type: lvmthin, content: [images, rootdir], nodes: [pve1], size_gib: 10, used_gib: 1}
  - {name: nas, type: nfs, content: [iso], nodes: [pve2], size_gib: 10, inactive: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	a := newAPI(t, pvesim.NewTestServer(t, c))
	for _, tc := range []struct {
		path string
		want map[string]any
	}{
		{"/nodes/pve1/storage/ceph/status", map[string]any{"type": "rbd", "content": "images", "shared": 1.0, "enabled": 1.0,
			"active": 1.0, "total": 100.0 * (1 << 30), "used": 40.0 * (1 << 30), "avail": 60.0 * (1 << 30)}},
		{"/nodes/pve1/storage/fast/status", map[string]any{"type": "lvmthin", "content": "images,rootdir", "shared": 0.0,
			"enabled": 1.0, "active": 1.0, "total": 10.0 * (1 << 30), "used": 1.0 * (1 << 30), "avail": 9.0 * (1 << 30)}},
		// Not enabled on pve2: listed, but neither enabled nor active.
		{"/nodes/pve2/storage/fast/status", map[string]any{"type": "lvmthin", "content": "images,rootdir", "shared": 0.0,
			"enabled": 0.0, "active": 0.0, "total": 0.0, "used": 0.0, "avail": 0.0}},
		// Enabled but not online: no figures.
		{"/nodes/pve2/storage/nas/status", map[string]any{"type": "nfs", "content": "iso", "shared": 0.0,
			"enabled": 1.0, "active": 0.0, "total": 0.0, "used": 0.0, "avail": 0.0}},
	} {
		got := a.ok(a.get(tc.path)).obj()
		if len(got) != len(tc.want) {
			t.Errorf("%s = %v, want %v", tc.path, got, tc.want)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v", tc.path, k, got[k], v)
			}
		}
	}
	// The index (Status.pm index) lists the same entries, filtered by its parameters.
	for _, tc := range []struct {
		query url.Values
		want  string
	}{
		{nil, "ceph fast nas"},
		{url.Values{"enabled": {"1"}}, "ceph nas"},
		{url.Values{"content": {"images"}}, "ceph"},
		{url.Values{"target": {"pve1"}}, "ceph"},
		{url.Values{"storage": {"fast"}}, "fast"},
	} {
		var got []string
		for _, row := range a.ok(a.form(http.MethodGet, "/nodes/pve2/storage", tc.query)).list() {
			got = append(got, row["storage"].(string))
			if row["storage"] == "fast" && (row["enabled"] != 0.0 || row["total"] != 0.0 || row["used_fraction"] != nil) {
				t.Errorf("fast on pve2 = %v", row)
			}
			if row["storage"] == "ceph" && row["used_fraction"] != 0.4 {
				t.Errorf("ceph on pve2 = %v", row)
			}
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("/nodes/pve2/storage?%s = %v, want %s", tc.query.Encode(), got, tc.want)
		}
	}
	if r := a.form(http.MethodGet, "/nodes/pve2/storage", url.Values{"storage": {"nope"}}); r.code != http.StatusBadRequest {
		t.Errorf("index of an unknown storage: %s", r.status)
	}
	if r := a.get("/nodes/pve1/storage/nope/status"); r.code != http.StatusBadRequest || r.env.Errors["storage"] != "No such storage." {
		t.Errorf("unknown storage: %s %s", r.status, r.body)
	}
	if r := a.get("/nodes/pve3/storage/ceph/status"); r.code != 595 {
		t.Errorf("offline node: %s %s, want 595", r.status, r.body)
	}
}

// pve-storage API2/Storage/Content.pm info: path, size, used and format of a volume, named
// by its full volume id (whose storage must be {storage}: else a 400 "storage ID mismatch")
// or by its name on {storage}; volume_size_info's failure for a missing volume is a 500. The
// content path is registered with an empty fragment delimiter, so a volume id may contain
// slashes (escaped or not). bpg reads it for every disk whose config has no format.
func TestVolumeInfo(t *testing.T) {
	_, a := lab(t)
	for _, path := range []string{
		"/nodes/pve1/storage/ceph/content/ceph:base-9000-disk-0",
		"/nodes/pve1/storage/ceph/content/" + url.PathEscape("ceph:base-9000-disk-0"),
		"/nodes/pve2/storage/ceph/content/base-9000-disk-0",
	} {
		got := a.ok(a.get(path)).obj()
		if got["size"] != 8.0*(1<<30) || got["format"] != "raw" || got["path"] != "rbd:ceph/base-9000-disk-0" || got["used"] == nil {
			t.Errorf("%s = %v", path, got)
		}
	}
	if got := a.ok(a.get("/nodes/pve3/storage/local-lvm/content/local-lvm:vm-103-disk-0")).obj(); got["size"] != 80.0*(1<<30) || got["path"] != "/dev/local-lvm/vm-103-disk-0" {
		t.Errorf("lvmthin volume = %v", got)
	}
	r := a.get("/nodes/pve1/storage/ceph/content/local-lvm:vm-100-disk-0")
	if r.code != http.StatusBadRequest || !strings.HasPrefix(r.env.Errors["volume"], "storage ID mismatch (local-lvm != ceph)") {
		t.Errorf("mismatch: %s %s", r.status, r.body)
	}
	r = a.get("/nodes/pve1/storage/ceph/content/ceph:vm-999-disk-0")
	if r.code != http.StatusInternalServerError || !strings.Contains(r.status, "rbd: error opening image vm-999-disk-0: (2) No such file or directory") {
		t.Errorf("missing rbd volume: %s %s", r.status, r.body)
	}
	// A volume on the node's local-lvm that lives on another node is not there either.
	r = a.get("/nodes/pve2/storage/local-lvm/content/local-lvm:vm-103-disk-0")
	if r.code != http.StatusInternalServerError || !strings.Contains(r.status, `Failed to find logical volume "local-lvm/vm-103-disk-0"`) {
		t.Errorf("volume of another node: %s %s", r.status, r.body)
	}
	// A directory volume with a slash reaches the handler (no 501) and is not there.
	r = a.get("/nodes/pve1/storage/local/content/local:100/vm-100-disk-0.qcow2")
	if r.code != http.StatusInternalServerError || !strings.Contains(r.status, "volume_size_info on 'local:100/vm-100-disk-0.qcow2' failed - no format") {
		t.Errorf("missing dir volume: %s %s", r.status, r.body)
	}
}

// pve-common RESTHandler.pm find_handler splits the path on "/" and skips empty segments, so
// a trailing slash or a doubled one reaches the same handler; bpg deletes VMs with
// DELETE .../qemu/{vmid}/?destroy-unreferenced-disks=1&purge=1.
func TestEmptyPathSegmentsAreSkipped(t *testing.T) {
	s, a := lab(t)
	if got := a.ok(a.get("//nodes//pve2/status/")).obj(); got["cpuinfo"] == nil {
		t.Errorf("node status through empty segments = %v", got)
	}
	if exit := a.task(a.form(http.MethodDelete, "/nodes/pve3/qemu/103/", url.Values{"destroy-unreferenced-disks": {"1"}, "purge": {"1"}})); exit != "OK" {
		t.Fatalf("delete with a trailing slash: %s", exit)
	}
	if _, exists := s.Guest(103); exists {
		t.Error("VM 103 is still there")
	}
	if n := s.Requests("DELETE /nodes/{node}/qemu/{vmid}"); n != 1 {
		t.Errorf("the delete was counted %d times under its endpoint, want 1", n)
	}
}

// qemu-server API2/Qemu.pm create_disks: a drive naming an existing volume gets the size
// volume_size_info reads (whatever size= the request gave); when the volume is not there,
// volume_size_info's failure (LVM's lvs, RBD's rbd info) is the error. Without it, Telmate plans size "0T" -> "8G" forever.
func TestExistingVolumeGetsItsSize(t *testing.T) {
	s, a := lab(t)
	a.ok(a.form(http.MethodPut, "/nodes/pve3/qemu/103/config", url.Values{"scsi0": {"local-lvm:vm-103-disk-0"}}))
	a.ok(a.form(http.MethodPut, "/nodes/pve3/qemu/103/config", url.Values{"scsi1": {"local-lvm:vm-103-disk-0,size=1G,discard=on"}}))
	g, _ := s.Guest(103)
	if g.Config["scsi0"] != "local-lvm:vm-103-disk-0,size=80G" || g.Config["scsi1"] != "local-lvm:vm-103-disk-0,discard=on,size=80G" {
		t.Errorf("config = scsi0 %q, scsi1 %q; want size=80G read from the storage", g.Config["scsi0"], g.Config["scsi1"])
	}
	r := a.form(http.MethodPut, "/nodes/pve3/qemu/103/config", url.Values{"scsi2": {"local-lvm:vm-103-disk-7"}})
	if r.code != http.StatusInternalServerError || r.status != `500 can't get size of '/dev/local-lvm/vm-103-disk-7': Failed to find logical volume "local-lvm/vm-103-disk-7"` {
		t.Errorf("missing volume: %s %s", r.status, r.body)
	}
	r = a.form(http.MethodPut, "/nodes/pve3/qemu/103/config", url.Values{"scsi2": {"ceph:vm-103-disk-7"}})
	if r.code != http.StatusInternalServerError || !strings.Contains(r.status, "rbd: error opening image vm-103-disk-7") {
		t.Errorf("missing rbd volume: %s %s", r.status, r.body)
	}
	// A cd-rom keeps what it was given.
	a.ok(a.form(http.MethodPut, "/nodes/pve3/qemu/103/config", url.Values{"ide2": {"none,media=cdrom"}}))
}

// pve-access-control: GET /access/users lists the users the caller may see, always itself
// (API2/User.pm index; full adds groups and tokens), and GET /access/permissions maps each
// path of get_effective_permissions (the top-level paths and the pools' guests) to the
// privileges there, or one path with ?path= (API2/AccessControl.pm permissions). root@pam has
// the Administrator role's privileges everywhere (RPCEnvironment permissions), as has its
// token without privilege separation; the simulator's user and token are exactly these.
func TestAccessUsersAndPermissions(t *testing.T) {
	s, a := lab(t)
	users := a.ok(a.get("/access/users")).list()
	if len(users) != 1 || users[0]["userid"] != "root@pam" || users[0]["enable"] != 1.0 || users[0]["tokens"] != nil {
		t.Errorf("users = %v", users)
	}
	full := a.ok(a.form(http.MethodGet, "/access/users", url.Values{"full": {"1"}})).list()
	tokens, _ := full[0]["tokens"].([]any)
	tokenID := strings.TrimPrefix(strings.Split(s.APIToken(), "=")[0], "root@pam!")
	if len(tokens) != 1 || tokens[0].(map[string]any)["tokenid"] != tokenID || tokens[0].(map[string]any)["privsep"] != 0.0 {
		t.Errorf("full users = %v", full)
	}
	if r := a.form(http.MethodGet, "/access/users", url.Values{"full": {"maybe"}}); r.code != http.StatusBadRequest {
		t.Errorf("full=maybe: %s", r.status)
	}

	perms := a.ok(a.get("/access/permissions")).obj()
	wantPaths := []string{"/", "/access", "/access/groups", "/nodes", "/pool", "/sdn", "/storage", "/vms", "/vms/100"} // 100 is in pool prod
	if len(perms) != len(wantPaths) {
		t.Errorf("permission paths = %d, want %v", len(perms), wantPaths)
	}
	for _, p := range wantPaths {
		privs, _ := perms[p].(map[string]any)
		if len(privs) != 42 || privs["VM.Allocate"] != 1.0 || privs["Sys.Modify"] != 1.0 || privs["Permissions.Modify"] != 1.0 {
			t.Errorf("%s: %d privileges %v", p, len(privs), privs)
		}
	}
	one := a.ok(a.form(http.MethodGet, "/access/permissions", url.Values{"path": {"/vms/4242"}, "userid": {"root@pam"}})).obj()
	if len(one) != 1 || len(one["/vms/4242"].(map[string]any)) != 42 {
		t.Errorf("one path = %v", one)
	}
	if other := a.ok(a.form(http.MethodGet, "/access/permissions", url.Values{"userid": {"alice@pve"}})).obj(); len(other) != 0 {
		t.Errorf("a user the simulator does not have = %v, want no paths", other)
	}
	if r := a.form(http.MethodGet, "/access/permissions", url.Values{"userid": {"alice"}}); r.code != http.StatusBadRequest || r.env.Errors["userid"] == "" {
		t.Errorf("bad userid: %s %s", r.status, r.body)
	}
}

// The request log holds every answer's method, path (empty segments skipped) and status, also
// those written on a hijacked connection (PVE's reason phrases) and 501s for what is not
// routed: what an acceptance test with a real client asserts on.
func TestRequestLog(t *testing.T) {
	var hooked []pvesim.LoggedRequest
	var mu sync.Mutex
	s, a := lab(t, pvesim.WithRequestHook(func(r pvesim.LoggedRequest) {
		mu.Lock()
		defer mu.Unlock()
		hooked = append(hooked, r)
	}))
	a.ok(a.get("/nodes/pve1/status/"))
	a.get("/nodes/pve1/qemu/100/snapshot")
	a.get("/nodes/pve1/storage/nope/status")
	want := []pvesim.LoggedRequest{{Method: "GET", Path: "/nodes/pve1/status", Status: 200},
		{Method: "GET", Path: "/nodes/pve1/qemu/100/snapshot", Status: 501},
		{Method: "GET", Path: "/nodes/pve1/storage/nope/status", Status: 400}}
	got := s.RequestLog()
	if len(got) != len(want) {
		t.Fatalf("log = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("log[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(hooked) != fmt.Sprint(want) {
		t.Errorf("the hook saw %v, want %v", hooked, want)
	}
}

// qemu-server move_vm_disk: a qmmove task copies the disk to another storage of the node,
// keeping the source as unusedN unless delete is set; the same storage, a cd-rom or a storage
// without images is refused before the task. bpg moves a clone's disk to the configured
// datastore this way.
func TestMoveDisk(t *testing.T) {
	s, a := lab(t)
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve3/qemu/103/move_disk", url.Values{"disk": {"scsi0"}, "storage": {"ceph"}})); exit != "OK" {
		t.Fatalf("move: %s", exit)
	}
	g := s.MustGuest(t, 103)
	if g.Config["scsi0"] != "ceph:vm-103-disk-0,size=80G" || g.Config["unused0"] != "local-lvm:vm-103-disk-0" {
		t.Errorf("after the move: scsi0 %q, unused0 %q", g.Config["scsi0"], g.Config["unused0"])
	}
	if got := a.ok(a.get("/nodes/pve3/storage/ceph/content/ceph:vm-103-disk-0")).obj(); got["size"] != 80.0*(1<<30) {
		t.Errorf("moved volume = %v", got)
	}
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve3/qemu/103/move_disk", url.Values{"disk": {"scsi0"}, "storage": {"local-lvm"}, "delete": {"1"}})); exit != "OK" {
		t.Fatalf("move back: %s", exit)
	}
	if g = s.MustGuest(t, 103); g.Config["scsi0"] != "local-lvm:vm-103-disk-1,size=80G" || g.Config["unused1"] != "" {
		t.Errorf("after moving back with delete: %v", g.Config)
	}
	for _, tc := range []struct {
		params url.Values
		want   string
	}{
		{url.Values{"disk": {"scsi0"}, "storage": {"local-lvm"}}, "500 you can't move to the same storage with same format"},
		{url.Values{"disk": {"scsi5"}, "storage": {"ceph"}}, "500 disk 'scsi5' does not exist"},
		{url.Values{"disk": {"scsi0"}, "storage": {"local"}}, "400 Parameter verification failed."},
		{url.Values{"disk": {"scsi0"}, "storage": {"ceph"}, "target-vmid": {"104"}}, "400 Parameter verification failed."},
	} {
		if r := a.form(http.MethodPost, "/nodes/pve3/qemu/103/move_disk", tc.params); r.status != tc.want {
			t.Errorf("move_disk %v: %s %s, want %s", tc.params, r.status, r.body, tc.want)
		}
	}
}

// qemu-server cloudinit_update (PUT .../cloudinit) generates the drive again, failing as a
// start would on a missing cicustom snippet; the power calls take only their own parameters.
func TestCloudInitUpdateAndPowerParameters(t *testing.T) {
	_, a := lab(t)
	a.ok(a.form(http.MethodPut, "/nodes/pve1/qemu/100/cloudinit", nil))
	a.ok(a.form(http.MethodPut, "/nodes/pve1/qemu/100/config", url.Values{"ide2": {"local-lvm:cloudinit"}, "cicustom": {"user=local:snippets/missing.yaml"}}))
	if r := a.form(http.MethodPut, "/nodes/pve1/qemu/100/cloudinit", nil); r.status != "500 can't find file 'local:snippets/missing.yaml'" {
		t.Errorf("missing snippet: %s", r.status)
	}
	if r := a.form(http.MethodPost, "/nodes/pve3/qemu/103/status/start", url.Values{"forceStop": {"1"}}); r.env.Errors["forceStop"] == "" {
		t.Errorf("start with a shutdown parameter: %s %s", r.status, r.body)
	}
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve3/qemu/103/status/start", url.Values{"timeout": {"300"}})); exit != "OK" {
		t.Errorf("start with timeout: %s", exit)
	}
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve3/qemu/103/status/shutdown", url.Values{"forceStop": {"1"}, "timeout": {"60"}})); exit != "OK" {
		t.Errorf("shutdown with forceStop: %s", exit)
	}
}

// pve-manager API2/Pool.pm: GET /pools/{poolid} lists the pool's guests as members, PUT
// /pools/{poolid} adds VMs (moving one from another pool only with allow-move), removes them
// with delete, and sets the comment; errors come as "update pools failed: ...". bpg moves a VM
// between pools this way when pool_id changes.
func TestPoolMembership(t *testing.T) {
	s, a := lab(t)
	members := a.ok(a.get("/pools/prod")).obj()["members"].([]any)
	if len(members) != 1 || members[0].(map[string]any)["id"] != "qemu/100" {
		t.Errorf("prod members = %v", members)
	}
	a.ok(a.form(http.MethodPut, "/pools/lab", url.Values{"vms": {"101,103"}, "comment": {"lab VMs"}}))
	for _, tc := range []struct {
		params url.Values
		want   string
	}{
		{url.Values{"vms": {"101"}}, "500 update pools failed: VM 101 is already a pool member"},
		{url.Values{"vms": {"100"}}, "500 update pools failed: VM 100 belongs already to pool 'prod' and 'allow-move' is not set"},
		{url.Values{"vms": {"102"}, "delete": {"1"}}, "500 update pools failed: VM 102 is not a pool member"},
	} {
		if r := a.form(http.MethodPut, "/pools/lab", tc.params); r.status != tc.want {
			t.Errorf("PUT /pools/lab %v: %s, want %s", tc.params, r.status, tc.want)
		}
	}
	a.ok(a.form(http.MethodPut, "/pools/lab", url.Values{"vms": {"100"}, "allow-move": {"1"}}))
	a.ok(a.form(http.MethodPut, "/pools/lab", url.Values{"vms": {"103"}, "delete": {"1"}}))
	if s.MustGuest(t, 100).Pool != "lab" || s.MustGuest(t, 101).Pool != "lab" || s.MustGuest(t, 103).Pool != "" {
		t.Errorf("pools: 100 %q, 101 %q, 103 %q", s.MustGuest(t, 100).Pool, s.MustGuest(t, 101).Pool, s.MustGuest(t, 103).Pool)
	}
	for _, p := range a.ok(a.get("/pools")).list() {
		if p["poolid"] == "lab" && p["comment"] != "lab VMs" || p["poolid"] == "prod" && p["comment"] != nil {
			t.Errorf("pool row %v", p)
		}
	}
	if r := a.get("/pools/nope"); r.status != "500 pool 'nope' does not exist" {
		t.Errorf("unknown pool: %s", r.status)
	}
}

// pve-ha-manager API2/HA/Groups.pm (PVE 8): groups are created, read with their digest,
// updated (options set or deleted, never nodes) and deleted; the errors come as
// lock_ha_domain reports them. PVE 9 migrated groups to rules: every call then
// fails. bpg's hagroup resource uses these calls.
func TestHAGroups(t *testing.T) {
	_, a := lab(t)
	a.ok(a.form(http.MethodPost, "/cluster/ha/groups", url.Values{"group": {"prefer-pve2"}, "nodes": {"pve2:2,pve3"}, "restricted": {"true"}, "comment": {"web"}}))
	got := a.ok(a.get("/cluster/ha/groups/prefer-pve2")).obj()
	if got["group"] != "prefer-pve2" || got["type"] != "group" || got["nodes"] != "pve2:2,pve3" || got["restricted"] != 1.0 || got["comment"] != "web" || got["digest"] == "" {
		t.Errorf("group = %v", got)
	}
	for _, tc := range []struct {
		method string
		path   string
		params url.Values
		want   string
	}{
		{http.MethodPost, "/cluster/ha/groups", url.Values{"group": {"prefer-pve2"}, "nodes": {"pve1"}}, "500 create ha group failed: ha group ID 'prefer-pve2' already defined"},
		{http.MethodPost, "/cluster/ha/groups", url.Values{"group": {"g2"}}, "400 Parameter verification failed."},
		{http.MethodPost, "/cluster/ha/groups", url.Values{"group": {"g2"}, "nodes": {"pve1:x"}}, "400 Parameter verification failed."},
		{http.MethodPut, "/cluster/ha/groups/prefer-pve2", url.Values{"delete": {"nodes"}}, "500 update ha group failed: unable to delete required option 'nodes'"},
		{http.MethodPut, "/cluster/ha/groups/prefer-pve2", url.Values{"comment": {"x"}, "digest": {"0000"}}, "500 update ha group failed: detected modified configuration - file changed by other user? Try again."},
		{http.MethodPut, "/cluster/ha/groups/nope", url.Values{"comment": {"x"}}, "500 update ha group failed: no such ha group 'nope'"},
		{http.MethodGet, "/cluster/ha/groups/nope", nil, "500 no such ha group 'nope'"},
	} {
		if r := a.form(tc.method, tc.path, tc.params); r.status != tc.want {
			t.Errorf("%s %s %v: %s, want %s", tc.method, tc.path, tc.params, r.status, tc.want)
		}
	}
	a.ok(a.form(http.MethodPut, "/cluster/ha/groups/prefer-pve2", url.Values{"nodes": {"pve2"}, "delete": {"comment,restricted"}, "digest": {got["digest"].(string)}}))
	if got = a.ok(a.get("/cluster/ha/groups")).list()[0]; got["nodes"] != "pve2" || got["comment"] != nil || got["restricted"] != nil {
		t.Errorf("after the update: %v", got)
	}
	a.ok(a.form(http.MethodDelete, "/cluster/ha/groups/prefer-pve2", nil))
	if rows := a.ok(a.get("/cluster/ha/groups")).list(); len(rows) != 0 {
		t.Errorf("groups after delete = %v", rows)
	}

	c := labCluster(t)
	c.HARules = []pvesim.HARuleSpec{{Rule: "r1", Type: "node-affinity", Resources: []string{"vm:102"}, Nodes: []string{"pve2"}}}
	pve9 := newAPI(t, pvesim.NewTestServer(t, c))
	if r := pve9.get("/cluster/ha/groups"); r.status != "500 cannot index groups: ha groups have been migrated to rules" {
		t.Errorf("PVE 9 index: %s", r.status)
	}
	if r := pve9.form(http.MethodPost, "/cluster/ha/groups", url.Values{"group": {"g"}, "nodes": {"pve1"}}); r.status != "500 cannot create group: ha groups have been migrated to rules" {
		t.Errorf("PVE 9 create: %s", r.status)
	}
}

// PVE 8's HA resources name a group (bpg's haresource group, Telmate's hagroup): create takes
// any group name and the index flags one that does not exist (Resources.pm create, index), an
// update needs an existing group, and a group in use cannot be deleted (Groups.pm delete),
// all as pve-ha-manager 4.0 answers. The HA manager then runs the service on the group's
// highest priority online node, and leaves it where it runs when the group has nofailback
// (Manager.pm select_service_node).
func TestHAGroupsPlaceServices(t *testing.T) {
	s, a := lab(t) // PVE 8
	rounds := func() {
		for i := 0; i < 4; i++ {
			a.get("/cluster/ha/status/current")
		}
	}
	a.ok(a.form(http.MethodPost, "/cluster/ha/groups", url.Values{"group": {"web"}, "nodes": {"pve3:2,pve2"}}))
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"102"}, "group": {"web"}}))
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:103"}, "group": {"nope"}, "state": {"stopped"}}))
	rows := map[string]map[string]any{}
	for _, row := range a.ok(a.get("/cluster/ha/resources")).list() {
		rows[row["sid"].(string)] = row
	}
	if errs, _ := rows["vm:103"]["errors"].(map[string]any); errs["group"] != "group 'nope' does not exist" || rows["vm:102"]["errors"] != nil {
		t.Errorf("index rows %v", rows)
	}
	wantError(t, a.form(http.MethodPut, "/cluster/ha/resources/vm:102", url.Values{"group": {"nope"}}), 500, "HA group 'nope' does not exist")
	wantError(t, a.form(http.MethodDelete, "/cluster/ha/groups/web", nil), 500, "delete ha group failed: ha group is used by service 'vm:102'")

	rounds()
	if g := s.MustGuest(t, 102); g.Node != "pve3" || g.Status != "running" {
		t.Fatalf("vm:102 %s on %s, want running on pve3 (the group's priority 2 node)", g.Status, g.Node)
	}
	// nofailback: a higher priority elsewhere does not move a service that runs on a group node.
	a.ok(a.form(http.MethodPut, "/cluster/ha/groups/web", url.Values{"nodes": {"pve2:3,pve3"}, "nofailback": {"1"}}))
	rounds()
	if g := s.MustGuest(t, 102); g.Node != "pve3" {
		t.Errorf("vm:102 moved to %s although its group has nofailback", g.Node)
	}
	a.ok(a.form(http.MethodPut, "/cluster/ha/groups/web", url.Values{"delete": {"nofailback"}}))
	rounds()
	if g := s.MustGuest(t, 102); g.Node != "pve2" {
		t.Errorf("vm:102 on %s, want pve2 (priority 3, failback)", g.Node)
	}
	// Out of the group, the service stays where it runs; then the group can go.
	a.ok(a.form(http.MethodPut, "/cluster/ha/resources/vm:102", url.Values{"delete": {"group"}}))
	a.ok(a.form(http.MethodPut, "/cluster/ha/groups/web", url.Values{"nodes": {"pve3"}}))
	rounds()
	if g := s.MustGuest(t, 102); g.Node != "pve2" {
		t.Errorf("vm:102 without a group moved to %s", g.Node)
	}
	a.ok(a.form(http.MethodDelete, "/cluster/ha/groups/web", nil))

	// PVE 9: the group option is refused on create and update.
	_, a9 := haCluster(t, spread())
	wantError(t, a9.form(http.MethodPut, "/cluster/ha/resources/vm:100", url.Values{"group": {"web"}}), 500, "invalid parameter 'group': ha groups have been migrated to rules")
}

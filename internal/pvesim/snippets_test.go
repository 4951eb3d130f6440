package pvesim_test

import (
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// snippetCluster has a shared CephFS with snippets, a dir storage on pve1 only, a local dir
// storage without the snippets content type, and block storage for the disks.
func snippetCluster() pvesim.Cluster {
	return pvesim.Cluster{
		Nodes: []pvesim.NodeSpec{{Name: "pve1", CPUs: 8, MemoryGiB: 16}, {Name: "pve2", CPUs: 8, MemoryGiB: 16}},
		Storages: []pvesim.StorageSpec{
			{Name: "cephfs", Type: "cephfs", Content: []string{"snippets", "iso"}, Shared: true, SizeGiB: 100, Snippets: []string{"user.yaml"}},
			{Name: "snip1", Type: "dir", Content: []string{"snippets"}, Nodes: []string{"pve1"}, SizeGiB: 10},
			{Name: "local", Type: "dir", Content: []string{"iso", "backup"}, SizeGiB: 100},
			{Name: "local-lvm", Type: "lvmthin", Content: []string{"images", "rootdir"}, SizeGiB: 500},
		},
	}
}

// The content listing has pve-storage's shape: volid, content, format, size, ctime, sorted by
// volume id; a content filter or a storage without that content type lists nothing of it.
func TestStorageContentListsSnippets(t *testing.T) {
	s := pvesim.NewTestServer(t, snippetCluster())
	a := newAPI(t, s)
	if err := s.PutSnippet("pve2", "cephfs", "Net.yaml", 300); err != nil {
		t.Fatal(err)
	}
	rows := a.ok(a.form(http.MethodGet, "/nodes/pve1/storage/cephfs/content", url.Values{"content": {"snippets"}})).list()
	var volids []string
	for _, r := range rows {
		volids = append(volids, r["volid"].(string))
		if r["content"] != "snippets" || r["format"] != "snippet" || r["size"] == nil || r["ctime"] == nil {
			t.Errorf("row %v: want content snippets, format snippet, size and ctime", r)
		}
	}
	if want := []string{"cephfs:snippets/Net.yaml", "cephfs:snippets/user.yaml"}; !reflect.DeepEqual(volids, want) {
		t.Errorf("snippets of the shared storage seen from pve1 = %v, want %v (sorted case-insensitively)", volids, want)
	}
	if rows := a.ok(a.form(http.MethodGet, "/nodes/pve1/storage/cephfs/content", url.Values{"content": {"iso"}})).list(); len(rows) != 0 {
		t.Errorf("iso content = %v, want none", rows)
	}
	if rows := a.ok(a.form(http.MethodGet, "/nodes/pve1/storage/local/content", url.Values{"content": {"snippets"}})).list(); len(rows) != 0 {
		t.Errorf("a storage without snippets content listed %v", rows)
	}
	refusals := []struct{ path, content, status string }{
		{"/nodes/pve2/storage/snip1/content", "snippets", "500 storage 'snip1' is not available on node 'pve2'"},
		{"/nodes/pve1/storage/nope/content", "", "500 storage 'nope' does not exist"},
		{"/nodes/pve1/storage/cephfs/content", "snippet", "400 Parameter verification failed."},
	}
	for _, tt := range refusals {
		params := url.Values{}
		if tt.content != "" {
			params.Set("content", tt.content)
		}
		if r := a.form(http.MethodGet, tt.path, params); r.status != tt.status {
			t.Errorf("%s content=%s: status %q, want %q", tt.path, tt.content, r.status, tt.status)
		}
	}
	if err := s.PutSnippet("pve1", "local", "x.yaml", 1); err == nil {
		t.Error("PutSnippet placed a file on a storage without the snippets content type")
	}
}

// cicustom volumes are checked as qemu-server's Cloudinit.pm does: only when the cloud-init
// drive is generated, at start, with PVE's messages; the config write itself takes any
// well-formed volume id.
func TestCicustomCheckedAtStart(t *testing.T) {
	tests := []struct {
		cicustom string
		want     string
	}{
		{"user=cephfs:snippets/user.yaml", "OK"},
		{"user=snip1:snippets/only-on-pve1.yaml", "OK"},
		{"user=cephfs:snippets/missing.yaml", "can't find file 'cephfs:snippets/missing.yaml'"},
		{"vendor=cephfs:snippets/user.yaml,network=nope:snippets/n.yaml", "storage 'nope' does not exist"},
		{"user=local-lvm:snippets/user.yaml", "unable to parse lvm volume name 'snippets/user.yaml'"},
		{"user=local:snippets/user.yaml", "can't find file 'local:snippets/user.yaml'"},
		{"user=cephfs:iso/user.iso", "cephfs:iso/user.iso is not in the snippets directory"},
		{"user=cephfs:user.yaml", "unable to parse directory volume name 'user.yaml'"},
	}
	for _, tt := range tests {
		t.Run(tt.cicustom, func(t *testing.T) {
			s := pvesim.NewTestServer(t, snippetCluster())
			a := newAPI(t, s)
			if err := s.PutSnippet("pve1", "snip1", "only-on-pve1.yaml", 10); err != nil {
				t.Fatal(err)
			}
			if exit := a.task(a.form(http.MethodPost, "/nodes/pve1/qemu", url.Values{"vmid": {"150"}, "ide2": {"local-lvm:cloudinit"},
				"cicustom": {tt.cicustom}})); exit != "OK" {
				t.Fatalf("create with cicustom %s: %s; PVE takes any well-formed volume id", tt.cicustom, exit)
			}
			if exit := a.task(a.form(http.MethodPost, "/nodes/pve1/qemu/150/status/start", nil)); exit != tt.want {
				t.Fatalf("start: %q, want %q", exit, tt.want)
			}
			g := s.MustGuest(t, 150)
			if want := map[bool]string{true: "running", false: "stopped"}[tt.want == "OK"]; g.Status != want {
				t.Errorf("VM is %s after the start, want %s", g.Status, want)
			}
		})
	}
}

func TestCicustomCheckedWhenTheDriveIsGenerated(t *testing.T) {
	s := pvesim.NewTestServer(t, snippetCluster())
	a := newAPI(t, s)
	bad := "user=cephfs:snippets/missing.yaml"
	// Without a cloud-init drive nothing is generated: a start ignores cicustom.
	a.task(a.form(http.MethodPost, "/nodes/pve1/qemu", url.Values{"vmid": {"150"}, "cicustom": {bad}}))
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve1/qemu/150/status/start", nil)); exit != "OK" {
		t.Fatalf("start without a cloud-init drive: %s", exit)
	}
	// A stopped VM gaining the drive has it generated right away; the config stays written.
	a.task(a.form(http.MethodPost, "/nodes/pve1/qemu", url.Values{"vmid": {"151"}, "cicustom": {bad}}))
	if exit := a.task(a.form(http.MethodPost, "/nodes/pve1/qemu/151/config", url.Values{"ide2": {"local-lvm:cloudinit"}})); exit != "can't find file 'cephfs:snippets/missing.yaml'" {
		t.Fatalf("adding the drive: %q", exit)
	}
	if g := s.MustGuest(t, 151); !strings.Contains(g.Config["ide2"], "vm-151-cloudinit") {
		t.Errorf("ide2 = %q: the config is written before the drive is generated", g.Config["ide2"])
	}
	r := a.form(http.MethodPut, "/nodes/pve1/qemu/151/config", url.Values{"cicustom": {"user=cephfs:snippets/user.yaml"}})
	if a.ok(r); a.task(a.form(http.MethodPost, "/nodes/pve1/qemu/151/status/start", nil)) != "OK" {
		t.Error("start after fixing cicustom failed")
	}
	// start=1 on create: the create's worker forks a qmstart worker, whose failure is its own.
	exit := a.task(a.form(http.MethodPost, "/nodes/pve1/qemu", url.Values{"vmid": {"152"}, "ide2": {"local-lvm:cloudinit"}, "cicustom": {bad}, "start": {"1"}}))
	if g := s.MustGuest(t, 152); exit != "OK" || g.Status != "stopped" {
		t.Errorf("create with start=1: exit %q, VM %s; want OK and stopped", exit, g.Status)
	}
}

func TestClusterFileStorageContent(t *testing.T) {
	for _, tt := range []struct {
		spec pvesim.StorageSpec
		want string
	}{
		{pvesim.StorageSpec{Name: "ceph", Type: "rbd", Content: []string{"images", "snippets"}}, `type "rbd" cannot hold content "snippets"`},
		{pvesim.StorageSpec{Name: "local", Type: "dir", Content: []string{"iso"}, Snippets: []string{"a.yaml"}}, "has snippets but not the snippets content type"},
		{pvesim.StorageSpec{Name: "local", Type: "dir", Content: []string{"snippets"}, Snippets: []string{"a/b.yaml"}}, "is not a file name"},
	} {
		_, err := pvesim.New(pvesim.Cluster{Nodes: []pvesim.NodeSpec{{Name: "pve1", CPUs: 1, MemoryGiB: 1}}, Storages: []pvesim.StorageSpec{tt.spec}})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want %q", tt.spec, err, tt.want)
		}
	}
}

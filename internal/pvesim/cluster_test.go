package pvesim_test

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

func TestParseCluster(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		wantErr string
	}{
		{"yaml", "nodes: [{name: pve1, cpus: 4, memory_gib: 8}]\nguests: [{vmid: 100, node: pve1}]\n", ""},
		{"json", `{"nodes":[{"name":"pve1","cpus":4,"memory_gib":8}],"next_id":{"lower":500,"upper":600}}`, ""},
		{"unknown key", "nodes: [{name: pve1, cpus: 4, memory_gib: 8, ram: 3}]\n", "line 1: unknown key ram in a node; the keys are name, cpus, memory_gib, cpu_load, mem_used_gib, offline, hastate, arch, notes"},
		{"misspelled top-level key", "node: []\n", "unknown key node at the top level; the keys are nodes, storages, guests, pools, next_id, ha_rules, crs, remote_files"},
		{"misspelled guest key", "guests: [{vmid: 100, tag: [a]}]\n", "unknown key tag in a guest; the keys are vmid, node, type, name, status, cores, sockets, memory_mib, template, tags, pool, config"},
		{"cpu_load above 1", "nodes: [{name: pve1, cpus: 4, memory_gib: 8, cpu_load: 35}]\n", `node "pve1" has cpu_load 35 and mem_used_gib 0; cpu_load is a fraction of its CPUs (0..1)`},
		{"mem_used_gib above memory", "nodes: [{name: pve1, cpus: 4, memory_gib: 8, mem_used_gib: 9}]\n", "mem_used_gib at most its memory_gib 8"},
		{"misspelled storage type", "storages: [{name: thin, type: lvm-thin}]\n", `storage "thin" has type "lvm-thin"; use one of btrfs, cephfs, cifs, dir, glusterfs, iscsi, lvm, lvmthin, nfs, pbs, rbd, zfs, zfspool, or no type`},
		{"negative guest size", "NODES guests: [{vmid: 100, node: pve1, memory_mib: -1}]\n", "guest 100 has cores 0, sockets 0, memory_mib -1; none can be negative"},
		{"misspelled config key", "NODES guests: [{vmid: 100, node: pve1, config: {scsii0: 'local:100/vm-100-disk-0.raw'}}]\n", "guest 100: config scsii0: property is not defined in schema"},
		{"bad config value", "NODES guests: [{vmid: 100, node: pve1, config: {cores: many}}]\n", "guest 100: config cores: type check ('integer') failed"},
		{"disk on a storage not in the file", "NODES guests: [{vmid: 100, node: pve1, config: {scsi0: 'ceph:vm-100-disk-0,size=8G'}}]\n", `guest 100: scsi0 is on storage "ceph", which is not in storages`},
		{"container config is not checked", "NODES guests: [{vmid: 100, node: pve1, type: lxc, config: {rootfs: 'local:100/vm-100-disk-0.raw'}}]\n", ""},
		{"misspelled checksum algorithm", "remote_files: [{url: 'https://example.com/a.iso', size: 1, checksums: {sha-256: ab}}]\n", `remote file "https://example.com/a.iso" has a checksum "sha-256"; the algorithms are md5, sha1, sha224, sha256, sha384, sha512`},
		{"node without cpus", "nodes: [{name: pve1, memory_gib: 8}]\n", `node "pve1" needs a name, cpus > 0 and memory_gib > 0`},
		{"duplicate vmid", "nodes: [{name: pve1, cpus: 4, memory_gib: 8}]\nguests: [{vmid: 100, node: pve1}, {vmid: 100, node: pve1}]\n", "guest vmid 100 is invalid or duplicated"},
		{"vmid out of range", "nodes: [{name: pve1, cpus: 4, memory_gib: 8}]\nguests: [{vmid: 99, node: pve1}]\n", "guest vmid 99 is invalid or duplicated"},
		{"guest on an unknown node", "nodes: [{name: pve1, cpus: 4, memory_gib: 8}]\nguests: [{vmid: 100, node: pve2}]\n", `guest 100 is on unknown node "pve2"`},
		{"not a cluster file", "- just\n- a list\n", "cannot unmarshal"},
		{"node twice", "nodes: [{name: pve1, cpus: 4, memory_gib: 8}, {name: pve1, cpus: 4, memory_gib: 8}]\n", `node "pve1" is listed twice`},
		{"storage on an unknown node", "nodes: [{name: pve1, cpus: 4, memory_gib: 8}]\nstorages: [{name: local, size_gib: 10, nodes: [pve2]}]\n", `storage "local" is enabled on unknown node "pve2"`},
		{"storage overfull", "storages: [{name: local, size_gib: 10, used_gib: 11}]\n", `storage "local" needs a name and 0 <= used_gib <= size_gib`},
		{"guest type", "nodes: [{name: pve1, cpus: 4, memory_gib: 8}]\nguests: [{vmid: 100, node: pve1, type: vm}]\n", `guest 100 has type "vm"; use qemu or lxc`},
		{"guest status", "nodes: [{name: pve1, cpus: 4, memory_gib: 8}]\nguests: [{vmid: 100, node: pve1, status: paused}]\n", `guest 100 has status "paused"; use running or stopped`},
		{"unknown pool", "nodes: [{name: pve1, cpus: 4, memory_gib: 8}]\nguests: [{vmid: 100, node: pve1, pool: prod}]\n", `guest 100 is in pool "prod", which is not in pools`},
		{"running template", "nodes: [{name: pve1, cpus: 4, memory_gib: 8}]\nguests: [{vmid: 100, node: pve1, template: true, status: running}]\n", "guest 100 is a template and cannot be running"},
		{"next_id bounds", "next_id: {lower: 500, upper: 400}\n", "next_id needs 100 <= lower < upper, got lower 500, upper 400"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := pvesim.ParseCluster([]byte(strings.Replace(tt.file, "NODES ", "nodes: [{name: pve1, cpus: 4, memory_gib: 8}]\n", 1)))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	if _, err := pvesim.New(pvesim.Cluster{Guests: []pvesim.GuestSpec{{VMID: 100, Node: "x"}}}); err == nil {
		t.Error("New accepted a guest on an unknown node")
	}
}

// The lab file is what the demo and the standalone binary serve: 5 nodes, one offline, a
// clonable template on shared storage, an lxc, a pool and no next-id bounds.
func TestLabCluster(t *testing.T) {
	s, a := lab(t)
	nodes := a.ok(a.get("/nodes")).list()
	offline := 0
	for _, n := range nodes {
		if n["status"] == "offline" {
			offline++
		}
	}
	if len(nodes) != 5 || offline != 1 {
		t.Errorf("%d nodes, %d offline; want 5 and 1", len(nodes), offline)
	}
	tmpl := s.MustGuest(t, 9000)
	if tmpl.Config["template"] != "1" || !strings.HasPrefix(tmpl.Config["scsi0"], "ceph:") {
		t.Errorf("template 9000: %v", tmpl.Config)
	}
	if ct := s.MustGuest(t, 200); ct.Type != "lxc" {
		t.Errorf("guest 200 is %q, want lxc", ct.Type)
	}
	if g := s.MustGuest(t, 100); g.Config["tags"] != "db;prod" || g.Pool != "prod" {
		t.Errorf("guest 100: tags %q pool %q", g.Config["tags"], g.Pool)
	}
	if opts := a.ok(a.get("/cluster/options")).obj(); opts["next-id"] != nil {
		t.Errorf("lab next-id is set: %v", opts["next-id"])
	}
	if lxc := a.ok(a.get("/nodes/pve2/lxc")).list(); len(lxc) != 1 || lxc[0]["vmid"] != 200.0 {
		t.Errorf("pve2 lxc list %v", lxc)
	}
	if pools := fmt.Sprint(a.ok(a.get("/pools")).list()); pools != "[map[poolid:lab] map[poolid:prod]]" {
		t.Errorf("pools %s, want lab and prod, without comments", pools)
	}
}

func TestNextIDBounds(t *testing.T) {
	c := pvesim.Cluster{
		Nodes:  []pvesim.NodeSpec{{Name: "pve1", CPUs: 4, MemoryGiB: 8}},
		Guests: []pvesim.GuestSpec{{VMID: 200, Node: "pve1"}, {VMID: 201, Node: "pve1", Type: "lxc"}},
		NextID: &pvesim.NextIDSpec{Lower: 200, Upper: 203},
	}
	s := pvesim.NewTestServer(t, c)
	a := newAPI(t, s)
	if id := a.ok(a.get("/cluster/nextid")); id.str() != "202" {
		t.Fatalf("nextid %s, want \"202\" (as a string; lxc ids count)", id.body)
	}
	nid := a.ok(a.get("/cluster/options")).obj()["next-id"].(map[string]any)
	if nid["lower"] != "200" || nid["upper"] != "203" {
		t.Errorf("options next-id %v", nid)
	}
	if r := a.get("/cluster/nextid?vmid=150"); r.str() != "150" {
		t.Errorf("nextid?vmid=150 (outside the bounds, but free) = %s", r.body)
	}
	s.TakeVMID(202)
	if r := a.get("/cluster/nextid"); r.status != "500 unable to get any free VMID in range [200, 203]" {
		t.Errorf("exhausted range: %s", r.status)
	}
	if r := a.get("/cluster/resources?type=vm"); len(r.list()) != 3 || r.code != http.StatusOK {
		t.Errorf("type=vm lists %d guests, want qemu and lxc", len(r.list()))
	}
}

// examples/lab/README.md documents the cluster file field by field: each table lists exactly
// the keys the loader takes for that part, and the cluster-wide rows name the keys of their
// entries (an HA rule's, a remote file's, next_id's).
func TestClusterFileDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../examples/lab/README.md")
	if err != nil {
		t.Fatal(err)
	}
	keys := func(v any) []string {
		var out []string
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			out = append(out, strings.Split(typ.Field(i).Tag.Get("yaml"), ",")[0])
		}
		slices.Sort(out)
		return out
	}
	// rows maps each table's first-column keys to their rows, by the heading above the table.
	rows := map[string]map[string]string{}
	heading := ""
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "#") {
			heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
			rows[heading] = map[string]string{}
			continue
		}
		cells := strings.Split(line, "|")
		if heading == "" || len(cells) < 3 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		for _, k := range strings.Split(cells[1], ",") {
			rows[heading][strings.Trim(strings.TrimSpace(k), "`")] = line
		}
	}
	topLevel := slices.DeleteFunc(keys(pvesim.Cluster{}), func(k string) bool { return k == "nodes" || k == "storages" || k == "guests" })
	for heading, want := range map[string][]string{"`nodes` (list)": keys(pvesim.NodeSpec{}),
		"`storages` (list)": keys(pvesim.StorageSpec{}), "`guests` (list)": keys(pvesim.GuestSpec{}), "Cluster-wide": topLevel} {
		if got := slices.Sorted(maps.Keys(rows[heading])); !slices.Equal(got, want) {
			t.Errorf("examples/lab/README.md, %s documents %v; the loader takes %v", heading, got, want)
		}
	}
	for key, entry := range map[string]any{"next_id": pvesim.NextIDSpec{}, "ha_rules": pvesim.HARuleSpec{}, "remote_files": pvesim.RemoteFileSpec{}} {
		for _, k := range keys(entry) {
			if row := rows["Cluster-wide"][key]; !regexp.MustCompile("[`{ ]" + k + "[`},]").MatchString(row) {
				t.Errorf("examples/lab/README.md, %s does not document its key %s: %s", key, k, row)
			}
		}
	}
}

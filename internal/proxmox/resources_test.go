package proxmox

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
)

// refRow is a /cluster/resources row as encoding/json reads it, the reference for the
// hand-written decoder.
type refRow struct {
	Type, Node, Status, Name, Tags, Pool, Lock, Storage, Content string
	HAState                                                      string `json:"hastate"`
	Arch                                                         string `json:"host-arch"`
	VMID                                                         int
	MaxCPU, CPU                                                  float64
	MaxMem, Mem, MaxDisk, Disk                                   uint64
	Template, Shared                                             int
}

// resource keeps what the decoder keeps for a row of r's type.
func (r refRow) resource() resource {
	out := resource{Type: r.Type, Node: r.Node, Status: r.Status, Name: r.Name, Tags: r.Tags, Pool: r.Pool, Lock: r.Lock,
		Storage: r.Storage, Content: r.Content, HAState: r.HAState, Arch: r.Arch}
	switch r.Type {
	case "node":
		out.MaxCPU, out.CPU, out.MaxMem, out.Mem = r.MaxCPU, r.CPU, r.MaxMem, r.Mem
	case "storage":
		out.MaxDisk, out.Disk, out.Shared = r.MaxDisk, r.Disk, r.Shared == 1
	case "qemu", "lxc":
		out.VMID, out.MaxCPU, out.MaxMem, out.Template = r.VMID, r.MaxCPU, r.MaxMem, r.Template == 1
	}
	return out
}

func decodeAll(body []byte) ([]resource, error) {
	var rows []resource
	err := decodeResources(body, func(r *resource) { rows = append(rows, *r) })
	return rows, err
}

func referenceRows(t testing.TB, body []byte) []resource {
	t.Helper()
	var envelope struct{ Data []refRow }
	if err := json.Unmarshal(body, &envelope); err != nil {
		t.Fatal(err)
	}
	var rows []resource
	for _, r := range envelope.Data {
		rows = append(rows, r.resource())
	}
	return rows
}

// The decoder reads PVE's answers exactly as encoding/json does.
func TestDecodeResourcesMatchesEncodingJSON(t *testing.T) {
	fixture, err := os.ReadFile("testdata/cluster_resources.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"PVE 8 fixture": fixture, "64 x 200": clusterResourcesBody(64, 200)} {
		got, err := decodeAll(body)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := referenceRows(t, body); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, want)
		}
	}
}

func TestDecodeResourcesEdgeCases(t *testing.T) {
	tests := []struct {
		name, body string
		want       []resource
	}{
		{"no rows", `{"data":[]}`, nil},
		{"null data", `{"data":null}`, nil},
		{"whitespace and other keys", " {\n \"total\" : 2 ,\"data\" :\t[ {\"type\" : \"qemu\" , \"vmid\" : 7 } ] , \"x\":{}}\r\n",
			[]resource{{Type: "qemu", VMID: 7}}},
		{"escapes and UTF-8", `{"data":[{"type":"qemu","vmid":1,"name":"a\"b\\c\/d\u00e9\ud83d\ude00","tags":"café"}]}`,
			[]resource{{Type: "qemu", VMID: 1, Name: "a\"b\\c/dé😀", Tags: "café"}}},
		{"quoted numbers, as older PVE sent some", `{"data":[{"type":"lxc","vmid":"300","maxcpu":"0.5","maxmem":"1024","template":"1"}]}`,
			[]resource{{Type: "lxc", VMID: 300, MaxCPU: 0.5, MaxMem: 1024, Template: true}}},
		{"nulls and nested unknown values", `{"data":[{"type":"node","node":"n1","pool":null,"cpu":null,"x":{"a":[1,-2.5e+3,true,false,null,"s",{"b":[]}]},"maxmem":2E3}]}`,
			[]resource{{Type: "node", Node: "n1", MaxMem: 2000}}},
		{"numbers a row's type does not use are not kept", `{"data":[{"vmid":5,"maxdisk":9,"cpu":0.5,"type":"storage","disk":3}]}`,
			[]resource{{Type: "storage", MaxDisk: 9, Disk: 3}}},
		{"a later key wins", `{"data":[{"type":"qemu","vmid":1,"vmid":2}]}`, []resource{{Type: "qemu", VMID: 2}}},
	}
	for _, tt := range tests {
		got, err := decodeAll([]byte(tt.body))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, got, tt.want)
		}
	}
}

func TestDecodeResourcesErrors(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"empty", ``, `offset 0: expected '{'`},
		{"no data", `{"errors":{}}`, `no "data" in the answer`},
		{"data not a list", `{"data":{}}`, `expected '['`},
		{"truncated", `{"data":[{"type":"qemu","vmid":1`, `expected , or }`},
		{"unterminated string", `{"data":[{"type":"qe`, `unterminated string`},
		{"trailing data", `{"data":[]} x`, `unexpected data after the answer`},
		{"bad number", `{"data":[{"type":"qemu","vmid":01}]}`, `expected , or }`},
		{"fractional vmid", `{"data":[{"type":"qemu","vmid":1.5}]}`, `vmid 1.5 is not a VM ID`},
		{"negative size", `{"data":[{"type":"node","maxmem":-1}]}`, `maxmem -1 is out of range`},
		{"text for a number", `{"data":[{"type":"node","node":"n1","cpu":"high"}]}`, `row node/n1: cpu high is not a number`},
		{"control character", "{\"data\":[{\"name\":\"a\tb\"}]}", `control character in a string`},
		{"bad escape", `{"data":[{"name":"\x"}]}`, `bad escape`},
		{"bad value", `{"data":[{"x":tru}]}`, `expected a value`},
	}
	for _, tt := range tests {
		_, err := decodeAll([]byte(tt.body))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "decode /cluster/resources: ") {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// FuzzDecodeResources: whatever the answer, the decoder does not panic, accepts only valid
// JSON, and reads what it accepts as encoding/json does.
func FuzzDecodeResources(f *testing.F) {
	fixture, err := os.ReadFile("testdata/cluster_resources.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(fixture)
	f.Add([]byte(`{"data":[{"type":"qemu","vmid":"7","name":"\u00e9"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := decodeAll(body)
		if err != nil {
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		var envelope struct{ Data []refRow }
		if json.Unmarshal(body, &envelope) != nil || strings.ContainsAny(string(body), "ABCDEFGHIJKLMNOPQRSTUVWXYZ\\") {
			return // quoted numbers, or keys that encoding/json matches case-insensitively
		}
		var want []resource
		for _, r := range envelope.Data {
			want = append(want, r.resource())
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %+v\nwant %+v", body, got, want)
		}
	})
}

// clusterResourcesBody is a /cluster/resources answer as PVE 8 sends it for nodes x guests
// (every field PVE sends, most of them unused by the scheduler).
func clusterResourcesBody(nodes, guests int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"data":[`)
	for i := 0; i < guests; i++ {
		fmt.Fprintf(&sb, `{"id":"qemu/%d","type":"qemu","vmid":%d,"node":"pve%d","name":"vm-%d","status":"running","template":0,"maxcpu":2,"cpu":0.0123456789,"maxmem":2147483648,"mem":1073741824,"maxdisk":34359738368,"disk":0,"netin":123456789,"netout":98765432,"diskread":1234567890,"diskwrite":987654321,"uptime":3600,"tags":"a;b"},`,
			100+i, 100+i, i%nodes, i)
	}
	for i := 0; i < nodes; i++ {
		fmt.Fprintf(&sb, `{"id":"node/pve%d","type":"node","node":"pve%d","status":"online","level":"","cgroup-mode":2,"maxcpu":64,"cpu":0.2,"maxmem":549755813888,"mem":137438953472,"maxdisk":1,"disk":1,"uptime":1},`, i, i)
		fmt.Fprintf(&sb, `{"id":"storage/pve%d/local-lvm","type":"storage","storage":"local-lvm","node":"pve%d","plugintype":"lvmthin","content":"images,rootdir","shared":0,"status":"available","disk":1,"maxdisk":2},`, i, i)
	}
	fmt.Fprintf(&sb, `{"id":"sdn/pve0/localnetwork","type":"sdn","sdn":"localnetwork","node":"pve0","status":"ok"}]}`)
	return []byte(sb.String())
}

// BenchmarkDecodeResources is the decoding alone: a 64-node, 10,000-guest /cluster/resources
// answer into a snapshot, no HTTP.
func BenchmarkDecodeResources(b *testing.B) {
	body := clusterResourcesBody(64, 10000)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		sb := newSnapshotBuilder(len(body))
		if err := decodeResources(body, sb.add); err != nil {
			b.Fatal(err)
		}
		if snap, _ := sb.build(nil); len(snap.Guests) != 10000 {
			b.Fatal(len(snap.Guests))
		}
	}
}

// BenchmarkSnapshotClientShare is the client's whole share of a 64-node, 10,000-guest
// snapshot: HTTP on loopback, reading and decoding the answer, building the snapshot. The
// server only writes a prepared answer, so nearly all the time is the client's.
func BenchmarkSnapshotClientShare(b *testing.B) {
	body := clusterResourcesBody(64, 10000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		if r.URL.Path == "/api2/json/cluster/options" {
			_, _ = w.Write([]byte(`{"data":{}}`))
			return
		}
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	c, err := New(Config{Endpoint: srv.URL, APIToken: "root@pam!b=secret"})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if snap, err := c.Snapshot(context.Background()); err != nil || len(snap.Guests) != 10000 {
			b.Fatal(err)
		}
	}
}

package proxmox_test

import (
	"context"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

const notesEndpoint = "GET /nodes/{node}/config"

func notesCluster(t *testing.T) *pvesim.Server {
	c, err := pvesim.ParseCluster([]byte(`
nodes:
  - {name: pve1, cpus: 8, memory_gib: 32, arch: aarch64, notes: "qemu-scheduler/labels: zone=a"}
  - {name: pve2, cpus: 8, memory_gib: 32, hastate: maintenance}
  - {name: pve3, cpus: 8, memory_gib: 32, offline: true, notes: "qemu-scheduler/labels: zone=c"}
`))
	if err != nil {
		t.Fatal(err)
	}
	return pvesim.NewTestServer(t, c)
}

func TestSnapshotNodeHAStateAndArch(t *testing.T) {
	s := notesCluster(t)
	snap, err := newClient(t, s).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]string{}
	for _, n := range snap.Nodes {
		got[n.Name] = [2]string{n.HAState, n.Arch}
	}
	want := map[string][2]string{"pve1": {"online", "aarch64"}, "pve2": {"maintenance", ""}, "pve3": {"unknown", ""}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hastate, arch = %v, want %v", got, want)
	}
}

// Notes are read once per node and process: a second Read costs nothing, an offline node has
// none, and only the call that read a node lists it as fresh.
func TestNotesReadOnce(t *testing.T) {
	s := notesCluster(t)
	cache := proxmox.NewNotesCache(newClient(t, s))
	ctx := context.Background()
	first := cache.Read(ctx, []string{"pve3", "pve1", "pve2"})
	wantNotes := map[string]string{"pve1": "qemu-scheduler/labels: zone=a\n", "pve2": "", "pve3": ""}
	if !reflect.DeepEqual(first.Notes, wantNotes) || len(first.Warnings) != 0 {
		t.Errorf("first read: %+v", first)
	}
	if !reflect.DeepEqual(first.Fresh, []string{"pve1", "pve2", "pve3"}) {
		t.Errorf("fresh = %v", first.Fresh)
	}
	second := cache.Read(ctx, []string{"pve1", "pve2", "pve3"})
	if !reflect.DeepEqual(second.Notes, wantNotes) || second.Fresh != nil {
		t.Errorf("second read: %+v", second)
	}
	if got := s.Requests(notesEndpoint); got != 3 {
		t.Errorf("%d Notes requests for 3 nodes read twice, want 3", got)
	}
}

func TestNotesForbiddenWarnsOnce(t *testing.T) {
	s := notesCluster(t)
	s.Forbid(notesEndpoint, "/", "Sys.Audit")
	cache := proxmox.NewNotesCache(newClient(t, s))
	first := cache.Read(context.Background(), []string{"pve1", "pve2"})
	if len(first.Warnings) != 1 || !strings.Contains(first.Warnings[0], "Sys.Audit") || !strings.Contains(first.Warnings[0], "read_node_notes") {
		t.Errorf("warnings = %q, want one naming Sys.Audit and read_node_notes", first.Warnings)
	}
	if len(first.Notes) != 0 {
		t.Errorf("notes = %v, want none", first.Notes)
	}
	calls := s.Requests(notesEndpoint)
	again := cache.Read(context.Background(), []string{"pve1", "pve2"})
	if len(again.Warnings) != 0 || s.Requests(notesEndpoint) != calls {
		t.Errorf("after a 403 the cache read again or warned again: %q", again.Warnings)
	}
}

func TestNotesOtherErrorsWarn(t *testing.T) {
	s := notesCluster(t)
	s.FailRequests(notesEndpoint, 1, 500, "cannot read node config")
	cache := proxmox.NewNotesCache(newClient(t, s))
	got := cache.Read(context.Background(), []string{"pve1"})
	if len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "node pve1: read the Notes of node pve1: cannot read node config") {
		t.Errorf("warnings = %q", got.Warnings)
	}
	if got.Notes["pve1"] != "" {
		t.Errorf("notes = %v", got.Notes)
	}
}

// BenchmarkNotesRead64 reads the Notes of 64 nodes from a fresh cache: the cost read_node_notes
// adds once per provider process.
func BenchmarkNotesRead64(b *testing.B) {
	var spec strings.Builder
	spec.WriteString("nodes:\n")
	for i := range 64 {
		spec.WriteString("  - {name: pve" + strconv.Itoa(i) + ", cpus: 8, memory_gib: 32, notes: \"qemu-scheduler/labels: zone=z" + strconv.Itoa(i%3) + "\"}\n")
	}
	c, err := pvesim.ParseCluster([]byte(spec.String()))
	if err != nil {
		b.Fatal(err)
	}
	s := pvesim.NewTestServer(b, c)
	client := newClientTB(b, s)
	names := make([]string, 64)
	for i := range names {
		names[i] = "pve" + strconv.Itoa(i)
	}
	for b.Loop() {
		if got := proxmox.NewNotesCache(client).Read(context.Background(), names); len(got.Notes) != 64 {
			b.Fatalf("read %d nodes", len(got.Notes))
		}
	}
	b.ReportMetric(float64(s.Requests(notesEndpoint))/float64(b.N), "requests/op")
}

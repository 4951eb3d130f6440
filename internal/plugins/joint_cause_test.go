package plugins

import (
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// causeOf schedules the set, which must be refused as proven, and returns its cause.
func causeOf(t *testing.T, snap scheduler.Snapshot, reqs []scheduler.Request) string {
	t.Helper()
	_, err := mustProfile(scheduler.PluginConfig{}).ScheduleSet(snap, reqs, scheduler.Options{})
	se := setError(t, err)
	if se.GaveUp || se.Alone || se.Cause == "" || !strings.HasSuffix(err.Error(), "\n"+se.Cause) {
		t.Fatalf("err = %v (%+v), want a proven refusal ending in its cause", err, se)
	}
	return se.Cause
}

// Seven 4 GiB VMs on three 8 GiB nodes: every one is needed to overflow the memory, and the
// cause says how much is missing.
func TestScheduleSetCauseCapacity(t *testing.T) {
	snap := scheduler.Snapshot{Nodes: []scheduler.Node{node("pve1", 8, 8), node("pve2", 8, 8), node("pve3", 8, 8)}}
	want := "cause: web-0, web-1, web-2, web-3, web-4, web-5, web-6 need 28 GiB of memory on pve1, pve2, pve3, which have 24 GiB of memory free (MemoryOvercommit)"
	if got := causeOf(t, snap, replicas(7, 1, 4)); got != want {
		t.Fatalf("cause = %q\nwant    %q", got, want)
	}
	// Four 5 GiB VMs need less than the 24 GiB free, but one per node fits: the pieces are
	// too small, and a fifth VM is not part of the cause.
	want = "cause: web-0, web-1, web-2, web-3 need 20 GiB of memory on pve1, pve2, pve3, which have 24 GiB of memory free (MemoryOvercommit), in pieces too small for them"
	if got := causeOf(t, snap, replicas(5, 1, 5)); got != want {
		t.Fatalf("cause = %q\nwant    %q", got, want)
	}
}

// Two zones, the first full: a DoNotSchedule spread by zone lets one db VM into the second,
// not two. The web VMs beside them are not part of the cause.
func TestScheduleSetCauseSpread(t *testing.T) {
	nodes := []scheduler.Node{node("pve1", 8, 8), node("pve2", 8, 32), node("pve3", 8, 32)}
	for i, z := range []string{"z1", "z2", "z2"} {
		nodes[i].Labels = map[string]string{"zone": z}
	}
	snap := scheduler.Snapshot{Nodes: nodes, Guests: []scheduler.Guest{running(100, "pve1", 1, 8)}}
	reqs := replicas(4, 1, 1)
	for _, name := range []string{"db-0", "db-1"} {
		r := sized(name, 1, 2)
		r.Tags = []string{"db"}
		r.TopologySpread = spreadOf("zone", 1, DoNotSchedule, "db")
		reqs = append(reqs, r)
	}
	want := "cause: db-0, db-1 with topology_spread [db] by zone max_skew 1: they cannot be placed together with it, and can without it"
	if got := causeOf(t, snap, reqs); got != want {
		t.Fatalf("cause = %q\nwant    %q", got, want)
	}
}

// The anti-affinity cause keeps its words: the group has more members than nodes.
func TestScheduleSetCauseAntiAffinity(t *testing.T) {
	reqs := append(replicas(2, 1, 1), sized("db-0", 1, 1), sized("db-1", 1, 1), sized("db-2", 1, 1), sized("db-3", 1, 1))
	for i := 2; i < len(reqs); i++ {
		reqs[i].Tags = []string{"db"}
		reqs[i].VMAntiAffinity = antiTerm(TopologyNode, 0, "db")
	}
	want := "cause: db-3 with vm_anti_affinity [db] by node: 4 members, 3 eligible nodes"
	if got := causeOf(t, scheduler.Snapshot{Nodes: threeEqualNodes()}, reqs); got != want {
		t.Fatalf("cause = %q\nwant    %q", got, want)
	}
}

// Ten VMs, of which two 5 GiB ones must share a node of 8 GiB: the cause is those two and
// their affinity, not the eight others nor the memory.
func TestScheduleSetCauseTwoOfTen(t *testing.T) {
	snap := scheduler.Snapshot{Nodes: []scheduler.Node{node("pve1", 8, 8), node("pve2", 8, 8), node("pve3", 8, 8)}}
	reqs := replicas(8, 1, 1)
	for _, name := range []string{"db-0", "db-1"} {
		r := sized(name, 1, 5)
		r.Tags = []string{"db"}
		r.VMAffinity = []scheduler.VMGroupTerm{{Tags: []string{"db"}, TopologyKey: TopologyNode}}
		reqs = append(reqs, r)
	}
	want := "cause: db-0, db-1 with vm_affinity [db] by node: they cannot be placed together with it, and can without it"
	if got := causeOf(t, snap, reqs); got != want {
		t.Fatalf("cause = %q\nwant    %q", got, want)
	}
}

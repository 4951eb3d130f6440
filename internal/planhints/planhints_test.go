package planhints

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

func res(names ...string) []scheduler.Reservation {
	out := make([]scheduler.Reservation, len(names))
	for i, n := range names {
		out[i] = scheduler.Reservation{VMID: -1 - i, Node: "pve1", Name: n, MemoryMiB: 1024, Tags: []string{"web"}}
	}
	return out
}

func names(set []scheduler.Reservation) []string {
	var out []string
	for _, r := range set {
		out = append(out, r.Name)
	}
	return out
}

// An apply reads the newest plan of its cluster that holds its whole first wave, never its
// own process's file, and nothing of another cluster.
func TestLoadTakesTheNewestPlanHoldingTheWave(t *testing.T) {
	dir := t.TempDir()
	older, newer, other := NewIn(dir, "https://a:8006"), NewIn(dir, "https://a:8006"), NewIn(dir, "https://b:8006")
	if err := older.Put(res("web-0", "web-1", "db-0")...); err != nil {
		t.Fatal(err)
	}
	if err := newer.Put(res("web-0", "web-1")...); err != nil {
		t.Fatal(err)
	}
	if err := other.Put(res("web-0", "web-1", "web-2")...); err != nil {
		t.Fatal(err)
	}
	// The file times decide, not the order of the writes within a clock tick.
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, older.own), past, past); err != nil {
		t.Fatal(err)
	}
	apply := NewIn(dir, "https://a:8006")
	if got := names(apply.Load([]string{"web-0"})); len(got) != 2 {
		t.Errorf("wave web-0: loaded %v, want the newer plan [web-0 web-1]", got)
	}
	if got := names(apply.Load([]string{"web-1", "db-0"})); len(got) != 3 {
		t.Errorf("wave web-1, db-0: loaded %v, want the older plan, the only one holding both", got)
	}
	if got := apply.Load([]string{"web-2"}); got != nil {
		t.Errorf("wave web-2: loaded %v, want nothing (only another cluster's plan holds it)", names(got))
	}
	if got := newer.Load([]string{"web-0", "web-1"}); len(got) != 3 {
		t.Errorf("the newer plan's own process loaded %v, want the older plan (its own file is not a plan to follow)", names(got))
	}
}

// A plan's file keeps every field a reservation needs, and Drop removes it.
func TestSaveRoundTripAndDrop(t *testing.T) {
	dir := t.TempDir()
	plan, apply := NewIn(dir, "e"), NewIn(dir, "e")
	want := res("a")
	want[0].AntiAffinity = []scheduler.VMGroupTerm{{Tags: []string{"web"}, TopologyKey: "node"}}
	want[0].Storage, want[0].DiskBytes, want[0].VCPUs = "local-lvm", 8<<30, 2
	if err := plan.Put(want...); err != nil {
		t.Fatal(err)
	}
	got := apply.Load([]string{"a"})
	if len(got) != 1 || got[0].Node != "pve1" || got[0].VMID != -1 || got[0].VCPUs != 2 || got[0].DiskBytes != 8<<30 ||
		got[0].Storage != "local-lvm" || len(got[0].AntiAffinity) != 1 || got[0].AntiAffinity[0].TopologyKey != "node" {
		t.Errorf("loaded %+v, want %+v", got, want)
	}
	plan.Drop()
	if got := apply.Load([]string{"a"}); got != nil {
		t.Errorf("after Drop loaded %+v", got)
	}
}

// Files older than maxAge are neither read nor kept.
func TestOldPlansArePruned(t *testing.T) {
	dir := t.TempDir()
	old := NewIn(dir, "e")
	if err := old.Put(res("a")...); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-maxAge - time.Hour)
	if err := os.Chtimes(filepath.Join(dir, old.own), past, past); err != nil {
		t.Fatal(err)
	}
	apply := NewIn(dir, "e")
	if got := apply.Load([]string{"a"}); got != nil {
		t.Errorf("loaded a plan older than %v: %v", maxAge, names(got))
	}
	if err := NewIn(dir, "e").Put(res("b")...); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, old.own)); !os.IsNotExist(err) {
		t.Errorf("the old plan's file is still there after a save: %v", err)
	}
}

// A plan appends each change: a name's last line wins, and a torn last line (a process killed
// mid-write) is skipped.
func TestPutAppendsAndTheLastLineWins(t *testing.T) {
	dir := t.TempDir()
	plan := NewIn(dir, "e")
	first := res("a", "b")
	if err := plan.Put(first...); err != nil {
		t.Fatal(err)
	}
	moved := first[0]
	moved.Node = "pve2"
	if err := plan.Put(moved); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, plan.own), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"VMID":-3,"Node":"pve`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got := NewIn(dir, "e").Load([]string{"a", "b"})
	if len(got) != 2 || got[0].Name != "a" || got[0].Node != "pve2" || got[1].Name != "b" || got[1].Node != "pve1" {
		t.Errorf("loaded %+v, want a on pve2 then b on pve1", got)
	}
}

// The hints live where the apply of a saved plan finds them: $QEMUSCHEDULER_PLAN_DIR, else
// the working directory's Terraform data directory ($TF_DATA_DIR or .terraform), which a
// pipeline keeps between its plan and apply jobs, else the user's cache.
func TestNewChoosesTheDirectory(t *testing.T) {
	work, cache := t.TempDir(), t.TempDir()
	t.Chdir(work)
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache)
	t.Setenv(DirEnv, "")
	t.Setenv("TF_DATA_DIR", "")
	if got, want := New("e").dir, filepath.Join(cache, "qemuscheduler", "plans"); got != want {
		t.Errorf("without a data directory: %s, want %s", got, want)
	}
	if err := os.Mkdir(".terraform", 0o700); err != nil {
		t.Fatal(err)
	}
	if got, want := New("e").dir, filepath.Join(".terraform", "qemuscheduler-plans"); got != want {
		t.Errorf("with .terraform: %s, want %s", got, want)
	}
	if err := os.Mkdir("tfdata", 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TF_DATA_DIR", "tfdata")
	if got, want := New("e").dir, filepath.Join("tfdata", "qemuscheduler-plans"); got != want {
		t.Errorf("with TF_DATA_DIR: %s, want %s", got, want)
	}
	t.Setenv(DirEnv, "elsewhere")
	if got := New("e").dir; got != "elsewhere" {
		t.Errorf("with %s: %s, want elsewhere", DirEnv, got)
	}

	// A plan in one job and its apply in another that has the working directory back.
	t.Setenv(DirEnv, "")
	if err := New("e").Put(res("a", "b")...); err != nil {
		t.Fatal(err)
	}
	if got := names(New("e").Load([]string{"a"})); len(got) != 2 {
		t.Errorf("the apply read %v from the data directory, want [a b]", got)
	}
}

// A saved plan applied from another working directory of the machine (terraform apply
// /path/to/plan there): the plan's data directory is not the apply's, and the copy in the
// user's cache serves it, with the apply's own data directory or without one; its own data
// directory's plan of the same names comes first.
func TestAnotherWorkingDirectoryFindsThePlan(t *testing.T) {
	planDir, applyDir, cache := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache)
	t.Setenv(DirEnv, "")
	t.Setenv("TF_DATA_DIR", "")
	t.Chdir(planDir)
	if err := os.Mkdir(".terraform", 0o700); err != nil {
		t.Fatal(err)
	}
	plan := New("e")
	if err := plan.Put(res("a", "b")...); err != nil {
		t.Fatal(err)
	}
	t.Chdir(applyDir)
	if got := names(New("e").Load([]string{"a"})); len(got) != 2 {
		t.Errorf("an apply in a directory without .terraform read %v, want the plan's [a b]", got)
	}
	if err := os.Mkdir(".terraform", 0o700); err != nil {
		t.Fatal(err)
	}
	if got := names(New("e").Load([]string{"a"})); len(got) != 2 {
		t.Errorf("an apply in a directory with its own .terraform read %v, want the plan's [a b]", got)
	}
	local := New("e")
	if err := local.Put(res("a")...); err != nil {
		t.Fatal(err)
	}
	if got := names(New("e").Load([]string{"a"})); len(got) != 1 {
		t.Errorf("with a plan in its own data directory, the apply read %v, want that plan's [a]", got)
	}
	local.Drop()
	plan.Drop()
	if got := New("e").Load([]string{"a"}); got != nil {
		t.Errorf("after both plans dropped their hints, the apply read %v", names(got))
	}
}

// The copy in the user's cache is a convenience: a cache that cannot be written (a read-only
// home) still leaves the plan's placements in the data directory, where its apply finds them,
// and Put says the copy alone failed.
func TestPutKeepsTheDataDirectoryWithoutTheCopy(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	blocker := filepath.Join(other, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	plan := NewIn(dir, "e")
	plan.copyDir = filepath.Join(blocker, "plans") // under a regular file: cannot be made
	err := plan.Put(res("a", "b")...)
	if !errors.Is(err, ErrNoCopy) {
		t.Errorf("Put = %v, want an error saying the copy alone failed (ErrNoCopy)", err)
	}
	if got := NewIn(dir, "e").Load([]string{"a", "b"}); len(got) != 2 {
		t.Errorf("the data directory holds %v, want the plan's a and b", names(got))
	}
	if err := plan.Put(res("c")...); !errors.Is(err, ErrNoCopy) {
		t.Errorf("second Put = %v, want ErrNoCopy", err)
	}
	if got := NewIn(dir, "e").Load([]string{"a", "b", "c"}); len(got) != 3 {
		t.Errorf("after a second Put the data directory holds %v, want a, b and c", names(got))
	}
}

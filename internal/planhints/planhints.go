// Package planhints hands a plan's joint placement of its new VMs to the apply that follows.
//
// Terraform plans and applies in two provider processes, and a create receives nothing of its
// plan (its private data comes from the apply's own re-plan, and a known planned node would
// have to be what the apply returns). Creates beyond the apply's first wave arrive only as
// earlier ones end, so a first wave decided on its own can take the room the plan promised to
// the later ones. The plan's process therefore keeps its tentative placements in a small file
// of the user's cache, one per process and cluster; the apply's process reads the newest file
// that holds every VM of its first wave and keeps the room of the VMs it has not decided yet.
// A hint is only a reservation: the apply still decides every VM under the hard filters, and
// without a file (a plan saved and applied on another machine) it decides as before.
package planhints

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// maxAge is how long a plan's hints serve an apply of it (a saved plan applied days later
// still finds them); older files are removed by the next plan.
const maxAge = 72 * time.Hour

// Store is one provider process's view of the hints of one cluster.
type Store struct {
	dir    string
	prefix string // the cluster's files
	own    string // this process's file name
}

// DirEnv names the directory of the hints, when set: a pipeline that plans and applies in
// different jobs can keep it with the saved plan.
const DirEnv = "QEMUSCHEDULER_PLAN_DIR"

// New returns the store of the cluster at endpoint, in $QEMUSCHEDULER_PLAN_DIR or else under
// the user's cache directory; nil when there is neither (the apply then decides without
// hints).
func New(endpoint string) *Store {
	if dir := os.Getenv(DirEnv); dir != "" {
		return NewIn(dir, endpoint)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil
	}
	return NewIn(filepath.Join(cache, "qemuscheduler", "plans"), endpoint)
}

// NewIn is New with the directory given.
func NewIn(dir, endpoint string) *Store {
	sum := sha256.Sum256([]byte(endpoint))
	prefix := hex.EncodeToString(sum[:8]) + "-"
	own := fmt.Sprintf("%s%d-%d-%d.json", prefix, time.Now().UnixNano(), os.Getpid(), stores.Add(1))
	return &Store{dir: dir, prefix: prefix, own: own}
}

// stores numbers the stores of this process: a test serves several provider configurations
// from one process.
var stores atomic.Int64

// Save replaces this process's hints with set (written whole, so that a reader never sees
// half of it) and removes the files older than maxAge.
func (s *Store) Save(set []scheduler.Reservation) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	s.prune()
	raw, err := json.Marshal(set)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.dir, ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(raw); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(s.dir, s.own))
}

// Drop removes this process's hints: an apply's process plans its creates again, and those
// partial sets must not hide the plan's.
func (s *Store) Drop() {
	os.Remove(filepath.Join(s.dir, s.own))
}

// Load returns the newest hints of another process of this cluster that hold every name of
// names, nil when none does.
func (s *Store) Load(names []string) []scheduler.Reservation {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil
	}
	type file struct {
		name string
		mod  time.Time
	}
	var files []file
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), s.prefix) || e.Name() == s.own {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) < maxAge {
			files = append(files, file{e.Name(), info.ModTime()})
		}
	}
	slices.SortFunc(files, func(a, b file) int { return b.mod.Compare(a.mod) })
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(s.dir, f.name))
		if err != nil {
			continue
		}
		var set []scheduler.Reservation
		if json.Unmarshal(raw, &set) == nil && holdsAll(set, names) {
			return set
		}
	}
	return nil
}

func holdsAll(set []scheduler.Reservation, names []string) bool {
	for _, n := range names {
		if !slices.ContainsFunc(set, func(r scheduler.Reservation) bool { return r.Name == n }) {
			return false
		}
	}
	return true
}

// prune removes every file of the directory older than maxAge, of any cluster.
func (s *Store) prune() {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > maxAge {
			os.Remove(filepath.Join(s.dir, e.Name()))
		}
	}
}

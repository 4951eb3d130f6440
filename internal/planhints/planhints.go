// Package planhints hands a plan's joint placement of its new VMs to the apply that follows.
//
// Terraform plans and applies in two provider processes, and a create receives nothing of its
// plan (its private data comes from the apply's own re-plan, and a known planned node would
// have to be what the apply returns). Creates beyond the apply's first wave arrive only as
// earlier ones end, so a first wave decided on its own can take the room the plan promised to
// the later ones. The plan's process therefore appends its tentative placements, as they
// change, to a small file in the working directory's Terraform data directory with a copy in
// the user's cache (the cache alone without a data directory), one per process and cluster;
// the apply's process reads the newest file that holds every VM of its first wave (its own
// data directory first, then the cache: a saved plan applied from another working directory)
// and keeps the room of the VMs it has not decided yet.
// A hint is only a reservation: the apply still decides every VM under the hard filters, and
// without a file (a plan saved and applied on another machine without its working directory)
// it decides as before.
package planhints

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
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
	dir string
	// copyDir, when set, keeps a copy of this process's hints and is read when dir holds no
	// plan of the wave: the user's cache, beside a working directory's data directory, so that
	// a saved plan applied from another working directory of the machine finds its plan.
	copyDir string
	prefix  string // the cluster's files
	own     string // this process's file name
	pruned  bool   // by this store's first Put
}

// DirEnv names the directory of the hints, when set: a pipeline that plans and applies in
// different jobs can keep it with the saved plan.
const DirEnv = "QEMUSCHEDULER_PLAN_DIR"

// New returns the store of the cluster at endpoint, in $QEMUSCHEDULER_PLAN_DIR, else in the
// Terraform data directory of the working directory (Terraform and OpenTofu start providers
// there; $TF_DATA_DIR, else .terraform, when it exists) with a copy under the user's cache
// directory, else under the user's cache directory alone; nil when there is neither (the apply
// then decides without hints). The data directory goes wherever the working directory goes: a
// pipeline that plans and applies in different jobs and keeps .terraform between them (for its
// providers) keeps the hints too. The copy serves a saved plan applied from another working
// directory of the same machine (terraform apply /path/to/plan elsewhere), whose data
// directory, if any, is not the plan's.
func New(endpoint string) *Store {
	if dir := os.Getenv(DirEnv); dir != "" {
		return NewIn(dir, endpoint)
	}
	var cacheDir string
	if cache, err := os.UserCacheDir(); err == nil {
		cacheDir = filepath.Join(cache, "qemuscheduler", "plans")
	}
	data := os.Getenv("TF_DATA_DIR")
	if data == "" {
		data = ".terraform"
	}
	if info, err := os.Stat(data); err == nil && info.IsDir() {
		s := NewIn(filepath.Join(data, "qemuscheduler-plans"), endpoint)
		s.copyDir = cacheDir
		return s
	}
	if cacheDir == "" {
		return nil
	}
	return NewIn(cacheDir, endpoint)
}

// ErrNoCopy wraps Put's failure to keep the copy in the user's cache: the placements are kept in
// the store's own directory all the same, for an apply from the same working directory.
var ErrNoCopy = errors.New("the plan's placements were kept in the working directory's data directory but not copied to the user's cache " +
	"(a saved plan applied from another working directory decides without them)")

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

// Put records placements of this process's plan, one JSON line each, appended to its file: a
// later line of a name replaces the earlier ones, so a plan writes each change once instead
// of its whole set each time (a set of n VMs costs O(n) lines, not O(n²)). The first Put of
// the store also removes the files older than maxAge. A failure of the copy alone (the user's
// cache) is ErrNoCopy: the store's own directory holds the placements.
func (s *Store) Put(placements ...scheduler.Reservation) error {
	if len(placements) == 0 {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, p := range placements {
		if err := enc.Encode(p); err != nil {
			return err
		}
	}
	dirs := s.dirs()
	if err := s.putIn(dirs[0], buf.Bytes()); err != nil {
		return err
	}
	var copyErr error
	if len(dirs) > 1 {
		copyErr = s.putIn(dirs[1], buf.Bytes())
	}
	s.pruned = true
	if copyErr != nil {
		return fmt.Errorf("%w: %w", ErrNoCopy, copyErr)
	}
	return nil
}

// putIn appends lines to this process's file in dir, making dir and pruning it first on the
// store's first Put.
func (s *Store) putIn(dir string, lines []byte) error {
	if !s.pruned {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		prune(dir)
	}
	return appendTo(filepath.Join(dir, s.own), lines)
}

// appendTo appends lines to file in one write: a reader never sees half of a line, except
// from a process killed mid-write, whose torn last line it skips.
func appendTo(file string, lines []byte) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(lines)
	return errors.Join(err, f.Close())
}

// dirs are the directories this store writes: its own first, then the copy's.
func (s *Store) dirs() []string {
	if s.copyDir == "" || s.copyDir == s.dir {
		return []string{s.dir}
	}
	return []string{s.dir, s.copyDir}
}

// Drop removes this process's hints: an apply's process plans its creates again, and those
// partial sets must not hide the plan's.
func (s *Store) Drop() {
	for _, dir := range s.dirs() {
		os.Remove(filepath.Join(dir, s.own))
	}
}

// Load returns the newest hints of another process of this cluster that hold every name of
// names (each name's last placement, in the order the names first appear), nil when none
// does: from the store's directory, else from the copies in the user's cache (a plan made in
// another working directory).
func (s *Store) Load(names []string) []scheduler.Reservation {
	for _, dir := range s.dirs() {
		if set := s.loadFrom(dir, names); set != nil {
			return set
		}
	}
	return nil
}

// loadFrom is Load in one directory.
func (s *Store) loadFrom(dir string, names []string) []scheduler.Reservation {
	entries, err := os.ReadDir(dir)
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
		if set := read(filepath.Join(dir, f.name)); holdsAll(set, names) {
			return set
		}
	}
	return nil
}

// read replays a file: each name's last placement, in the order the names first appear.
func read(file string) []scheduler.Reservation {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var set []scheduler.Reservation
	at := map[string]int{}
	for _, line := range bytes.Split(raw, []byte("\n")) {
		var r scheduler.Reservation
		if json.Unmarshal(line, &r) != nil {
			continue // a torn last line, or the empty one after the last newline
		}
		if i, ok := at[r.Name]; ok {
			set[i] = r
			continue
		}
		at[r.Name] = len(set)
		set = append(set, r)
	}
	return set
}

func holdsAll(set []scheduler.Reservation, names []string) bool {
	for _, n := range names {
		if !slices.ContainsFunc(set, func(r scheduler.Reservation) bool { return r.Name == n }) {
			return false
		}
	}
	return true
}

// prune removes every file of dir older than maxAge, of any cluster.
func prune(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > maxAge {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

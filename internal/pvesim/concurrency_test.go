package pvesim_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// Ten clients race for ids the way parallel Terraform runs do (nextid, then create, retry on
// "already exists", whether the sync check or the task reports it) while others read the
// cluster. Every VM must land exactly once. Run with -race.
func TestConcurrentCreates(t *testing.T) {
	s, a := lab(t, pvesim.WithTaskDuration(time.Millisecond))
	const workers, perWorker = 10, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				if err := createWithRetry(a, fmt.Sprintf("w%d-%d", w, i), []string{"pve1", "pve2", "pve3"}[i%3]); err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Go(func() {
			for range perWorker {
				a.get("/cluster/resources")
				a.get("/nodes/pve1/status")
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	names := map[string]int{}
	for _, id := range s.Guests() {
		g := s.MustGuest(t, id)
		names[g.Config["name"]]++
	}
	for w := range workers {
		for i := range perWorker {
			if n := names[fmt.Sprintf("w%d-%d", w, i)]; n != 1 {
				t.Errorf("VM w%d-%d exists %d times", w, i, n)
			}
		}
	}
	if got := s.Requests("GET /cluster/resources"); got != workers*perWorker {
		t.Errorf("counted %d resource reads, want %d", got, workers*perWorker)
	}
}

func createWithRetry(a *api, name, node string) error {
	for attempt := 0; attempt < 100; attempt++ {
		id := a.get("/cluster/nextid").str()
		r := a.form(http.MethodPost, "/nodes/"+node+"/qemu", url.Values{"vmid": {id}, "name": {name}, "memory": {"512"}})
		if r.code != http.StatusOK {
			if strings.Contains(r.status, "already exists") {
				continue
			}
			return fmt.Errorf("create %s: %s", name, r.status)
		}
		exit, _ := a.wait(r.str())["exitstatus"].(string)
		switch {
		case exit == "OK":
			return nil
		case !strings.Contains(exit, "already exists"):
			return fmt.Errorf("create %s: task %s", name, exit)
		}
	}
	return fmt.Errorf("create %s: no free id after 100 attempts", name)
}

package plugins

import (
	"fmt"
	"math/rand"
	"os"
	"slices"
	"testing"
	"syscall"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

func TestTmpPlantedStats(t *testing.T) {
	if os.Getenv("TMPSTATS") == "" {
		t.Skip()
	}
	p := mustProfile(scheduler.PluginConfig{})
	guests := 4
	if os.Getenv("TMPGUESTS") != "" {
		fmt.Sscan(os.Getenv("TMPGUESTS"), &guests)
	}
	sizes := []struct{ vms, nodes, seeds int }{{12, 8, 30}, {20, 16, 20}, {32, 32, 15}, {50, 64, 15}}
	for _, size := range sizes {
		for _, kind := range plantedKinds {
			fail := 0
			var times []time.Duration
			for seed := range size.seeds {
				rng := rand.New(rand.NewSource(int64(1000*size.vms + 10*seed + len(kind.name))))
				snap, reqs, at := plantedSet(rng, size.vms, size.nodes, guests, kind)
				checkPlanted(t, p, snap, reqs, at)
				start := cpuNow()
				_, err := p.ScheduleSet(snap, reqs, scheduler.Options{})
				times = append(times, cpuNow()-start)
				if err != nil {
					fail++
				}
			}
			slices.Sort(times)
			fmt.Printf("%dx%d %-6s fail %2d/%d  p50 %v p95 %v max %v\n", size.vms, size.nodes, kind.name, fail, size.seeds, times[len(times)/2], times[len(times)*95/100], times[len(times)-1])
		}
	}
}

func TestTmpOne(t *testing.T) {
	if os.Getenv("TMPONE") == "" {
		t.Skip()
	}
	p := mustProfile(scheduler.PluginConfig{})
	var vms, nodes, seed, k int
	fmt.Sscan(os.Getenv("TMPONE"), &vms, &nodes, &seed, &k)
	kind := plantedKinds[k]
	rng := rand.New(rand.NewSource(int64(1000*vms + 10*seed + len(kind.name))))
	snap, reqs, _ := plantedSet(rng, vms, nodes, 4, kind)
	start := time.Now()
	_, err := p.ScheduleSet(snap, reqs, scheduler.Options{})
	fmt.Println(time.Since(start), err)
}

func TestTmpInspect(t *testing.T) {
	if os.Getenv("TMPINS") == "" {
		t.Skip()
	}
	p := mustProfile(scheduler.PluginConfig{})
	var vms, nodes, seed, k int
	fmt.Sscan(os.Getenv("TMPINS"), &vms, &nodes, &seed, &k)
	kind := plantedKinds[k]
	rng := rand.New(rand.NewSource(int64(1000*vms + 10*seed + len(kind.name))))
	snap, reqs, at := plantedSet(rng, vms, nodes, 4, kind)
	per := map[int]int{}
	for _, n := range at {
		per[n]++
	}
	for i, r := range reqs {
		f := 0
		for _, n := range snap.Nodes {
			if p.CheckNode(snap, r, n.Name, 0) == nil {
				f++
			}
		}
		fmt.Printf("%s cpu %d mem %d disk %d feasible %d planted %d (with %d)\n", r.Name, r.VCPUs(), r.MemoryMiB/1024, r.DiskBytes/gib, f, at[i], per[at[i]])
	}
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

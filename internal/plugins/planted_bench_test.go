//go:build unix

package plugins

import (
	"math/rand"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// BenchmarkScheduleSetPlanted50x64 runs ScheduleSet on 20 tight planted sets of 50 VMs on 64
// nodes of each kind (the seeds of TestScheduleSetPlantedFiftyOnSixtyFour first) and reports
// the CPU time of one set (the process's user and system time, so the garbage collector's
// share counts): its median, 95th percentile and worst, and how many sets were placed.
func BenchmarkScheduleSetPlanted50x64(b *testing.B) {
	p := mustProfile(scheduler.PluginConfig{})
	const seeds = 20
	for _, kind := range plantedKinds {
		b.Run(kind.name, func(b *testing.B) {
			var times []time.Duration
			placed := 0
			for range b.N {
				times, placed = times[:0], 0
				for seed := range seeds {
					rng := rand.New(rand.NewSource(int64(1000*50 + 10*seed + len(kind.name))))
					snap, reqs, _ := plantedSet(rng, 50, 64, 4, kind)
					start := cpuTime(b)
					_, err := p.ScheduleSet(snap, reqs, scheduler.Options{})
					times = append(times, cpuTime(b)-start)
					if err == nil {
						placed++
					}
				}
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Milliseconds()), "p50-cpu-ms")
			// Nearest rank: the 19th of 20.
			b.ReportMetric(float64(times[(len(times)*95+99)/100-1].Milliseconds()), "p95-cpu-ms")
			b.ReportMetric(float64(times[len(times)-1].Milliseconds()), "worst-cpu-ms")
			b.ReportMetric(float64(placed), "placed/20")
		})
	}
}

// cpuTime is the CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

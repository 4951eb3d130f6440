package plugins

import (
	"fmt"
	"math"
	"strconv"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Args of the allocation scores: how much each resource counts in the average (kube's
// NodeResourcesFit scoringStrategy.resources weights, 1..100, default 1).
const (
	argCPUWeight    = "cpu_weight"
	argMemoryWeight = "memory_weight"
)

var allocationArgs = []string{argCPUWeight, argMemoryWeight}

// allocation is what the allocation scores see of a node: configured vCPUs and memory of the
// guests that count for capacity (running, pending, reservations, earlier placements of the
// decision) plus the request's, against the node's CPUs and memory. Live load plays no part,
// so a node full of idle or ballooned VMs counts as full. CPU is in thousandths of a vCPU and
// memory in bytes, whole numbers as kube's milliCPU and bytes, so that the scores truncate
// where kube's int64 arithmetic does.
type allocation struct {
	cpu, cpuCap, mem, memCap int64
}

func allocated(r *scheduler.Request, n *scheduler.NodeInfo) allocation {
	return allocation{
		cpu: int64(math.Round((n.AllocCPU + float64(r.VCPUs())) * 1000)), cpuCap: int64(n.Node.MaxCPU) * 1000,
		mem: int64(n.AllocMem) + int64(r.MemoryMiB)*scheduler.MiB, memCap: int64(n.Node.MaxMem),
	}
}

// resourceWeights weight the cpu and memory scores in their average.
type resourceWeights struct{ cpu, mem int64 }

func parseResourceWeights(args map[string]string) (resourceWeights, error) {
	w := resourceWeights{cpu: 1, mem: 1}
	for arg, into := range map[string]*int64{argCPUWeight: &w.cpu, argMemoryWeight: &w.mem} {
		s, ok := args[arg]
		if !ok {
			continue
		}
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > 100 {
			return w, fmt.Errorf("arg %s must be a whole number from 1 to 100, got %q", arg, s)
		}
		*into = int64(v)
	}
	return w, nil
}

// average combines the per-resource scores as kube does: sum(score * weight) / sum(weight),
// truncated.
func (w resourceWeights) average(cpu, mem int64) float64 {
	return float64((cpu*w.cpu + mem*w.mem) / (w.cpu + w.mem))
}

package plugins

import (
	"fmt"
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
// so a node full of idle or ballooned VMs counts as full.
type allocation struct {
	cpu, cpuCap, mem, memCap float64
}

func allocated(r *scheduler.Request, n *scheduler.NodeInfo) allocation {
	return allocation{
		cpu: n.AllocCPU + float64(r.VCPUs()), cpuCap: float64(n.Node.MaxCPU),
		mem: float64(n.AllocMem) + float64(r.MemoryMiB)*scheduler.MiB, memCap: float64(n.Node.MaxMem),
	}
}

// resourceWeights weight the cpu and memory scores in their average.
type resourceWeights struct{ cpu, mem float64 }

func parseResourceWeights(args map[string]string) (resourceWeights, error) {
	w := resourceWeights{cpu: 1, mem: 1}
	for arg, into := range map[string]*float64{argCPUWeight: &w.cpu, argMemoryWeight: &w.mem} {
		s, ok := args[arg]
		if !ok {
			continue
		}
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > 100 {
			return w, fmt.Errorf("arg %s must be a whole number from 1 to 100, got %q", arg, s)
		}
		*into = float64(v)
	}
	return w, nil
}

// average combines the per-resource scores as kube does: sum(score * weight) / sum(weight).
func (w resourceWeights) average(cpu, mem float64) float64 {
	return (cpu*w.cpu + mem*w.mem) / (w.cpu + w.mem)
}

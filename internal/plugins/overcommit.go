package plugins

import (
	"fmt"
	"math"
	"strconv"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Config keys of the overcommit filters.
const (
	CPUOvercommitName    = "CPUOvercommit"
	MemoryOvercommitName = "MemoryOvercommit"
)

// Default ratios, as in the reference: vCPUs may be overcommitted 4:1, memory not at all.
const (
	defaultCPURatio    = 4
	defaultMemoryRatio = 1
)

// cpuOvercommit passes a node when (vCPUs of running guests + request) / logical CPUs <= ratio
// and the request has no more vCPUs than the node has CPUs.
type cpuOvercommit struct {
	ratio float64
	group string
}

var (
	_ scheduler.FilterPlugin   = cpuOvercommit{}
	_ scheduler.FilterPlugin   = memoryOvercommit{}
	_ scheduler.CapacityPlugin = cpuOvercommit{}
	_ scheduler.CapacityPlugin = memoryOvercommit{}
)

func newCPUOvercommit(args map[string]string) (scheduler.Plugin, error) {
	r, err := parseRatio(args, defaultCPURatio)
	return cpuOvercommit{ratio: r, group: "exceeded cpu overcommit ratio " + scheduler.FormatNumber(r)}, err
}

func (cpuOvercommit) Name() string { return CPUOvercommitName }

func (f cpuOvercommit) Filter(_ *scheduler.CycleState, req *scheduler.Request, n *scheduler.NodeInfo) *scheduler.Rejection {
	if n.Node.MaxCPU <= 0 {
		return &scheduler.Rejection{Reason: "CPUOvercommit: node reports no CPUs", Group: f.group}
	}
	// qemu-server refuses to start a VM with more vCPUs than its node has CPUs ("MAX 16 vcpus
	// allowed per VM on this node"), whatever the overcommit.
	if req.VCPUs() > n.Node.MaxCPU {
		return &scheduler.Rejection{
			Reason: fmt.Sprintf("CPUOvercommit: the VM's %d vCPUs exceed the node's %d CPUs; PVE does not start a VM with more vCPUs than its node has CPUs", req.VCPUs(), n.Node.MaxCPU),
			Group:  "have fewer CPUs than the VM's vCPUs",
		}
	}
	sum := n.AllocCPU + float64(req.VCPUs())
	if sum <= f.ratio*float64(n.Node.MaxCPU) {
		return nil
	}
	return &scheduler.Rejection{
		Reason: fmt.Sprintf("CPUOvercommit: (%s+%d)/%d = %s > %s", scheduler.FormatNumber(n.AllocCPU), req.VCPUs(),
			n.Node.MaxCPU, above(sum/float64(n.Node.MaxCPU), f.ratio), scheduler.FormatNumber(f.ratio)),
		Group: f.group,
	}
}

// memoryOvercommit passes a node when (configured memory of running guests + request) /
// total memory <= ratio.
type memoryOvercommit struct {
	ratio float64
	group string
}

func newMemoryOvercommit(args map[string]string) (scheduler.Plugin, error) {
	r, err := parseRatio(args, defaultMemoryRatio)
	return memoryOvercommit{ratio: r, group: "exceeded memory overcommit ratio " + scheduler.FormatNumber(r)}, err
}

func (memoryOvercommit) Name() string { return MemoryOvercommitName }

func (f memoryOvercommit) Filter(_ *scheduler.CycleState, req *scheduler.Request, n *scheduler.NodeInfo) *scheduler.Rejection {
	if n.Node.MaxMem == 0 {
		return &scheduler.Rejection{Reason: "MemoryOvercommit: node reports no memory", Group: f.group}
	}
	request := uint64(req.MemoryMiB) * scheduler.MiB
	sum := float64(n.AllocMem + request)
	if sum <= f.ratio*float64(n.Node.MaxMem) {
		return nil
	}
	return &scheduler.Rejection{
		Reason: fmt.Sprintf("MemoryOvercommit: (%s+%d)/%s MiB = %s > %s", mibString(n.AllocMem), req.MemoryMiB,
			mibString(n.Node.MaxMem), above(sum/float64(n.Node.MaxMem), f.ratio), scheduler.FormatNumber(f.ratio)),
		Group: f.group,
	}
}

// Room and Demand make both filters capacities for the joint search's bound (the per-VM
// limit of vCPUs is a verdict of its own, which the bound needs not see).
func (f cpuOvercommit) Room(n *scheduler.NodeInfo) float64 {
	return f.ratio*float64(n.Node.MaxCPU) - n.AllocCPU
}

func (cpuOvercommit) Demand(r *scheduler.Request) float64 { return float64(r.VCPUs()) }

func (f memoryOvercommit) Room(n *scheduler.NodeInfo) float64 {
	return f.ratio*float64(n.Node.MaxMem) - float64(n.AllocMem)
}

func (memoryOvercommit) Demand(r *scheduler.Request) float64 {
	return float64(uint64(r.MemoryMiB) * scheduler.MiB)
}

func (cpuOvercommit) Amount(v float64) string {
	return scheduler.FormatNumber(math.Round(v*100)/100) + " vCPUs"
}

func (memoryOvercommit) Amount(v float64) string {
	return scheduler.FormatGiB(uint64(v)) + " GiB of memory"
}

func parseRatio(args map[string]string, def float64) (float64, error) {
	s, ok := args["ratio"]
	if !ok {
		return def, nil
	}
	r, err := strconv.ParseFloat(s, 64)
	if err != nil || !(r > 0) || math.IsInf(r, 1) {
		return 0, fmt.Errorf("arg ratio must be a positive number, got %q", s)
	}
	return r, nil
}

func mibString(bytes uint64) string {
	return scheduler.FormatNumber(round(float64(bytes) / scheduler.MiB))
}

// round keeps 4 decimals: enough for a reader, e.g. 4097 MiB on top of 4096 of 8192 = 1.0001.
func round(v float64) float64 { return math.Round(v*10000) / 10000 }

// above prints a ratio that exceeds the limit with enough decimals to show that it does: 4
// usually, more when 4 would round it down to the limit (1 MiB over 1 TiB).
func above(v, limit float64) string {
	shown := round(v)
	for decimals := 5; shown <= limit && decimals <= 15; decimals++ {
		scale := math.Pow10(decimals)
		shown = math.Ceil(v*scale) / scale
	}
	return scheduler.FormatNumber(shown)
}

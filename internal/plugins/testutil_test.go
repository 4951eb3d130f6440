package plugins

import (
	"fmt"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

const gib = 1 << 30

func node(name string, cpus int, memGiB uint64) scheduler.Node {
	return scheduler.Node{
		Name: name, Online: true, MaxCPU: cpus, MaxMem: memGiB * gib,
		Storages: []scheduler.Storage{{Name: "local-lvm", Content: []string{"images", "rootdir"}, Active: true, Total: 100 * gib}},
	}
}

func running(vmid int, nodeName string, cpus float64, memGiB uint64) scheduler.Guest {
	return scheduler.Guest{VMID: vmid, Node: nodeName, Name: fmt.Sprintf("vm%d", vmid), Type: scheduler.GuestQEMU, Status: "running", CPUs: cpus, MaxMem: memGiB * gib}
}

func request(name string) scheduler.Request {
	return scheduler.Request{Name: name, Cores: 1, Sockets: 1, MemoryMiB: 512, Annotations: map[string]string{}}
}

func mustProfile(cfg scheduler.PluginConfig) *scheduler.Profile {
	p, err := NewProfile(cfg)
	if err != nil {
		panic(err)
	}
	return p
}

package proxmox_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// BenchmarkSnapshot reads a 64-node, 10,000-guest cluster over TLS on loopback.
func BenchmarkSnapshot(b *testing.B) {
	c := pvesim.Cluster{Storages: []pvesim.StorageSpec{{Name: "local-lvm", Content: []string{"images"}, SizeGiB: 1000}}}
	for i := 0; i < 64; i++ {
		c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: fmt.Sprintf("pve%d", i+1), CPUs: 64, MemoryGiB: 512})
	}
	for i := 0; i < 10000; i++ {
		c.Guests = append(c.Guests, pvesim.GuestSpec{VMID: 100 + i, Node: fmt.Sprintf("pve%d", i%64+1), Status: "running", Cores: 2, MemoryMiB: 2048, Name: fmt.Sprintf("vm-%d", i)})
	}
	s := pvesim.NewTestServer(b, c)
	client := newClientTB(b, s)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		snap, err := client.Snapshot(context.Background())
		if err != nil || len(snap.Guests) != 10000 {
			b.Fatal(err)
		}
	}
}

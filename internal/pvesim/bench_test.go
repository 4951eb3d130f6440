package pvesim_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// bigCluster is 64 nodes and 10,000 running guests, the snapshot target's size.
func bigCluster() pvesim.Cluster {
	c := pvesim.Cluster{Storages: []pvesim.StorageSpec{{Name: "local-lvm", Type: "lvmthin", Content: []string{"images"}, SizeGiB: 4000}}}
	for i := range 64 {
		c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: fmt.Sprintf("pve%d", i+1), CPUs: 64, MemoryGiB: 512})
	}
	for i := range 10000 {
		c.Guests = append(c.Guests, pvesim.GuestSpec{VMID: 100 + i, Node: fmt.Sprintf("pve%d", i%64+1), Status: "running", Cores: 2,
			MemoryMiB: 2048, Name: fmt.Sprintf("vm-%d", i), Tags: []string{"bench"},
			Config: map[string]string{"scsi0": fmt.Sprintf("local-lvm:vm-%d-disk-0,size=32G", 100+i)}})
	}
	return c
}

// BenchmarkClusterResources is the simulator's cost of one /cluster/resources answer for
// 64 nodes and 10,000 guests, over TLS on loopback.
func BenchmarkClusterResources(b *testing.B) {
	s := pvesim.NewTestServer(b, bigCluster())
	a := newAPI(b, s)
	if r := a.get("/cluster/resources"); len(r.list()) != 2*64+10000 {
		b.Fatalf("%d rows", len(r.list()))
	}
	req, _ := http.NewRequest(http.MethodGet, s.URL()+"/api2/json/cluster/resources", nil)
	req.Header.Set("Authorization", "PVEAPIToken="+s.APIToken())
	for b.Loop() {
		res, err := a.client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		b.SetBytes(n)
	}
}

// BenchmarkCreateTask is one create (sync checks, task, completion) plus its status poll in
// the big cluster.
func BenchmarkCreateTask(b *testing.B) {
	s := pvesim.NewTestServer(b, bigCluster())
	a := newAPI(b, s)
	id := 20000
	b.ResetTimer()
	for b.Loop() {
		id++
		r := a.form(http.MethodPost, "/nodes/pve1/qemu", url.Values{"vmid": {strconv.Itoa(id)}, "scsi0": {"local-lvm:8"}})
		if exit := a.task(r); exit != "OK" {
			b.Fatal(exit)
		}
	}
}

package proxmox_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

func lab(t *testing.T) pvesim.Cluster {
	t.Helper()
	c, err := pvesim.LoadCluster("../../examples/lab/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newClient(t *testing.T, s *pvesim.Server) *proxmox.Client { return newClientTB(t, s) }

func newClientTB(t testing.TB, s *pvesim.Server) *proxmox.Client {
	t.Helper()
	c, err := proxmox.New(proxmox.Config{Endpoint: s.URL(), APIToken: s.APIToken(), CACertPEM: s.CACertPEM(), PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewValidatesConfig(t *testing.T) {
	tests := []struct {
		cfg  proxmox.Config
		want string
	}{
		{proxmox.Config{Endpoint: "pve:8006", APIToken: "a@pam!t=s"}, `endpoint "pve:8006" is not a URL like https://pve.example.com:8006`},
		{proxmox.Config{Endpoint: "https://pve:8006/foo", APIToken: "a@pam!t=s"}, `has an unexpected path "/foo"`},
		{proxmox.Config{Endpoint: "https://pve:8006", APIToken: "root!t=s"}, "the API token must look like USER@REALM!TOKENID=SECRET"},
		{proxmox.Config{Endpoint: "https://pve:8006", APIToken: "a@pam!t=s", Password: "x"}, "not both"},
		{proxmox.Config{Endpoint: "https://pve:8006"}, "no credentials"},
		{proxmox.Config{Endpoint: "https://pve:8006", Username: "root", Password: "x"}, `username "root" needs a realm`},
		{proxmox.Config{Endpoint: "https://pve:8006/api2/json/", APIToken: "a@pam!t=s", CACertPEM: "junk"}, "ca_cert holds no PEM certificate"},
	}
	for _, tt := range tests {
		_, err := proxmox.New(tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: err = %v, want %q", tt.cfg, err, tt.want)
		}
	}
	if _, err := proxmox.New(proxmox.Config{Endpoint: "https://pve:8006/api2/json", APIToken: "terraform@pve!tf=abc-123"}); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

func TestSnapshotInTwoRequests(t *testing.T) {
	for _, nodes := range []int{3, 64} {
		t.Run(fmt.Sprintf("%d nodes", nodes), func(t *testing.T) {
			c := pvesim.Cluster{Storages: []pvesim.StorageSpec{{Name: "local-lvm", Content: []string{"images"}, SizeGiB: 100}}}
			for i := 0; i < nodes; i++ {
				c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: fmt.Sprintf("pve%d", i+1), CPUs: 16, MemoryGiB: 64, Offline: i == 1})
				c.Guests = append(c.Guests, pvesim.GuestSpec{VMID: 100 + i, Node: fmt.Sprintf("pve%d", i+1), Status: "running", Cores: 2, MemoryMiB: 1024})
			}
			c.Guests = append(c.Guests, pvesim.GuestSpec{VMID: 5000, Node: "pve1", Type: "lxc", Status: "running", Cores: 1, MemoryMiB: 512})
			c.NextID = &pvesim.NextIDSpec{Lower: 5000, Upper: 6000}
			s := pvesim.NewTestServer(t, c)
			client := newClient(t, s)
			snap, err := client.Snapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := s.TotalRequests(); got > 2 {
				t.Fatalf("snapshot took %d requests, want <= 2", got)
			}
			if len(snap.Nodes) != nodes || snap.Nodes[1].Online || !snap.Nodes[0].Online || len(snap.Guests) != nodes+1 {
				t.Fatalf("snapshot: %d nodes (pve2 online %v), %d guests", len(snap.Nodes), snap.Nodes[1].Online, len(snap.Guests))
			}
			if snap.NextIDBounds == nil || snap.NextIDBounds.Lower != 5000 || snap.NextIDBounds.Upper != 6000 {
				t.Fatalf("bounds = %+v", snap.NextIDBounds)
			}
			if st := snap.Nodes[0].Storages; len(st) != 1 || st[0].Name != "local-lvm" || !st[0].Active {
				t.Fatalf("storages = %+v", st)
			}
			s.ResetRequests()
			if _, err := client.Snapshot(context.Background()); err != nil || s.TotalRequests() != 1 {
				t.Fatalf("second snapshot: %d requests, %v", s.TotalRequests(), err)
			}
		})
	}
}

func TestSnapshotSizesGuestsWithoutStats(t *testing.T) {
	s := pvesim.NewTestServer(t, lab(t), pvesim.WithStatsLag())
	c := newClient(t, s)
	ctx := context.Background()
	if err := c.CreateVM(ctx, "pve2", 150, map[string]string{"name": "fresh", "cores": "4", "memory": "4096"}); err != nil {
		t.Fatal(err)
	}
	snap, err := c.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range snap.Guests {
		if g.VMID == 150 && (g.CPUs != 4 || g.MaxMem != 4096<<20 || g.Name != "fresh") {
			t.Fatalf("fresh guest = %+v", g)
		}
	}
}

func TestVMLifecycle(t *testing.T) {
	s := pvesim.NewTestServer(t, lab(t), pvesim.WithTaskDuration(10*time.Millisecond))
	c := newClient(t, s)
	ctx := context.Background()

	if err := c.CloneVM(ctx, proxmox.CloneRequest{SourceNode: "pve1", SourceVMID: 9000, NewID: 300, Target: "pve3", Name: "web-1", Full: true, Storage: "ceph"}); err != nil {
		t.Fatal(err)
	}
	if node, err := c.LocateVM(ctx, 300); err != nil || node != "pve3" {
		t.Fatalf("LocateVM = %s, %v", node, err)
	}
	if err := c.UpdateVM(ctx, "pve3", 300, map[string]string{"cores": "4", "memory": "4096"}, []string{"agent"}); err != nil {
		t.Fatal(err)
	}
	if err := c.ResizeDisk(ctx, "pve3", 300, "scsi0", "20G"); err != nil {
		t.Fatal(err)
	}
	if err := c.StartVM(ctx, "pve3", 300); err != nil {
		t.Fatal(err)
	}
	vm, err := c.GetVM(ctx, "pve3", 300)
	if err != nil {
		t.Fatal(err)
	}
	if vm.Status != "running" || vm.Config["cores"] != "4" || vm.Config["memory"] != "4096" || vm.Config["scsi0"] != "ceph:vm-300-disk-0,size=20G" || vm.Digest == "" {
		t.Fatalf("vm = %+v", vm)
	}
	if _, ok := vm.Config["agent"]; ok {
		t.Fatal("agent was not deleted")
	}
	if err := c.ResizeDisk(ctx, "pve3", 300, "scsi0", "10G"); err == nil || !strings.Contains(err.Error(), "shrinking disks is not supported") {
		t.Fatalf("shrink: %v", err)
	}
	if err := c.MigrateVM(ctx, "pve3", 300, "pve2", true); err != nil {
		t.Fatal(err)
	}
	if err := c.ShutdownVM(ctx, "pve2", 300, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.StartVM(ctx, "pve2", 300); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteVM(ctx, "pve2", 300); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Guest(300); ok {
		t.Fatal("VM still exists after DeleteVM")
	}
	if err := c.DeleteVM(ctx, "pve2", 300); err != nil {
		t.Fatalf("deleting a gone VM: %v", err)
	}
	if _, err := c.LocateVM(ctx, 300); !errors.Is(err, proxmox.ErrNotFound) {
		t.Fatalf("LocateVM after delete: %v", err)
	}
}

func TestErrorsAreTyped(t *testing.T) {
	s := pvesim.NewTestServer(t, lab(t))
	c := newClient(t, s)
	ctx := context.Background()

	err := c.CreateVM(ctx, "pve1", 100, map[string]string{"name": "dup"})
	if !errors.Is(err, proxmox.ErrAlreadyExists) || !strings.Contains(err.Error(), "VM 100 already exists on node 'pve1'") {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := c.GetVM(ctx, "pve2", 100); !errors.Is(err, proxmox.ErrNotFound) {
		t.Fatalf("VM on another node: %v", err)
	}
	if err := c.CreateVM(ctx, "pve4", 150, nil); !errors.Is(err, proxmox.ErrNodeOffline) {
		t.Fatalf("offline node: %v", err)
	}
	s.FailNextTask("qmstart", "start failed: QEMU exited with code 1")
	if err := c.StartVM(ctx, "pve3", 103); !errors.Is(err, proxmox.ErrTaskFailed) || !strings.Contains(err.Error(), "QEMU exited with code 1") {
		t.Fatalf("failed task: %v", err)
	}
	s.FailRequests("POST /nodes/{node}/qemu", 1, 403, "Permission check failed (/vms/150, VM.Allocate)")
	if err := c.CreateVM(ctx, "pve2", 150, nil); !errors.Is(err, proxmox.ErrForbidden) || !strings.Contains(err.Error(), "VM.Allocate") {
		t.Fatalf("forbidden: %v", err)
	}
	bad, _ := proxmox.New(proxmox.Config{Endpoint: s.URL(), APIToken: "root@pam!sim=wrong", CACertPEM: s.CACertPEM()})
	if _, err := bad.Snapshot(ctx); !errors.Is(err, proxmox.ErrUnauthorized) {
		t.Fatalf("bad token: %v", err)
	}
}

func TestReadsRetryTransientFailures(t *testing.T) {
	s := pvesim.NewTestServer(t, lab(t))
	c := newClient(t, s)
	s.FailRequests("GET /cluster/resources", 2, 503, "Service Unavailable")
	if _, err := c.Snapshot(context.Background()); err != nil {
		t.Fatalf("snapshot after two 503s: %v", err)
	}
	if got := s.Requests("GET /cluster/resources"); got != 3 {
		t.Fatalf("resources requests = %d, want 3", got)
	}
	// Writes are not retried blindly.
	s.FailRequests("POST /nodes/{node}/qemu", 1, 503, "Service Unavailable")
	err := c.CreateVM(context.Background(), "pve2", 150, map[string]string{"name": "x"})
	if !errors.Is(err, proxmox.ErrTransient) || s.Requests("POST /nodes/{node}/qemu") != 1 {
		t.Fatalf("create after 503: %v, %d requests", err, s.Requests("POST /nodes/{node}/qemu"))
	}
}

func TestTicketLogin(t *testing.T) {
	s := pvesim.NewTestServer(t, lab(t))
	user, pass := s.Credentials()
	c, err := proxmox.New(proxmox.Config{Endpoint: s.URL(), Username: user, Password: pass, CACertPEM: s.CACertPEM(), PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CreateVM(context.Background(), "pve2", 150, map[string]string{"name": "x"}); err != nil {
		t.Fatalf("create with ticket auth: %v", err)
	}
}

// A create whose answer is lost is checked, not repeated: the VM exists with our name.
func TestCreateWithLostAnswerIsConfirmed(t *testing.T) {
	s := pvesim.NewTestServer(t, lab(t))
	c := newClient(t, s)
	s.LoseResponses("POST /nodes/{node}/qemu", 1)
	if err := c.CreateVM(context.Background(), "pve2", 150, map[string]string{"name": "lost"}); err != nil {
		t.Fatalf("create with a lost answer: %v", err)
	}
	if n := s.Requests("POST /nodes/{node}/qemu"); n != 1 {
		t.Fatalf("create was sent %d times, want once", n)
	}
}

func TestFaultsLatencyAndErrorRate(t *testing.T) {
	s := pvesim.NewTestServer(t, lab(t), pvesim.WithLatency(20*time.Millisecond))
	c := newClient(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if _, err := c.Snapshot(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("snapshot slower than its deadline: %v", err)
	}
	// Half the reads fail transiently; retries get every snapshot through.
	s.FailRate("GET /cluster/resources", 0.5, 503, "Service Unavailable")
	for i := 0; i < 5; i++ {
		if _, err := c.Snapshot(context.Background()); err != nil {
			t.Fatalf("snapshot %d under a 50%% error rate: %v", i, err)
		}
	}
}

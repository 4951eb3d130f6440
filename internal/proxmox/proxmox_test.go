package proxmox_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

func lab(t *testing.T) pvesim.Cluster {
	t.Helper()
	return pvesim.LoadTestCluster(t, "../../examples/lab/cluster.yaml")
}

func newClient(t *testing.T, s *pvesim.Server) *proxmox.Client { return newClientTB(t, s) }

// labClient is the lab cluster simulated with opts and a client of it.
func labClient(t *testing.T, opts ...pvesim.Option) (*pvesim.Server, *proxmox.Client) {
	t.Helper()
	s := pvesim.NewTestServer(t, lab(t), opts...)
	return s, newClient(t, s)
}

func newClientTB(t testing.TB, s *pvesim.Server) *proxmox.Client {
	t.Helper()
	c, err := proxmox.New(proxmox.Config{Endpoint: s.URL(), APIToken: s.APIToken(), CACertPEM: s.CACertPEM(),
		PollInterval: 5 * time.Millisecond, RetryBackoff: time.Millisecond})
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
		{proxmox.Config{Endpoint: "https://pve:8006", Username: "root@pam"}, `username "root@pam" is set but password is empty`},
		{proxmox.Config{Endpoint: "https://pve:8006", Password: "x"}, "password is set but username is empty"},
		{proxmox.Config{Endpoint: "https://u:p@pve:8006", APIToken: "a@pam!t=s"}, "must not hold credentials"},
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
			wantPools := []string{} // a view read from the cluster knows there are none
			if nodes == 3 {
				c.Pools, wantPools = []string{"prod", "lab"}, []string{"lab", "prod"}
			}
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
			if snap.Pools == nil || !slices.Equal(snap.Pools, wantPools) {
				t.Fatalf("pools = %#v, want %q", snap.Pools, wantPools)
			}
			s.ResetRequests()
			if _, err := client.Snapshot(context.Background()); err != nil || s.TotalRequests() != 1 {
				t.Fatalf("second snapshot: %d requests, %v", s.TotalRequests(), err)
			}
		})
	}
}

// Guests created since PVE's last stats broadcast have no sizes in /cluster/resources: they are
// sized from their node's guest list, one request per node, never from per-guest reads.
func TestSnapshotSizesGuestsWithoutStats(t *testing.T) {
	s, c := labClient(t, pvesim.WithStatsLag())
	ctx := context.Background()
	fresh := map[int]struct {
		node    string
		cores   string
		memory  string
		running bool
	}{
		150: {"pve2", "4", "4096", true},
		151: {"pve2", "2", "1024", false},
		152: {"pve3", "1", "2048", false},
	}
	for vmid, f := range fresh {
		if err := c.CreateVM(ctx, f.node, vmid, map[string]string{"name": fmt.Sprintf("fresh-%d", vmid), "cores": f.cores, "memory": f.memory}); err != nil {
			t.Fatal(err)
		}
		if f.running {
			if err := c.StartVM(ctx, f.node, vmid); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.ResetRequests()
	snap, err := c.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, g := range snap.Guests {
		f, ok := fresh[g.VMID]
		if !ok {
			continue
		}
		seen++
		status := "stopped"
		if f.running {
			status = "running"
		}
		if fmt.Sprint(g.CPUs) != f.cores || fmt.Sprint(g.MaxMem>>20) != f.memory || g.Name != fmt.Sprintf("fresh-%d", g.VMID) || g.Status != status {
			t.Errorf("fresh guest = %+v", g)
		}
	}
	if seen != len(fresh) {
		t.Fatalf("%d of %d fresh guests in the snapshot", seen, len(fresh))
	}
	want := map[string]int{"GET /cluster/resources": 1, "GET /cluster/options": 1, "GET /nodes/{node}/qemu": 2, "GET /nodes/{node}/qemu/{vmid}/config": 0}
	for endpoint, n := range want {
		if got := s.Requests(endpoint); got != n {
			t.Errorf("%s: %d requests, want %d", endpoint, got, n)
		}
	}
	// Once PVE has published the stats, a snapshot is one request again.
	s.Tick()
	s.ResetRequests()
	if _, err := c.Snapshot(ctx); err != nil || s.TotalRequests() != 1 {
		t.Fatalf("snapshot after the stats tick: %d requests, %v", s.TotalRequests(), err)
	}
}

func TestVMLifecycle(t *testing.T) {
	s, c := labClient(t, pvesim.WithTaskDuration(10*time.Millisecond))
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
	s, c := labClient(t)
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
	s, c := labClient(t)
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

// Ticket auth logs in once, before the first request, even when that first request is a
// snapshot's two concurrent ones (go-proxmox alone would fail all but one of them).
func TestTicketLogin(t *testing.T) {
	s := pvesim.NewTestServer(t, lab(t))
	user, pass := s.Credentials()
	c, err := proxmox.New(proxmox.Config{Endpoint: s.URL(), Username: user, Password: pass, CACertPEM: s.CACertPEM(), PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Snapshot(ctx); err != nil {
		t.Fatalf("first snapshot with ticket auth: %v", err)
	}
	errs := make(chan error, 8)
	for i := 0; i < cap(errs); i++ {
		go func() { _, err := c.GetVM(ctx, "pve1", 100); errs <- err }()
	}
	for i := 0; i < cap(errs); i++ {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent read with ticket auth: %v", err)
		}
	}
	if err := c.CreateVM(ctx, "pve2", 150, map[string]string{"name": "x"}); err != nil {
		t.Fatalf("create with ticket auth: %v", err)
	}
	if n := s.Requests("POST /access/ticket"); n != 1 {
		t.Fatalf("%d logins, want 1", n)
	}

	bad, err := proxmox.New(proxmox.Config{Endpoint: s.URL(), Username: user, Password: "wrong", CACertPEM: s.CACertPEM()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Snapshot(ctx); !errors.Is(err, proxmox.ErrUnauthorized) || !strings.Contains(err.Error(), "log in") {
		t.Fatalf("wrong password: %v", err)
	}
}

// A create whose answer is lost is not repeated: the caller learns the outcome is unsure
// (ErrTransient) and looks, finding the VM made with our name.
func TestCreateWithLostAnswerIsNotRepeated(t *testing.T) {
	s, c := labClient(t)
	s.LoseResponses("POST /nodes/{node}/qemu", 1)
	if err := c.CreateVM(context.Background(), "pve2", 150, map[string]string{"name": "lost"}); !errors.Is(err, proxmox.ErrTransient) {
		t.Fatalf("create with a lost answer: %v", err)
	}
	if n := s.Requests("POST /nodes/{node}/qemu"); n != 1 {
		t.Fatalf("create was sent %d times, want once", n)
	}
	if g, ok := s.Guest(150); !ok || g.Config["name"] != "lost" {
		t.Fatalf("the create whose answer was lost made %+v", g)
	}
}

// A task whose status cannot be read for a while is read again: a 500 or 595 on a poll says
// nothing about the task.
func TestTaskStatusFailuresAreReadAgain(t *testing.T) {
	s, c := labClient(t, pvesim.WithTaskDuration(30*time.Millisecond))
	s.FailRequests("GET /nodes/{node}/tasks/{upid}/status", 1, 500, "Internal Server Error")
	s.FailRequests("GET /nodes/{node}/tasks/{upid}/status", 1, 595, "No route to host")
	if err := c.CreateVM(context.Background(), "pve2", 150, map[string]string{"name": "web"}); err != nil {
		t.Fatalf("create with failing status polls: %v", err)
	}
	if n := s.Requests("GET /nodes/{node}/tasks/{upid}/status"); n < 3 {
		t.Fatalf("%d status polls, want the two failures and at least one more", n)
	}
	if g, ok := s.Guest(150); !ok || g.Lock != "" {
		t.Fatalf("VM 150 after its create: %+v", g)
	}
}

func TestFaultsLatencyAndErrorRate(t *testing.T) {
	s, c := labClient(t, pvesim.WithLatency(20*time.Millisecond))
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

// An outside actor (a human, another Terraform run) takes the vmid: before the create, PVE
// refuses at once; while it runs, the task fails. Both are ErrAlreadyExists naming the node.
func TestOutsideActorTakesVMID(t *testing.T) {
	s, c := labClient(t)
	ctx := context.Background()

	s.TakeVMID(150)
	err := c.CreateVM(ctx, "pve2", 150, map[string]string{"name": "mine"})
	if !errors.Is(err, proxmox.ErrAlreadyExists) || !strings.Contains(err.Error(), "VM 150 already exists on node 'pve1'") {
		t.Fatalf("create of a taken id: %v", err)
	}

	// While the create runs, the VM holds its id, locked.
	s.HoldTasks()
	done := make(chan error, 1)
	go func() { done <- c.CreateVM(ctx, "pve2", 151, map[string]string{"name": "mine"}) }()
	waitFor(t, func() bool { return s.Requests("GET /nodes/{node}/tasks/{upid}/status") > 0 })
	s.TakeVMID(151)
	if err := c.CreateVM(ctx, "pve3", 151, map[string]string{"name": "other"}); !errors.Is(err, proxmox.ErrAlreadyExists) {
		t.Fatalf("second create of an id being created: %v", err)
	}
	s.ReleaseTasks()
	if err := <-done; err != nil {
		t.Fatalf("create: %v", err)
	}
	if g := s.MustGuest(t, 151); g.Config["name"] != "mine" || g.Lock != "" {
		t.Fatalf("guest 151 = %+v", g)
	}

	// A clone's new id taken on another node fails inside the clone task.
	s.TakeVMID(152)
	if err := s.SetGuestNode(152, "pve3"); err != nil {
		t.Fatal(err)
	}
	err = c.CloneVM(ctx, proxmox.CloneRequest{SourceVMID: 9000, NewID: 152, Name: "mine", Full: true})
	if !errors.Is(err, proxmox.ErrAlreadyExists) || !strings.Contains(err.Error(), "already exists on node 'pve3'") {
		t.Fatalf("clone to a taken id: %v", err)
	}
}

// waitFor waits until cond holds: for a goroutine to reach a point the test cannot observe
// otherwise. It never decides a result, so its pace does not matter; the deadline, far beyond
// any load, only turns a condition that never comes into this test's failure rather than a
// hang of the whole package until go test's timeout.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("the condition waited for did not come within a minute")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestNodeGoesOffline(t *testing.T) {
	s, c := labClient(t)
	ctx := context.Background()
	if err := s.SetNodeOnline("pve3", false); err != nil {
		t.Fatal(err)
	}
	snap, err := c.Snapshot(ctx)
	if err != nil {
		t.Fatalf("snapshot with a node down: %v", err)
	}
	online := map[string]bool{}
	for _, n := range snap.Nodes {
		online[n.Name] = n.Online
	}
	if online["pve3"] || online["pve4"] || !online["pve1"] || !online["pve2"] {
		t.Fatalf("online = %v", online)
	}
	found := false
	for _, g := range snap.Guests {
		found = found || g.VMID == 103 && g.Node == "pve3"
	}
	if !found {
		t.Fatal("the offline node's guest left the snapshot: its vmid would look free")
	}
	if _, err := c.GetVM(ctx, "pve3", 103); !errors.Is(err, proxmox.ErrNodeOffline) {
		t.Fatalf("read on an offline node: %v", err)
	}
	if err := c.StartVM(ctx, "pve3", 103); !errors.Is(err, proxmox.ErrNodeOffline) || !strings.Contains(err.Error(), "No route to host") {
		t.Fatalf("start on an offline node: %v", err)
	}
	if err := s.SetNodeOnline("pve3", true); err != nil {
		t.Fatal(err)
	}
	if err := c.StartVM(ctx, "pve3", 103); err != nil {
		t.Fatalf("start once the node is back: %v", err)
	}
}

func TestShutdownFallsBackToStop(t *testing.T) {
	s, c := labClient(t)
	ctx := context.Background()
	s.FailNextTask("qmshutdown", "VM quit/powerdown failed - got timeout")
	s.ResetRequests()
	if err := c.ShutdownVM(ctx, "pve2", 102, time.Second); err != nil {
		t.Fatal(err)
	}
	if g := s.MustGuest(t, 102); g.Status != "stopped" {
		t.Fatalf("VM 102 is %s after shutdown fell back to stop", g.Status)
	}
	if n := s.Requests("POST /nodes/{node}/qemu/{vmid}/status/{action}"); n != 2 {
		t.Fatalf("%d power requests, want shutdown then stop", n)
	}
	// A refusal is not a reason to pull the plug.
	if err := c.StartVM(ctx, "pve2", 102); err != nil {
		t.Fatal(err)
	}
	s.FailRequests("POST /nodes/{node}/qemu/{vmid}/status/{action}", 1, 403, "Permission check failed (/vms/102, VM.PowerMgmt)")
	if err := c.ShutdownVM(ctx, "pve2", 102, time.Second); !errors.Is(err, proxmox.ErrForbidden) {
		t.Fatalf("forbidden shutdown: %v", err)
	}
	if g := s.MustGuest(t, 102); g.Status != "running" {
		t.Fatalf("VM 102 is %s after a refused shutdown", g.Status)
	}
}

// Writes that set a state are retried on transient failures; those that change one are not.
func TestIdempotentWritesAreRetried(t *testing.T) {
	s, c := labClient(t)
	ctx := context.Background()

	s.FailRequests("POST /nodes/{node}/qemu/{vmid}/config", 1, 503, "Service Unavailable")
	if err := c.UpdateVM(ctx, "pve3", 103, map[string]string{"cores": "4"}, nil); err != nil {
		t.Fatalf("update after a 503: %v", err)
	}
	if g := s.MustGuest(t, 103); g.Config["cores"] != "4" || s.Requests("POST /nodes/{node}/qemu/{vmid}/config") != 2 {
		t.Fatalf("cores = %s after %d requests", g.Config["cores"], s.Requests("POST /nodes/{node}/qemu/{vmid}/config"))
	}

	s.FailRequests("PUT /nodes/{node}/qemu/{vmid}/resize", 1, 500, "can't lock file '/var/lock/qemu-server/lock-103.conf' - got timeout")
	if err := c.ResizeDisk(ctx, "pve3", 103, "scsi0", "90G"); err != nil {
		t.Fatalf("resize after a lock timeout: %v", err)
	}
	s.FailRequests("PUT /nodes/{node}/qemu/{vmid}/resize", 1, 503, "Service Unavailable")
	if err := c.ResizeDisk(ctx, "pve3", 103, "scsi0", "+10G"); !errors.Is(err, proxmox.ErrTransient) {
		t.Fatalf("a relative resize was retried: %v", err)
	}
	if g := s.MustGuest(t, 103); g.Config["scsi0"] != "local-lvm:vm-103-disk-0,size=90G" {
		t.Fatalf("scsi0 = %s", g.Config["scsi0"])
	}

	// A start whose answer is lost is sent again; the VM already running is success.
	s.LoseResponses("POST /nodes/{node}/qemu/{vmid}/status/{action}", 1)
	if err := c.StartVM(ctx, "pve3", 103); err != nil {
		t.Fatalf("start with a lost answer: %v", err)
	}
	if g := s.MustGuest(t, 103); g.Status != "running" {
		t.Fatalf("VM 103 is %s", g.Status)
	}
}

func TestLostCloneAnswerIsNotRepeated(t *testing.T) {
	s, c := labClient(t)
	s.LoseResponses("POST /nodes/{node}/qemu/{vmid}/clone", 1)
	if err := c.CloneVM(context.Background(), proxmox.CloneRequest{SourceNode: "pve1", SourceVMID: 9000, NewID: 300, Name: "web-1", Full: true, Storage: "ceph"}); !errors.Is(err, proxmox.ErrTransient) {
		t.Fatalf("clone with a lost answer: %v", err)
	}
	if g, ok := s.Guest(300); !ok || g.Config["name"] != "web-1" {
		t.Fatalf("the clone whose answer was lost made %+v", g)
	}
	if n := s.Requests("POST /nodes/{node}/qemu/{vmid}/clone"); n != 1 {
		t.Fatalf("clone was sent %d times", n)
	}
	// The lost answer of a create that did not happen stays an error.
	s.FailRequests("POST /nodes/{node}/qemu/{vmid}/clone", 1, 502, "Bad Gateway")
	err := c.CloneVM(context.Background(), proxmox.CloneRequest{SourceNode: "pve1", SourceVMID: 9000, NewID: 301, Name: "web-2", Full: true})
	if !errors.Is(err, proxmox.ErrTransient) {
		t.Fatalf("clone that never ran: %v", err)
	}
	if _, exists := s.Guest(301); exists {
		t.Fatal("VM 301 exists")
	}
}

func TestDeleteFollowsAMovedVM(t *testing.T) {
	s, c := labClient(t)
	ctx := context.Background()
	if err := s.SetGuestNode(102, "pve3"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteVM(ctx, "pve2", 102); err != nil {
		t.Fatal(err)
	}
	if _, exists := s.Guest(102); exists {
		t.Fatal("the moved VM survived its delete")
	}
	// The id now belongs to a container, which is not ours to delete.
	if err := c.DeleteVM(ctx, "pve1", 200); err != nil {
		t.Fatal(err)
	}
	if _, exists := s.Guest(200); !exists {
		t.Fatal("DeleteVM destroyed a container")
	}
}

func TestBadRequestsNameTheParameter(t *testing.T) {
	s, c := labClient(t)
	err := c.UpdateVM(context.Background(), "pve3", 103, map[string]string{"corez": "2"}, nil)
	if err == nil || !strings.Contains(err.Error(), "corez: property is not defined in schema") || errors.Is(err, proxmox.ErrTransient) {
		t.Fatalf("unknown key: %v", err)
	}
	for _, err := range []error{
		c.CreateVM(context.Background(), "pve2", 99, nil),
		c.CloneVM(context.Background(), proxmox.CloneRequest{SourceNode: "pve1", SourceVMID: 9000}),
		c.CloneVM(context.Background(), proxmox.CloneRequest{SourceNode: "pve1", SourceVMID: 9000, NewID: 300, Storage: "ceph"}),
	} {
		if err == nil || !strings.Contains(err.Error(), "VM ID") && !strings.Contains(err.Error(), "full clone") {
			t.Errorf("invalid request: %v", err)
		}
	}
	if s.Requests("POST /nodes/{node}/qemu") != 0 || s.Requests("POST /nodes/{node}/qemu/{vmid}/clone") != 0 {
		t.Fatal("invalid requests reached PVE")
	}
}

func TestTaskWaitHonoursContext(t *testing.T) {
	s, c := labClient(t)
	s.HoldTasks()
	t.Cleanup(s.ReleaseTasks)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.StartVM(ctx, "pve3", 103); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "start VM 103") {
		t.Fatalf("start past its deadline: %v", err)
	}
}

func TestMigrateToItsOwnNodeIsANoOp(t *testing.T) {
	s, c := labClient(t)
	if err := c.MigrateVM(context.Background(), "pve2", 102, "pve2", true); err != nil || s.Requests("POST /nodes/{node}/qemu/{vmid}/migrate") != 0 {
		t.Fatalf("migrate in place: %v", err)
	}
}

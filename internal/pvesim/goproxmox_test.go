package pvesim_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"strings"
	"testing"
	"time"

	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

func labCluster(t *testing.T) pvesim.Cluster {
	t.Helper()
	c := pvesim.LoadTestCluster(t, "../../examples/lab/cluster.yaml")
	c.HARules = nil // PVE 8, whose answers (HA groups, a null migrate answer) these tests state
	return c
}

// goClient is a go-proxmox client for the simulator, trusting its certificate.
func goClient(s *pvesim.Server, opts ...goproxmox.Option) *goproxmox.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(s.CACertPEM()))
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return goproxmox.NewClient(s.URL()+"/api2/json", append([]goproxmox.Option{goproxmox.WithHTTPClient(hc)}, opts...)...)
}

func goTokenClient(s *pvesim.Server) *goproxmox.Client {
	id, secret, _ := strings.Cut(s.APIToken(), "=")
	return goClient(s, goproxmox.WithAPIToken(id, secret))
}

// go-proxmox, which encodes real PVE's JSON types in its structs, drives the simulator
// through a VM's life: every answer must decode, and every task must be awaitable.
func TestGoProxmoxLifecycle(t *testing.T) {
	ctx := context.Background()
	s := pvesim.NewTestServer(t, labCluster(t), pvesim.WithTaskDuration(5*time.Millisecond))
	c := goTokenClient(s)

	if v, err := c.Version(ctx); err != nil || v.Release != "8.2" {
		t.Fatalf("Version = %+v, %v", v, err)
	}
	nodes, err := c.Nodes(ctx)
	if err != nil || len(nodes) != 5 || nodes[3].Status != "offline" {
		t.Fatalf("Nodes = %v, %v", nodes, err)
	}
	n, err := c.Node(ctx, "pve2")
	if err != nil || n.CPUInfo.CPUs != 16 || n.Memory.Total != 64<<30 || n.CPUInfo.HVM != "1" || len(n.LoadAvg) != 3 {
		t.Fatalf("Node = %+v, %v", n, err)
	}
	vms, err := n.VirtualMachines(ctx)
	if err != nil || len(vms) != 1 || bool(vms[0].Template) {
		t.Fatalf("VirtualMachines = %+v, %v (a template key on a plain VM reads as a template)", vms, err)
	}
	tmpl, err := (&goproxmox.Node{}).New(c, "pve1").VirtualMachine(ctx, 9000)
	if err != nil || !bool(tmpl.Template) || int(tmpl.VirtualMachineConfig.Memory) != 2048 {
		t.Fatalf("template = %+v, %v", tmpl, err)
	}
	cl, err := c.Cluster(ctx)
	if err != nil || cl.Quorate != 1 {
		t.Fatalf("Cluster = %+v, %v", cl, err)
	}
	if id, err := cl.NextID(ctx); err != nil || id != 105 {
		t.Fatalf("NextID = %d, %v; want 105 (100-104 are VMs)", id, err)
	}
	if free, err := cl.CheckID(ctx, 200); err != nil || free {
		t.Fatalf("CheckID(200) = %v, %v; the lxc holds it", free, err)
	}
	rs, err := cl.Resources(ctx)
	if err != nil || len(rs) != 2+7+5+3*5 {
		t.Fatalf("Resources = %d rows, %v; want 2 pools, 7 guests, 5 nodes, 15 storages", len(rs), err)
	}

	task, err := n.NewVirtualMachine(ctx, 150, goproxmox.VirtualMachineOption{Name: "name", Value: "web-1"},
		goproxmox.VirtualMachineOption{Name: "memory", Value: 2048}, goproxmox.VirtualMachineOption{Name: "scsi0", Value: "local-lvm:32"},
		goproxmox.VirtualMachineOption{Name: "net0", Value: "virtio,bridge=vmbr0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx, 2*time.Millisecond, 5*time.Second); err != nil || !task.IsSuccessful || task.Type != "qmcreate" {
		t.Fatalf("create task: %v, %+v", err, task)
	}
	vm, err := n.VirtualMachine(ctx, 150)
	if err != nil || vm.VirtualMachineConfig.SCSIs["scsi0"] != "local-lvm:vm-150-disk-0,size=32G" || !vm.IsStopped() {
		t.Fatalf("VirtualMachine(150) = %+v, %v", vm, err)
	}
	steps := []struct {
		name string
		run  func() (*goproxmox.Task, error)
	}{
		{"start", func() (*goproxmox.Task, error) { return vm.Start(ctx) }},
		{"config", func() (*goproxmox.Task, error) {
			return vm.Config(ctx, goproxmox.VirtualMachineOption{Name: "cores", Value: 4})
		}},
		{"resize", func() (*goproxmox.Task, error) { return vm.ResizeDisk(ctx, "scsi0", "+8G") }},
		{"migrate", func() (*goproxmox.Task, error) {
			return vm.Migrate(ctx, &goproxmox.VirtualMachineMigrateOptions{Target: "pve3", Online: true, WithLocalDisks: true})
		}},
	}
	for _, step := range steps {
		task, err := step.run()
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if err := task.Wait(ctx, 2*time.Millisecond, 5*time.Second); err != nil || !task.IsSuccessful {
			t.Fatalf("%s task: %v, %+v", step.name, err, task)
		}
	}
	g := s.MustGuest(t, 150)
	if g.Node != "pve3" || g.Status != "running" || g.Config["cores"] != "4" || g.Config["scsi0"] != "local-lvm:vm-150-disk-0,size=40G" {
		t.Fatalf("after the lifecycle: %+v", g)
	}

	// 500s carry the message in the status line, as pveproxy sends it.
	_, err = n.NewVirtualMachine(ctx, 150)
	if err == nil || err.Error() != "500 unable to create VM 150 - VM 150 already exists on node 'pve3'" {
		t.Fatalf("duplicate create: %v", err)
	}
	if _, err := (&goproxmox.Node{}).New(c, "pve4").VirtualMachines(ctx); err == nil {
		t.Fatal("listing an offline node's VMs succeeded")
	}
}

func TestGoProxmoxTicketLogin(t *testing.T) {
	ctx := context.Background()
	s := pvesim.NewTestServer(t, labCluster(t))
	user, pass := s.Credentials()
	c := goClient(s, goproxmox.WithCredentials(&goproxmox.Credentials{Username: user, Password: pass}))
	n, err := c.Node(ctx, "pve1")
	if err != nil {
		t.Fatalf("ticket login: %v", err)
	}
	// A write needs the CSRF token that go-proxmox took from the login.
	vm, err := n.VirtualMachine(ctx, 101)
	if err != nil {
		t.Fatal(err)
	}
	if task, err := vm.Stop(ctx); err != nil || task.Wait(ctx, time.Millisecond, time.Second) != nil || !task.IsSuccessful {
		t.Fatalf("stop with a ticket: %v %+v", err, task)
	}
	bad := goClient(s, goproxmox.WithCredentials(&goproxmox.Credentials{Username: user, Password: "wrong"}))
	if _, err := bad.Nodes(ctx); !goproxmox.IsNotAuthorized(err) {
		t.Fatalf("wrong password: %v", err)
	}
	if _, err := goClient(s, goproxmox.WithAPIToken("root@pam!sim", "nope")).Nodes(ctx); !goproxmox.IsNotAuthorized(err) {
		t.Fatalf("wrong token: %v", err)
	}
}

// go-proxmox's Wait returns nil for a failed task; its status carries the error text.
func TestGoProxmoxFailedTasks(t *testing.T) {
	ctx := context.Background()
	s := pvesim.NewTestServer(t, labCluster(t))
	c := goTokenClient(s)
	tmpl := &goproxmox.VirtualMachine{}
	tmpl.New(c, "pve1", 9000)

	s.FailNextTask("qmclone", "clone failed: storage full")
	_, task, err := tmpl.Clone(ctx, &goproxmox.VirtualMachineCloneOptions{NewID: 300, Name: "a", Target: "pve3"})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx, time.Millisecond, time.Second); err != nil || !task.IsFailed || task.ExitStatus != "clone failed: storage full" {
		t.Fatalf("failed clone: %v %+v", err, task)
	}
	if _, ok := s.Guest(300); ok {
		t.Fatal("a failed clone left a guest")
	}

	// Deleting a key that is not set ends in WARNINGS: 1, which go-proxmox calls a failure.
	vm := &goproxmox.VirtualMachine{}
	vm.New(c, "pve3", 103)
	task, err = vm.Config(ctx, goproxmox.VirtualMachineOption{Name: "delete", Value: "balloon"})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx, time.Millisecond, time.Second); err != nil || task.ExitStatus != "WARNINGS: 1" {
		t.Fatalf("config with a warning: %v %+v", err, task)
	}
}

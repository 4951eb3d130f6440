package pvesim_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

func labCluster(t *testing.T) pvesim.Cluster {
	t.Helper()
	c, err := pvesim.LoadCluster("../../examples/lab/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func client(t *testing.T, s *pvesim.Server, opts ...goproxmox.Option) *goproxmox.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(s.CACertPEM()))
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return goproxmox.NewClient(s.URL()+"/api2/json", append([]goproxmox.Option{goproxmox.WithHTTPClient(hc)}, opts...)...)
}

func tokenClient(t *testing.T, s *pvesim.Server) *goproxmox.Client {
	id, secret, _ := strings.Cut(s.APIToken(), "=")
	return client(t, s, goproxmox.WithAPIToken(id, secret))
}

// The simulator's answers decode into go-proxmox's types, which encode real PVE's JSON types.
func TestGoProxmoxDecodesSimulator(t *testing.T) {
	ctx := context.Background()
	s := pvesim.NewTestServer(t, labCluster(t))
	c := tokenClient(t, s)

	if v, err := c.Version(ctx); err != nil || v.Release != "8.2" {
		t.Fatalf("Version = %+v, %v", v, err)
	}
	nodes, err := c.Nodes(ctx)
	if err != nil || len(nodes) != 4 || nodes[3].Status != "offline" {
		t.Fatalf("Nodes = %v, %v", nodes, err)
	}
	n, err := c.Node(ctx, "pve2")
	if err != nil || n.CPUInfo.CPUs != 16 || n.Memory.Total != 64<<30 {
		t.Fatalf("Node = %+v, %v", n, err)
	}
	vms, err := n.VirtualMachines(ctx)
	if err != nil || len(vms) != 1 || bool(vms[0].Template) {
		t.Fatalf("VirtualMachines = %+v, %v", vms, err)
	}
	tmpl, err := (&goproxmox.Node{}).New(c, "pve1").VirtualMachine(ctx, 9000)
	if err != nil || !bool(tmpl.Template) || int(tmpl.VirtualMachineConfig.Memory) != 2048 {
		t.Fatalf("template = %+v, %v", tmpl, err)
	}
	cl, err := c.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, err := cl.NextID(ctx)
	if err != nil || id != 105 {
		t.Fatalf("NextID = %d, %v (105: 100-104 are qemu, 200 lxc)", id, err)
	}
	if free, err := cl.CheckID(ctx, 200); err != nil || free {
		t.Fatalf("CheckID(200) = %v, %v; the lxc holds it", free, err)
	}

	task, err := n.NewVirtualMachine(ctx, 150, goproxmox.VirtualMachineOption{Name: "name", Value: "web-1"},
		goproxmox.VirtualMachineOption{Name: "memory", Value: 2048}, goproxmox.VirtualMachineOption{Name: "scsi0", Value: "local-lvm:32"},
		goproxmox.VirtualMachineOption{Name: "net0", Value: "virtio,bridge=vmbr0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx, 10*time.Millisecond, 5*time.Second); err != nil || !task.IsSuccessful {
		t.Fatalf("create task: %v, %+v", err, task)
	}
	g, _ := s.Guest(150)
	if g.Config["scsi0"] != "local-lvm:vm-150-disk-0,size=32G" || !strings.HasPrefix(g.Config["net0"], "virtio=BC:24:11:") {
		t.Fatalf("created config = %v", g.Config)
	}

	// 500s carry the message in the status line, as pveproxy sends it.
	_, err = n.NewVirtualMachine(ctx, 150)
	if err == nil || err.Error() != "500 unable to create VM 150 - VM 150 already exists on node 'pve2'" {
		t.Fatalf("duplicate create err = %v", err)
	}
	// An offline node answers 595 with an empty body.
	if _, err := (&goproxmox.Node{}).New(c, "pve4").VirtualMachines(ctx); err == nil {
		t.Fatal("listing an offline node's VMs succeeded")
	}
	rs, err := cl.Resources(ctx, "node")
	if err != nil || len(rs) != 4 {
		t.Fatalf("Resources(node) = %v, %v", rs, err)
	}
}

func TestTicketAuthAndCSRF(t *testing.T) {
	ctx := context.Background()
	s := pvesim.NewTestServer(t, labCluster(t))
	user, pass := s.Credentials()
	c := client(t, s, goproxmox.WithCredentials(&goproxmox.Credentials{Username: user, Password: pass}))
	if _, err := c.Nodes(ctx); err != nil {
		t.Fatalf("ticket login: %v", err)
	}
	bad := client(t, s, goproxmox.WithCredentials(&goproxmox.Credentials{Username: user, Password: "wrong"}))
	if _, err := bad.Nodes(ctx); !goproxmox.IsNotAuthorized(err) {
		t.Fatalf("wrong password: %v", err)
	}
	wrongToken := client(t, s, goproxmox.WithAPIToken("root@pam!sim", "nope"))
	if _, err := wrongToken.Nodes(ctx); !goproxmox.IsNotAuthorized(err) {
		t.Fatalf("wrong token: %v", err)
	}
}

func TestTaskFailureAndLifecycle(t *testing.T) {
	ctx := context.Background()
	s := pvesim.NewTestServer(t, labCluster(t), pvesim.WithTaskDuration(20*time.Millisecond))
	c := tokenClient(t, s)
	tmpl := &goproxmox.VirtualMachine{}
	tmpl.New(c, "pve1", 9000)

	s.FailNextTask("qmclone", "clone failed: storage full")
	_, task, err := tmpl.Clone(ctx, &goproxmox.VirtualMachineCloneOptions{NewID: 300, Name: "a", Target: "pve3", Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(task.UPID), "UPID:pve1:") {
		t.Fatalf("clone task runs on the source node: %s", task.UPID)
	}
	_ = task.Wait(ctx, 5*time.Millisecond, 5*time.Second)
	if task.ExitStatus != "clone failed: storage full" {
		t.Fatalf("exit = %q", task.ExitStatus)
	}
	if _, ok := s.Guest(300); ok {
		t.Fatal("failed clone left a guest")
	}

	_, task, err = tmpl.Clone(ctx, &goproxmox.VirtualMachineCloneOptions{NewID: 300, Name: "a", Target: "pve3", Full: true})
	if err != nil {
		t.Fatal(err)
	}
	// An outside actor takes the id while the clone runs: the task fails, as in PVE.
	s.TakeVMID(300)
	_ = task.Wait(ctx, 5*time.Millisecond, 5*time.Second)
	if !strings.Contains(task.ExitStatus, "VM 300 already exists") {
		t.Fatalf("exit = %q", task.ExitStatus)
	}
}

// insecureClient talks to test servers whose certificate the test does not pin.
var insecureClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback test server

func pvesimServer(t *testing.T) *pvesim.Server { return pvesim.NewTestServer(t, labCluster(t)) }

func TestCSRFAndUnknownPaths(t *testing.T) {
	s := pvesim.NewTestServer(t, labCluster(t))
	user, pass := s.Credentials()
	res, err := insecureClient.PostForm(s.URL()+"/api2/json/access/ticket", map[string][]string{"username": {user}, "password": {pass}})
	if err != nil {
		t.Fatal(err)
	}
	var login struct {
		Data struct{ Ticket string } `json:"data"`
	}
	_ = json.NewDecoder(res.Body).Decode(&login)
	res.Body.Close()
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/api2/json/nodes/pve2/qemu/102/status/stop", nil)
	req.AddCookie(&http.Cookie{Name: "PVEAuthCookie", Value: login.Data.Ticket})
	res, err = insecureClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 || res.Status != "401 Permission denied - invalid csrf token" {
		t.Fatalf("write without CSRF token: %s", res.Status)
	}
	req, _ = http.NewRequest(http.MethodGet, s.URL()+"/api2/json/nodes/pve1/hardware/pci", nil)
	req.Header.Set("Authorization", "PVEAPIToken="+s.APIToken())
	res, err = insecureClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 501 || !strings.Contains(res.Status, "/nodes/pve1/hardware/pci") {
		t.Fatalf("unknown path: %s", res.Status)
	}
}

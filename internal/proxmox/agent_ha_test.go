package proxmox_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

func TestAgentInterfaces(t *testing.T) {
	s, c := labClient(t, pvesim.WithAgentDelay(2))
	ctx := context.Background()
	if _, err := c.AgentInterfaces(ctx, "pve3", 103); !errors.Is(err, proxmox.ErrAgentUnavailable) {
		t.Fatalf("stopped VM: %v, want ErrAgentUnavailable", err)
	}
	if err := c.UpdateVM(ctx, "pve3", 103, map[string]string{"agent": "1", "net0": "virtio,bridge=vmbr0", "ipconfig0": "ip=192.0.2.7/24"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.StartVM(ctx, "pve3", 103); err != nil {
		t.Fatal(err)
	}
	s.ResetRequests()
	ifaces, err := c.WaitAgentInterfaces(ctx, "pve3", 103, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Requests("GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces"); n != 3 {
		t.Errorf("%d agent calls, want 3 (two refused while the agent starts)", n)
	}
	if len(ifaces) != 2 || ifaces[1].Name != "eth0" || len(ifaces[1].IPv4) != 1 || ifaces[1].IPv4[0] != "192.0.2.7" || len(ifaces[1].IPv6) != 1 {
		t.Errorf("interfaces %+v", ifaces)
	}
	s.BreakAgent(103)
	// A wait that outlasts a request on a loaded machine: one whose deadline strikes the first
	// request ends with the context's error, not the agent's (as 100 ms did in the provider's
	// TestReadAgent, under -race).
	if _, err := c.WaitAgentInterfaces(ctx, "pve3", 103, time.Second); !errors.Is(err, proxmox.ErrAgentUnavailable) {
		t.Errorf("broken agent: %v, want ErrAgentUnavailable", err)
	}
}

func TestHAResource(t *testing.T) {
	s, c := labClient(t)
	ctx := context.Background()
	if r, err := c.HAResource(ctx, 102); err != nil || r != nil {
		t.Fatalf("before: %v %v", r, err)
	}
	if err := c.AddHAResource(ctx, 102, proxmox.HASettings{State: "started", MaxRestart: 3, MaxRelocate: -1, Comment: "web"}); err != nil {
		t.Fatal(err)
	}
	r, err := c.HAResource(ctx, 102)
	if err != nil || *r != (proxmox.HASettings{State: "started", MaxRestart: 3, MaxRelocate: 1, Comment: "web"}) {
		t.Fatalf("read back %+v %v", r, err)
	}
	s.ResetRequests()
	if err := c.MigrateHA(ctx, 102, "pve3"); err != nil {
		t.Fatal(err)
	}
	if g := s.MustGuest(t, 102); g.Node != "pve3" || g.Status != "running" {
		t.Errorf("after MigrateHA: %s on %s", g.Status, g.Node)
	}
	if n := s.Requests("GET /cluster/resources"); n < 2 {
		t.Errorf("%d polls of /cluster/resources: the HA manager moves the VM after the request returns, so it must be polled", n)
	}
	// PVE 9's failback (on by default), set off by an admin, is read; the provider's updates
	// leave it as it is.
	putForm(t, s, "/cluster/ha/resources/vm:102", url.Values{"failback": {"0"}})
	if r, err = c.HAResource(ctx, 102); err != nil || !r.NoFailback {
		t.Fatalf("failback off read as %+v %v", r, err)
	}
	if err := c.UpdateHAResource(ctx, 102, proxmox.HASettings{State: "stopped", MaxRestart: 1, MaxRelocate: 1}); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitGuest(ctx, 102, "", "stopped"); err != nil {
		t.Fatal(err)
	}
	if r, err = c.HAResource(ctx, 102); err != nil || r.Comment != "" || r.State != "stopped" || !r.NoFailback {
		t.Errorf("after update %+v %v", r, err)
	}
	if err := c.RemoveHAResource(ctx, 102); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveHAResource(ctx, 102); err != nil {
		t.Errorf("removing twice: %v", err)
	}
}

// putForm changes the simulator's state as an admin would, behind the client's back.
func putForm(t *testing.T, s *pvesim.Server, path string, params url.Values) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(s.CACertPEM()))
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, err := http.NewRequest(http.MethodPut, s.URL()+"/api2/json"+path, strings.NewReader(params.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "PVEAPIToken="+s.APIToken())
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("PUT %s: %s", path, res.Status)
	}
}

// An HA migration whose target fails while it runs ends in error, the VM still on its source
// (QemuMigrate; the CRM puts the service back to started there), instead of waiting for the
// VM on the failed node until the timeout.
func TestMigrateHAToAFailingNode(t *testing.T) {
	s := pvesim.NewTestServer(t, lab(t))
	c := newClient(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.AddHAResource(ctx, 102, proxmox.HASettings{State: "started", MaxRestart: -1, MaxRelocate: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.HAResources(ctx); err != nil { // a CRM round: the resource is picked up
		t.Fatal(err)
	}
	s.HoldTasks("qmigrate")
	done := make(chan error, 1)
	go func() { done <- c.MigrateHA(ctx, 102, "pve3") }()
	waitFor(t, func() bool { return s.MustGuest(t, 102).Lock == "migrate" })
	if _, err := s.FailNode("pve3"); err != nil {
		t.Fatal(err)
	}
	s.ReleaseTasks()
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "migrate VM 102 to pve3 through the HA manager: the migration failed, the VM stays on pve2") {
		t.Fatalf("MigrateHA to a failing node: %v", err)
	}
	if g := s.MustGuest(t, 102); g.Node != "pve2" || g.Status != "running" || g.Lock != "" {
		t.Errorf("after the failed migration: %s on %s, lock %q", g.Status, g.Node, g.Lock)
	}
}

// A write to a VM the HA manager moved between the caller's lookup and the write follows it:
// PVE answers that the config does not exist (the move is over) or that the VM is locked (it
// runs), and the VM is found again, its migration waited for, and written where it is, once.
// A VM the cluster no longer lists is not written again.
func TestWritesFollowAVMTheHAManagerMoves(t *testing.T) {
	s, c := labClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.AddHAResource(ctx, 102, proxmox.HASettings{State: "started", MaxRestart: 1, MaxRelocate: 1}); err != nil {
		t.Fatal(err)
	}
	const config, resize, start = "POST /nodes/{node}/qemu/{vmid}/config", "PUT /nodes/{node}/qemu/{vmid}/resize", "POST /nodes/{node}/qemu/{vmid}/status/{action}"
	if err := s.MoveBefore(config, 102, "pve3"); err != nil {
		t.Fatal(err)
	}
	s.ResetRequests()
	if err := c.UpdateVM(ctx, "pve2", 102, map[string]string{"description": "moved"}, nil); err != nil {
		t.Fatalf("update of a VM moved after its lookup: %v", err)
	}
	if g := s.MustGuest(t, 102); g.Node != "pve3" || g.Config["description"] != "moved" {
		t.Errorf("after the update: on %s, description %q", g.Node, g.Config["description"])
	}
	if n, failed := s.Requests(config), s.FailedRequests(config); n != 2 || failed != 1 {
		t.Errorf("%d config writes (%d failed), want 2 (1)", n, failed)
	}

	// The migration still runs when the write arrives: the grown disk grows once, on pve1.
	// (PVE forks the resize task before it loads the config: the task on pve3 fails.)
	s.HoldTasks("qmigrate")
	if err := s.MoveBefore(resize, 102, "pve1"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.ResizeDisk(ctx, "pve3", 102, "scsi0", "+10G") }()
	waitFor(t, func() bool { return s.Requests(resize) == 1 })
	s.ReleaseTasks()
	if err := <-done; err != nil {
		t.Fatalf("resize of a VM being moved: %v", err)
	}
	if g := s.MustGuest(t, 102); g.Node != "pve1" || !strings.Contains(g.Config["scsi0"], "size=60G") {
		t.Errorf("after the resize: on %s, scsi0 %q", g.Node, g.Config["scsi0"])
	}
	if n := s.Requests(resize); n != 2 {
		t.Errorf("%d resizes, want 2", n)
	}

	// A VM that moves on before every write is followed a bounded number of times.
	for _, to := range []string{"pve3", "pve2", "pve3", "pve2"} {
		if err := s.MoveBefore(config, 102, to); err != nil {
			t.Fatal(err)
		}
	}
	s.ResetRequests()
	if err := c.UpdateVM(ctx, "pve1", 102, map[string]string{"description": "chased"}, nil); !errors.Is(err, proxmox.ErrNotFound) {
		t.Errorf("update of a VM that keeps moving: %v, want ErrNotFound", err)
	}
	if n := s.Requests(config); n != 4 {
		t.Errorf("%d config writes to a VM that keeps moving, want 4: the first and three follows", n)
	}

	s.DeleteGuest(102)
	if err := c.StartVM(ctx, "pve1", 102); !errors.Is(err, proxmox.ErrNotFound) {
		t.Errorf("start of a deleted VM: %v, want ErrNotFound", err)
	}
	if n := s.Requests(start); n != 1 {
		t.Errorf("%d starts of a VM the cluster no longer lists, want 1", n)
	}
}

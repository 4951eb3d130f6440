package provider

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/planhints"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// testProviders runs the provider in-process for terraform-plugin-testing, with Terraform or
// OpenTofu (TF_ACC_TERRAFORM_PATH) as the CLI.
var testProviders = map[string]func() (tfprotov6.ProviderServer, error){
	"qemuscheduler": providerserver.NewProtocol6WithError(New("test")()),
}

// TestMain keeps the plans' placement hints (planhints) of the tests in a directory of their
// own, removed afterwards, instead of the user's cache.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "qemuscheduler-plans-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv(planhints.DirEnv, dir)
	// Terraform plans a plan's VMs, and reads its data sources, within milliseconds, but a
	// loaded CI machine (OpenTofu being built beside the tests) can space them further apart
	// than the default 50 ms: two placement data sources read further apart were decided in the
	// order they came, not together in name order (TestAccChangeSetPicksFeedPinnedVMs, OpenTofu).
	changeset.PlanQuiet = 250 * time.Millisecond
	changeset.BurstWindow = 250 * time.Millisecond
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// accEnv is where an acceptance test runs: a fresh simulated cluster, or a real lab cluster
// when PROXMOX_VE_ENDPOINT and credentials are set (the provider then reads them from the
// environment, and tests that need the simulator's cluster or faults are skipped).
type accEnv struct {
	sim *pvesim.Server
}

func newAccEnv(t *testing.T, c pvesim.Cluster, opts ...pvesim.Option) *accEnv {
	t.Helper()
	skipUnlessAcc(t)
	if os.Getenv("PROXMOX_VE_ENDPOINT") != "" {
		return &accEnv{}
	}
	return &accEnv{sim: pvesim.NewTestServer(t, c, opts...)}
}

func skipUnlessAcc(t *testing.T) {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 (make test does)")
	}
}

// simEnv is an environment on a fresh simulated cluster, for a test that needs the cluster's
// exact shape or its faults (skipped against a real cluster).
func simEnv(t *testing.T, c pvesim.Cluster, opts ...pvesim.Option) (*accEnv, *pvesim.Server) {
	t.Helper()
	env := newAccEnv(t, c, opts...)
	return env, env.needsSim(t)
}

// needsSim skips a test that depends on the simulated cluster's exact shape or faults.
func (e *accEnv) needsSim(t *testing.T) *pvesim.Server {
	t.Helper()
	if e.sim == nil {
		t.Skip("needs the simulator's cluster and fault injection; skipped against a real cluster")
	}
	return e.sim
}

// runSteps is the scaffolding of every acceptance test: the provider in-process, then the steps
// (one or several), then the destroy.
func runSteps(t *testing.T, steps ...resource.TestStep) {
	t.Helper()
	runCase(t, resource.TestCase{Steps: steps})
}

// runCase is runSteps for a test that checks what the final destroy leaves (tc.CheckDestroy).
func runCase(t *testing.T, tc resource.TestCase) {
	t.Helper()
	tc.ProtoV6ProviderFactories = testProviders
	resource.Test(t, tc)
}

// runParallel is runSteps in parallel with other tests: for a test on its own cluster, or for
// read-only cases (data sources, failing plans) of one test sharing one cluster.
func runParallel(t *testing.T, steps ...resource.TestStep) {
	t.Helper()
	resource.ParallelTest(t, resource.TestCase{ProtoV6ProviderFactories: testProviders, Steps: steps})
}

// guestExists checks that guest vmid is in the simulated cluster and passes check (nil: any
// guest will do); guestGone checks that it is not.
func guestExists(sim *pvesim.Server, vmid int, check func(g pvesim.GuestState) error) resource.TestCheckFunc {
	return func(*terraform.State) error {
		g, ok := sim.Guest(vmid)
		if !ok {
			return fmt.Errorf("VM %d does not exist in the cluster", vmid)
		}
		if check == nil {
			return nil
		}
		return check(g)
	}
}

func guestGone(sim *pvesim.Server, vmid int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if g, ok := sim.Guest(vmid); ok {
			return fmt.Errorf("VM %d (%q on %s) is still in the cluster", vmid, g.Config["name"], g.Node)
		}
		return nil
	}
}

// guests lists every guest of the simulated cluster; one deleted between the listing and its
// read (by a concurrent destroy) is gone, so it is left out.
func guests(sim *pvesim.Server) []pvesim.GuestState {
	var out []pvesim.GuestState
	for _, id := range sim.Guests() {
		if g, ok := sim.Guest(id); ok {
			out = append(out, g)
		}
	}
	return out
}

// simClient is a client of the simulator, polling tasks and retrying quickly, for a test
// playing a human, checking PVE's view or driving the provider's code directly.
func simClient(t *testing.T, sim *pvesim.Server) *proxmox.Client {
	t.Helper()
	c, err := proxmox.New(proxmox.Config{Endpoint: sim.URL(), APIToken: sim.APIToken(), CACertPEM: sim.CACertPEM(),
		PollInterval: 5 * time.Millisecond, RetryBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Client is a client of the test's cluster: the simulator's, or on a real cluster one made from
// the environment the provider reads (PROXMOX_VE_*), for checks of PVE's own view that hold on
// both.
func (e *accEnv) client(t *testing.T) *proxmox.Client {
	t.Helper()
	if e.sim != nil {
		return simClient(t, e.sim)
	}
	cfg := proxmox.Config{Endpoint: os.Getenv(config.EnvEndpoint), APIToken: os.Getenv(config.EnvToken),
		Username: os.Getenv(config.EnvUsername), Password: os.Getenv(config.EnvPassword)}
	if v := os.Getenv(config.EnvInsecure); v != "" {
		insecure, err := strconv.ParseBool(v)
		if err != nil {
			t.Fatalf("%s=%q: %v", config.EnvInsecure, v, err)
		}
		cfg.Insecure = insecure
	}
	c, err := proxmox.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// createVM plays a human creating a VM in the simulated cluster, outside Terraform.
func (e *accEnv) createVM(t *testing.T, node string, vmid int, params map[string]string) {
	t.Helper()
	must(t, simClient(t, e.sim).CreateVM(context.Background(), node, vmid, params))
}

// providerBlock renders the provider configuration for the simulator (empty for a real
// cluster, where the environment configures the provider).
func (e *accEnv) providerBlock(extra string) string {
	if e.sim == nil {
		return fmt.Sprintf("provider \"qemuscheduler\" {\n%s\n}\n", extra)
	}
	return fmt.Sprintf("provider \"qemuscheduler\" {\n  endpoint  = %q\n  api_token = %q\n  ca_cert   = <<EOT\n%sEOT\n%s\n}\n",
		e.sim.URL(), e.sim.APIToken(), e.sim.CACertPEM(), extra)
}

// config joins the provider block and the test's HCL.
func (e *accEnv) config(hcl ...string) string {
	return e.providerBlock("") + strings.Join(hcl, "\n")
}

// labCluster is the small cluster most tests use. Live figures, as the simulator computes
// them (host load plus running guests), give NodeResource scores pve1 35, pve2 86.56,
// pve3 77.5; pve4 is offline.
func labCluster() pvesim.Cluster {
	return pvesim.Cluster{
		Nodes: []pvesim.NodeSpec{
			{Name: "pve1", CPUs: 8, MemoryGiB: 16, CPULoad: 0.5, MemUsedGiB: 8},
			{Name: "pve2", CPUs: 8, MemoryGiB: 16, CPULoad: 0.1, MemUsedGiB: 2},
			{Name: "pve3", CPUs: 8, MemoryGiB: 16, CPULoad: 0.2, MemUsedGiB: 4},
			{Name: "pve4", CPUs: 8, MemoryGiB: 16, Offline: true},
		},
		Storages: []pvesim.StorageSpec{
			{Name: "local-lvm", Type: "lvmthin", Content: []string{"images", "rootdir"}, SizeGiB: 500, UsedGiB: 100},
			{Name: "ceph", Type: "rbd", Content: []string{"images"}, Shared: true, SizeGiB: 2000, UsedGiB: 1000},
		},
		Pools: []string{"lab"},
		Guests: []pvesim.GuestSpec{
			{VMID: 100, Node: "pve1", Name: "db", Status: "running", Cores: 4, MemoryMiB: 4096},
			{VMID: 200, Node: "pve2", Type: "lxc", Name: "dns", Status: "running", Cores: 1, MemoryMiB: 512},
			{VMID: 9000, Node: "pve1", Name: "debian-12", Template: true, Cores: 2, MemoryMiB: 2048,
				Config: map[string]string{"scsi0": "ceph:base-9000-disk-0,size=8G", "net0": "virtio=BC:24:11:00:90:00,bridge=vmbr0"}},
			{VMID: 9001, Node: "pve3", Name: "local-template", Template: true, Cores: 1, MemoryMiB: 1024,
				Config: map[string]string{"scsi0": "local-lvm:base-9001-disk-0,size=4G"}},
		},
	}
}

// equalCluster has three identical empty nodes.
func equalCluster() pvesim.Cluster {
	c := pvesim.Cluster{Storages: []pvesim.StorageSpec{{Name: "local-lvm", Content: []string{"images"}, SizeGiB: 500}}}
	for i := 1; i <= 3; i++ {
		c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: fmt.Sprintf("pve%d", i), CPUs: 16, MemoryGiB: 64})
	}
	return c
}

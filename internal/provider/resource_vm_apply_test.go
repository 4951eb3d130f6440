package provider

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// interceptedEnv serves a simulated cluster through intercept, which sees every API request
// before the simulator does: the way to act at an exact moment of an apply (between the
// decision and the create, say) without timers.
func interceptedEnv(t *testing.T, c pvesim.Cluster, intercept func(sim *pvesim.Server, next http.Handler) http.Handler) (*accEnv, *pvesim.Server) {
	t.Helper()
	skipUnlessAcc(t)
	if os.Getenv("PROXMOX_VE_ENDPOINT") != "" {
		t.Skip("needs the simulator's cluster and fault injection; skipped against a real cluster")
	}
	sim, err := pvesim.New(c)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewTLSServer(intercept(sim, sim))
	t.Cleanup(ts.Close)
	sim.SetListener(ts.URL, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})))
	return &accEnv{sim: sim}, sim
}

// onFirst runs act once, on the first request for which match is true, before the simulator
// serves it.
func onFirst(match func(r *http.Request) bool, act func(sim *pvesim.Server, w http.ResponseWriter, r *http.Request) (handled bool)) func(*pvesim.Server, http.Handler) http.Handler {
	return func(sim *pvesim.Server, next http.Handler) http.Handler {
		var done atomic.Bool
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if match(r) && done.CompareAndSwap(false, true) && act(sim, w, r) {
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

var createPath = regexp.MustCompile(`^/api2/json/nodes/[^/]+/qemu$`)

func isCreate(r *http.Request) bool {
	return r.Method == http.MethodPost && createPath.MatchString(r.URL.Path)
}

// bodyVMID reads the vmid of a create request and leaves the body for the simulator.
func bodyVMID(t *testing.T, r *http.Request) int {
	raw, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(raw))
	var body struct {
		VMID json.Number `json:"vmid"`
	}
	if err == nil {
		err = json.Unmarshal(raw, &body)
	}
	var id int64
	if err == nil {
		id, err = body.VMID.Int64()
	}
	if err != nil {
		t.Errorf("create body %q: %v", raw, err)
	}
	return int(id)
}

// An outside actor creates a VM with the very id we decided on, after our snapshot and
// before our create reaches PVE: PVE refuses ours, and the resource decides again.
func TestAccVMOutsiderTakesTheIDMidApply(t *testing.T) {
	var taken atomic.Int64
	env, sim := interceptedEnv(t, labCluster(), onFirst(isCreate, func(sim *pvesim.Server, _ http.ResponseWriter, r *http.Request) bool {
		id := bodyVMID(t, r)
		taken.Store(int64(id))
		sim.TakeVMID(id)
		return false
	}))
	runSteps(t, resource.TestStep{
		Config: env.config(`resource "qemuscheduler_vm" "web" { name = "web-1" }`),
		Check: resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, "vmid", "108"), // the retry skips a few free ids, a fixed offset from the name (see provision.skipFor), lest competitors collide again
			func(*terraform.State) error {
				if taken.Load() != 101 {
					return fmt.Errorf("the outsider took %d, want the first choice 101", taken.Load())
				}
				if g, ok := sim.Guest(101); !ok || g.Config["name"] != "outsider-101" {
					return fmt.Errorf("the outsider's VM 101 was touched: %+v", g)
				}
				return nil
			},
			guestCheck(sim, expectConfig(map[string]string{"name": "web-1"})),
		),
	})
}

// The chosen node drops out of the cluster just as the create reaches it (PVE answers 595):
// the VM is made elsewhere.
func TestAccVMNodeGoesOfflineMidApply(t *testing.T) {
	env, sim := interceptedEnv(t, labCluster(), onFirst(isCreate, func(sim *pvesim.Server, _ http.ResponseWriter, r *http.Request) bool {
		if err := sim.SetNodeOnline("pve2", false); err != nil {
			t.Error(err)
		}
		return false
	}))
	runSteps(t, resource.TestStep{
		Config: env.config(`resource "qemuscheduler_vm" "web" { name = "web-1" }`),
		Check: resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, "node", "pve3"),
			resource.TestCheckResourceAttr(vmAddr, "vmid", "101"),
			guestCheck(sim, func(g pvesim.GuestState) error {
				if g.Status != "running" {
					return fmt.Errorf("status %s, want running", g.Status)
				}
				return nil
			}),
		),
	})
}

// The create timeout strikes while PVE is still answering for the create task, but the guest
// exists: the error comes with the VM in state (tainted), so the destroy at the end of the
// test removes it and nothing is orphaned.
func TestAccVMCreateTimeoutKeepsTheGuestInState(t *testing.T) {
	isCreatePoll := func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/tasks/") && strings.Contains(r.URL.Path, ":qmcreate:")
	}
	env, sim := interceptedEnv(t, labCluster(), onFirst(isCreatePoll, func(_ *pvesim.Server, _ http.ResponseWriter, r *http.Request) bool {
		<-r.Context().Done() // PVE is slow to answer until the client gives up
		return true
	}))
	runCase(t, resource.TestCase{
		Steps: []resource.TestStep{{
			Config: env.config(`resource "qemuscheduler_vm" "web" {
  name = "web-1"
  timeouts {
    create = "3s"
  }
}`),
			ExpectError: regexp.MustCompile(`(?s)VM 101 was created on pve2 but could not be set up.*context deadline exceeded.*kept in the state as tainted`),
		}},
		CheckDestroy: guestGone(sim, 101),
	})
}

// With node pinned, a move by HA is drift: the plan migrates the VM back, live since it runs.
func TestAccVMPinnedNodeMovedByHAMigratesBack(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	cfg := env.config(`resource "qemuscheduler_vm" "web" {
  name = "web-1"
  node = "pve2"
}`)
	runCase(t, resource.TestCase{
		Steps: []resource.TestStep{
			{Config: cfg, Check: resource.TestCheckResourceAttr(vmAddr, "node", "pve2")},
			{
				PreConfig: func() { must(t, sim.SetGuestNode(101, "pve3")) },
				Config:    cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("node"), knownvalue.StringExact("pve2")),
				}},
				Check: guestCheck(sim, func(g pvesim.GuestState) error {
					if g.Node != "pve2" || g.Status != "running" {
						return fmt.Errorf("VM on %s, %s; want running on pve2", g.Node, g.Status)
					}
					return nil
				}),
			},
		},
		CheckDestroy: guestGone(sim, 101),
	})
}

// Unpinned, a move by hand is no drift, and placement_summary follows the VM: it names the
// node it runs on and the one it was placed on, and the plan stays empty.
func TestAccVMSummaryFollowsMove(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	cfg := env.config(`resource "qemuscheduler_vm" "web" {
  name = "web-1"
}`)
	runCase(t, resource.TestCase{
		Steps: []resource.TestStep{
			{Config: cfg, Check: resource.TestMatchResourceAttr(vmAddr, "placement_summary", regexp.MustCompile(`^web-1: pve2 \(score `))},
			{
				PreConfig:        func() { must(t, sim.SetGuestNode(101, "pve3")) },
				Config:           cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(vmAddr, "node", "pve3"),
					resource.TestMatchResourceAttr(vmAddr, "placement_summary", regexp.MustCompile(`^web-1: pve3 \(migrated; placed on pve2 with score `)),
				),
			},
			{
				PreConfig: func() { must(t, sim.SetGuestNode(101, "pve2")) },
				Config:    cfg,
				Check:     resource.TestMatchResourceAttr(vmAddr, "placement_summary", regexp.MustCompile(`^web-1: pve2 \(score `)),
			},
		},
		CheckDestroy: guestGone(sim, 101),
	})
}

// The attributes TestAccVMUpdateInPlace does not cover, changed in place, added and removed;
// devices keep their computed values by slot, not by list position.
func TestAccVMUpdateDevicesAndCloudInit(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	// Real keys: PVE checks each with ssh-keygen.
	const k1, k2 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAcyr9L4nbOd9V+cAwmeA/XJ/eXrELWwlsmSF4Xc50VY one@host", "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQDQGlUOrb3hnPS84A9epMeHaW8n44xYuaXqN/LA91k41VUEKLj3kwUUVnWHJIojh9vyE7ymXYnuBmoYtI+e2KnBAvKd+cZox5eAXvjEeFyNKMyLb4dNWp9rukizMohFr7luuSuIKZreVnJCc8TELC0ZdcnXAK1N3nWRX0QLYtJBEQ== two@host"
	step1 := env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name     = "web-1"
  sockets  = 1
  cpu_type = "x86-64-v2-AES"
  agent    = false
  network {
    slot = "net0"
  }
  cloud_init {
    user         = "debian"
    ssh_keys     = [%q]
    ip_config    = ["ip=dhcp"]
    searchdomain = "a.example.com"
  }
}`, k1))
	// Steps 2 and 3 differ in net0 (there, then gone) and in the cloud-init keys and IP configs.
	web2 := func(net0, sshKeys, ipConfig string) string {
		return env.config(fmt.Sprintf(`resource "qemuscheduler_vm" "web" {
  name     = "web-2"
  sockets  = 2
  cpu_type = "host"
  agent    = true
%s  network {
    slot     = "net1"
    model    = "e1000"
    bridge   = "vmbr1"
    firewall = true
  }
  disk {
    slot    = "scsi1"
    storage = "local-lvm"
    size    = 4
  }
  cloud_init {
    user         = "debian"
    ssh_keys     = [%s]
    ip_config    = [%s]
    searchdomain = "b.example.com"
  }
}`, net0, sshKeys, ipConfig))
	}
	step2 := web2("  network {\n    slot = \"net0\"\n  }\n", fmt.Sprintf("%q, %q", k1, k2), `"ip=10.0.0.5/24,gw=10.0.0.1", "ip=dhcp"`)
	step3 := web2("", fmt.Sprintf("%q", k2), `"ip=10.0.0.5/24,gw=10.0.0.1"`)
	var net1 string
	absent := func(keys ...string) func(pvesim.GuestState) error {
		return func(g pvesim.GuestState) error {
			for _, k := range keys {
				if v, ok := g.Config[k]; ok {
					return fmt.Errorf("%s = %q is still set", k, v)
				}
			}
			return nil
		}
	}
	runSteps(t,
		resource.TestStep{Config: step1, Check: guestCheck(sim, expectConfig(map[string]string{
			"sockets": "1", "cpu": "x86-64-v2-AES", "agent": "0", "ide2": "ceph:vm-101-cloudinit,media=cdrom", "searchdomain": "a.example.com"}))},
		resource.TestStep{Config: step2, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate)}},
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(vmAddr, "vmid", "101"),
				resource.TestMatchResourceAttr(vmAddr, "network.1.mac", regexp.MustCompile(`^BC:24:11:`)),
				guestCheck(sim, func(g pvesim.GuestState) error {
					if err := expectConfig(map[string]string{"name": "web-2", "sockets": "2", "cpu": "host", "agent": "1",
						"sshkeys":   "ssh-ed25519%20AAAAC3NzaC1lZDI1NTE5AAAAIAcyr9L4nbOd9V%2BcAwmeA%2FXJ%2FeXrELWwlsmSF4Xc50VY%20one%40host%0Assh-rsa%20AAAAB3NzaC1yc2EAAAADAQABAAAAgQDQGlUOrb3hnPS84A9epMeHaW8n44xYuaXqN%2FLA91k41VUEKLj3kwUUVnWHJIojh9vyE7ymXYnuBmoYtI%2Be2KnBAvKd%2BcZox5eAXvjEeFyNKMyLb4dNWp9rukizMohFr7luuSuIKZreVnJCc8TELC0ZdcnXAK1N3nWRX0QLYtJBEQ%3D%3D%20two%40host",
						"ipconfig0": "ip=10.0.0.5/24,gw=10.0.0.1", "ipconfig1": "ip=dhcp", "searchdomain": "b.example.com",
						"scsi1": "local-lvm:vm-101-disk-0,size=4G"})(g); err != nil {
						return err
					}
					if !regexp.MustCompile(`^e1000=BC:24:11:[0-9A-F:]{8},bridge=vmbr1,firewall=1$`).MatchString(g.Config["net1"]) {
						return fmt.Errorf("net1 = %q", g.Config["net1"])
					}
					net1 = g.Config["net1"]
					return nil
				}),
			)},
		// net0 goes, so net1 moves to the first list position: it must keep its own MAC.
		resource.TestStep{Config: step3, Check: guestCheck(sim, func(g pvesim.GuestState) error {
			if err := absent("net0", "ipconfig1")(g); err != nil {
				return err
			}
			return expectConfig(map[string]string{"net1": net1, "sshkeys": "ssh-rsa%20AAAAB3NzaC1yc2EAAAADAQABAAAAgQDQGlUOrb3hnPS84A9epMeHaW8n44xYuaXqN%2FLA91k41VUEKLj3kwUUVnWHJIojh9vyE7ymXYnuBmoYtI%2Be2KnBAvKd%2BcZox5eAXvjEeFyNKMyLb4dNWp9rukizMohFr7luuSuIKZreVnJCc8TELC0ZdcnXAK1N3nWRX0QLYtJBEQ%3D%3D%20two%40host"})(g)
		})},
	)
}

// A clone whose source keeps a CD-ROM on ide2 gets its cloud-init drive on the next free IDE
// slot; the CD-ROM stays.
func TestAccVMCloneCloudInitAvoidsBusyIDE2(t *testing.T) {
	env, sim := simEnv(t, labCluster())
	runSteps(t, resource.TestStep{
		PreConfig: func() {
			env.createVM(t, "pve1", 9100, map[string]string{"name": "with-cd", "scsi0": "ceph:4", "ide2": "none,media=cdrom"})
		},
		Config: env.config(`resource "qemuscheduler_vm" "web" {
  name = "web-1"
  clone {
    source_vmid = 9100
  }
  cloud_init {
    user = "debian"
  }
}`),
		Check: guestCheck(sim, expectConfig(map[string]string{
			"ide2": "none,media=cdrom", "ide0": "ceph:vm-101-cloudinit,media=cdrom", "ciuser": "debian"})),
	})
}

// Malformed values fail validation at plan time, naming the attribute.
func TestAccVMValidation(t *testing.T) {
	env := newAccEnv(t, labCluster())
	vm := func(body string) string {
		return env.config(`resource "qemuscheduler_vm" "web" {
  name = "web-1"
` + body + "\n}")
	}
	tests := []struct {
		body string
		want string
	}{
		{`network {
    slot = "net40"
  }`, `network\[0\]\.slot.*must be net0 to net31`},
		{`network {
    slot = "net0"
    vlan = 5000
  }`, `network\[0\]\.vlan.*between 1 and 4094`},
		{`network {
    slot  = "net0"
    model = "ne2k"
  }`, `network\[0\]\.model.*virtio`},
		{`disk {
    slot = "nvme0"
    size = 8
  }`, `disk\[0\]\.slot.*must be scsi0-30, virtio0-15, sata0-5 or ide0-3`},
		{`memory = 8`, `memory = 8: memory is in MiB and must be 16 to 4194304; for 8 GiB write 8192`},
		// The placement record keeps an annotation on one line, trimmed: such a value would be
		// read back otherwise, and the record rewritten on every plan.
		{`annotations = { "node.qemu-scheduler/regex" = "pve1 " }`, `Invalid annotation.*regex" = "pve1 ".*"pve1 " has a space at an end`},
		{`annotations = { "node.qemu-scheduler/regex" = "pve1\npve2" }`, `Invalid annotation.*"pve1\\npve2" has a line break`},
		// Sizes whose products once wrapped past the filters (4 x 2^62 cores = 0 vCPUs).
		{`cores   = 4611686018427387904
  sockets = 4`, `cores.*between 1 and 4096`},
		{`cores   = 64
  sockets = 65`, `64 x 65 = 4160 vCPUs; Proxmox VE \(QEMU\) accepts at most 4096`},
		{`memory = 17592186044416`, `memory is in MiB and must be 16 to 4194304`},
		{`memory = 17179869184`, `memory = 17179869184: memory is in MiB and must be 16 to 4194304 \(PVE's 4 TiB\)\. 17179869184 looks like bytes: that is 16384 MiB`},
		{`balloon = 4194305`, `balloon = 4194305: balloon is in MiB and must be 0 to 4194304`},
		{`balloon = 8589934592`, `balloon = 8589934592: balloon is in MiB and must be 0 to 4194304 \(PVE's 4 TiB\)\. 8589934592 looks like bytes: that is 8192 MiB`},
		{`disk {
    slot = "scsi0"
    size = 1048577
  }`, `disk\[0\]\.size.*between 1 and 1048576`},
		{`memory  = 1024
  balloon = 2048`, `balloon \(2048 MiB\) must not exceed memory \(1024 MiB\)`},
		{`cloud_init {
    ip_config = ["ip=10.0.0.5"]
  }`, `cloud_init\.ip_config\[0\].*not an IPv4 address in CIDR notation`},
		{`clone {
    source_vmid = 9000
    full        = false
    storage     = "ceph"
  }`, `linked clone \(full = false\) keeps its disks`},
		{`tags = ["Web"]`, `tags.*must be lowercase`},
		{`tags = ["web", "qemuscheduler-record"]`, `tags: "qemuscheduler-record" is a mark the provider sets and removes itself`},
		{`description = "Runbook\nqemu-scheduler/record: v1\nqemu-scheduler/vm-anti-affinity: tags=web\n"`,
			`description line 2 "qemu-scheduler/record: v1" starts a placement record, which the provider writes itself`},
	}
	var steps []resource.TestStep
	for _, tt := range tests {
		steps = append(steps, resource.TestStep{Config: vm(tt.body), PlanOnly: true, ExpectError: wrapped(`(?s)` + tt.want)})
	}
	runSteps(t, steps...)
}

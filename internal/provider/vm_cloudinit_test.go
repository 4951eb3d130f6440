package provider

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/cloudinit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/disk"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

func TestCompleteCloudInitAddsDrive(t *testing.T) {
	withCI := func(disks ...string) *vmresource.Model {
		m := existingVM()
		m.Disks = nil
		for _, d := range disks {
			m.Disks = append(m.Disks, disk.Model{Slot: types.StringValue(d), Size: types.Int64Value(1)})
		}
		m.CloudInit = &cloudinit.Model{}
		return m
	}
	tests := []struct {
		name    string
		m       *vmresource.Model
		cfg     map[string]string
		want    map[string]string
		wantErr bool
	}{
		{"no cloud_init block", existingVM(), nil, map[string]string{}, false},
		{"a new VM gets ide2", withCI(), nil, map[string]string{"ide2": "ceph:cloudinit"}, false},
		{"a drive exists already", withCI(), map[string]string{"ide0": "ceph:vm-101-cloudinit,media=cdrom"}, map[string]string{}, false},
		{"ide2 holds a CD-ROM", withCI(), map[string]string{"ide2": "none,media=cdrom"}, map[string]string{"ide0": "ceph:cloudinit"}, false},
		{"ide2 busy, ide0 planned as a disk", withCI("ide0"), map[string]string{"ide2": "none,media=cdrom"}, map[string]string{"ide1": "ceph:cloudinit"}, false},
		{"every IDE slot busy", withCI("ide0", "ide1", "ide3"), map[string]string{"ide2": "none,media=cdrom"}, map[string]string{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := map[string]string{}
			err := tt.m.CompleteCloudInit(tt.cfg, set, "ceph")
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(set, tt.want) {
				t.Fatalf("set = %v, want %v", set, tt.want)
			}
		})
	}
}

func TestSSHKeysEncodeLikePVE(t *testing.T) {
	keys := []string{"ssh-ed25519 AAAAC3Nz user@host", "ssh-rsa AAAAB3+/= other"}
	enc := cloudinit.EncodeSSHKeys(keys)
	if want := "ssh-ed25519%20AAAAC3Nz%20user%40host%0Assh-rsa%20AAAAB3%2B%2F%3D%20other"; enc != want {
		t.Fatalf("encodeSSHKeys = %q, want %q (PVE rejects '+' for spaces)", enc, want)
	}
	if got := cloudinit.DecodeSSHKeys(enc); !reflect.DeepEqual(got, keys) {
		t.Fatalf("decodeSSHKeys = %q", got)
	}
}

// Snippets and upgrade map to cicustom and ciupgrade and back; settings not managed stay null
// whatever PVE has, and an absent ciupgrade reads as PVE's default, true.
func TestCloudInitSnippetsMapping(t *testing.T) {
	ctx := context.Background()
	var diags diag.Diagnostics
	ci := &cloudinit.Model{UserData: types.StringValue("local:snippets/user.yaml"), VendorData: types.StringValue("cephfs:snippets/v.yaml"),
		Upgrade: types.BoolValue(false)}
	cfg := map[string]string{}
	ci.Config(ctx, cfg, &diags)
	if want := map[string]string{"cicustom": "user=local:snippets/user.yaml,vendor=cephfs:snippets/v.yaml", "ciupgrade": "0"}; !reflect.DeepEqual(cfg, want) {
		t.Fatalf("config = %v, want %v", cfg, want)
	}

	pve := map[string]string{"cicustom": "vendor=cephfs:snippets/v2.yaml,meta=local:snippets/m.yaml,user=local:snippets/u2.yaml",
		"ciupgrade": "1", "ciuser": "ops"}
	ci.Read(ctx, pve, &diags)
	if got := []string{ci.UserData.ValueString(), ci.VendorData.ValueString()}; !reflect.DeepEqual(got, []string{"local:snippets/u2.yaml", "cephfs:snippets/v2.yaml"}) {
		t.Errorf("read user_data, vendor_data = %v: keys are found in any order", got)
	}
	if !ci.NetworkData.IsNull() || !ci.User.IsNull() {
		t.Errorf("unmanaged network_data %v, user %v: want null", ci.NetworkData, ci.User)
	}
	if !ci.Upgrade.ValueBool() {
		t.Error("ciupgrade=1 read as false")
	}
	delete(pve, "ciupgrade")
	delete(pve, "cicustom")
	ci.Read(ctx, pve, &diags)
	if !ci.Upgrade.ValueBool() || ci.UserData.ValueString() != "" {
		t.Errorf("without ciupgrade and cicustom: upgrade %v (PVE's default is true), user_data %q (want empty: removed outside Terraform)", ci.Upgrade, ci.UserData.ValueString())
	}
	if diags.HasError() {
		t.Fatal(diags)
	}
}

// A meta file set outside Terraform is kept when cicustom is written.
func TestCompleteCloudInitKeepsMeta(t *testing.T) {
	m := existingVM()
	m.CloudInit = &cloudinit.Model{}
	set := map[string]string{"cicustom": "user=local:snippets/u.yaml"}
	cfg := map[string]string{"ide2": "ceph:vm-101-cloudinit,media=cdrom", "cicustom": "user=local:snippets/old.yaml,meta=local:snippets/m.yaml"}
	if err := m.CompleteCloudInit(cfg, set, "ceph"); err != nil {
		t.Fatal(err)
	}
	if want := "user=local:snippets/u.yaml,meta=local:snippets/m.yaml"; set["cicustom"] != want {
		t.Errorf("cicustom = %q, want %q", set["cicustom"], want)
	}
}

func TestImportCloudInit(t *testing.T) {
	ctx := context.Background()
	var diags diag.Diagnostics
	if ci := cloudinit.Import(ctx, map[string]string{"scsi0": "ceph:vm-101-disk-0,size=8G"}, &diags); ci != nil {
		t.Errorf("a VM without cloud-init imported %+v", ci)
	}
	ci := cloudinit.Import(ctx, map[string]string{"ide2": "ceph:vm-101-cloudinit,media=cdrom", "ciuser": "debian", "cipassword": "**********",
		"cicustom": "network=local:snippets/n.yaml", "ciupgrade": "0", "ipconfig0": "ip=dhcp"}, &diags)
	switch {
	case ci == nil:
		t.Fatal("cloud-init not imported")
	case ci.User.ValueString() != "debian" || ci.NetworkData.ValueString() != "local:snippets/n.yaml" || ci.Upgrade.ValueBool() || ci.IPConfig.String() != `["ip=dhcp"]`:
		t.Errorf("imported %+v", ci)
	case !ci.Password.IsNull() || !ci.UserData.IsNull() || !ci.SSHKeys.IsNull() || !ci.Nameserver.IsNull():
		t.Errorf("settings PVE does not have (or masks) must stay null: %+v", ci)
	}
	if ci := cloudinit.Import(ctx, map[string]string{"ide0": "local-lvm:vm-101-cloudinit,media=cdrom"}, &diags); ci == nil || !ci.Upgrade.IsNull() {
		t.Errorf("a VM with only a cloud-init drive: %+v, want an empty block", ci)
	}
	if diags.HasError() {
		t.Fatal(diags)
	}
}

func TestCloudInitConflicts(t *testing.T) {
	ci := &cloudinit.Model{UserData: types.StringValue("local:snippets/u.yaml"), User: types.StringValue("debian"),
		SSHKeys: stringList("ssh-ed25519 AAAA a@b"), NetworkData: types.StringUnknown(), Nameserver: types.StringValue("1.1.1.1"),
		VendorData: types.StringValue("local:snippets/v.yaml"), Password: types.StringNull()}
	var diags diag.Diagnostics
	ci.Validate(&diags)
	var got []string
	for _, d := range diags.Errors() {
		got = append(got, d.Detail()[:strings.Index(d.Detail(), ":")])
	}
	want := []string{"cloud_init.user and cloud_init.user_data cannot both be set", "cloud_init.ssh_keys and cloud_init.user_data cannot both be set",
		"cloud_init.nameserver and cloud_init.network_data cannot both be set"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("conflicts %q, want %q", got, want)
	}
}

func TestSnippetVolumeFormat(t *testing.T) {
	for v, ok := range map[string]bool{"local:snippets/user.yaml": true, "Ceph-FS.1:snippets/a b.yml": true,
		"snippets/user.yaml": false, "local:user.yaml": false, "local:snippets/a/b.yaml": false, "local:snippets/a.yaml,meta=x": false,
		"1local:snippets/u.yaml": false, "local:iso/u.iso": false} {
		if err := cloudinit.SnippetCheck.Check(v); (err == nil) != ok {
			t.Errorf("%q: error %v, want valid %v", v, err, ok)
		}
	}
}

// snippetLab is the lab cluster with snippet storages: a shared CephFS holding four
// snippets, a local directory on every node (pve2's holds one file), and one on pve3 only.
func snippetLab() pvesim.Cluster {
	c := labCluster()
	c.Storages = append(c.Storages,
		pvesim.StorageSpec{Name: "cephfs", Type: "cephfs", Content: []string{"snippets", "iso"}, Shared: true, SizeGiB: 100,
			Snippets: []string{"user.yaml", "user2.yaml", "vendor.yaml", "network.yaml"}},
		pvesim.StorageSpec{Name: "local", Type: "dir", Content: []string{"snippets", "iso"}, SizeGiB: 100},
		pvesim.StorageSpec{Name: "pve3-dir", Type: "dir", Content: []string{"snippets"}, Nodes: []string{"pve3"}, SizeGiB: 10})
	return c
}

const snippetListings = "GET /nodes/{node}/storage/{storage}/content"

// The plan checks snippets against the cluster view and, where it can tell, the storage's
// listing, which plans share while the view is shared; unchanged snippets are not checked again.
// A snippet the shared listing lacks is looked for in a listing read now: at apply, Terraform
// plans a VM again right after the resource that uploads its snippet.
func TestCheckSnippets(t *testing.T) {
	ctx := context.Background()
	sim := pvesim.NewTestServer(t, snippetLab())
	must(t, sim.PutSnippet("pve2", "local", "web.yaml", 100))
	client := simClient(t, sim)
	r := &vmresource.Resource{Data: &config.Data{Client: client, Nodes: config.NewNodePolicy(nil, nil), MaxAge: time.Hour}}
	snap, err := r.Data.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vm := func(node, userData string) *vmresource.Model {
		m := existingVM()
		m.Node = types.StringValue(node)
		if node == "" {
			m.Node = types.StringUnknown()
		}
		m.CloudInit = &cloudinit.Model{UserData: types.StringValue(userData)}
		return m
	}
	creating := &vmresource.Model{}
	tests := []struct {
		name        string
		plan, state *vmresource.Model
		want        string // error summary, "" for none
		listings    int
		put         string // a snippet put into cephfs before the check, after the shared listing
	}{
		{"shared storage, any node", vm("", "cephfs:snippets/user.yaml"), creating, "", 1, ""},
		{"a second VM shares the listing", vm("pve3", "cephfs:snippets/vendor.yaml"), creating, "", 0, ""},
		{"uploaded after the shared listing", vm("", "cephfs:snippets/uploaded.yaml"), creating, "", 1, "uploaded.yaml"},
		{"missing on a shared storage", vm("", "cephfs:snippets/nope.yaml"), creating, "Snippet not found", 1, ""},
		{"unknown storage", vm("", "nope:snippets/u.yaml"), creating, "Snippet storage does not exist", 0, ""},
		{"storage without snippets", vm("", "local-lvm:snippets/u.yaml"), creating, "Storage holds no snippets", 0, ""},
		{"local storage, node not chosen yet", vm("", "local:snippets/web.yaml"), creating, "", 0, ""},
		{"local storage on the pinned node", vm("pve2", "local:snippets/web.yaml"), creating, "", 1, ""},
		{"local storage, file on another node", vm("pve1", "local:snippets/web.yaml"), creating, "Snippet not found", 2, ""},
		{"storage not on the node", vm("pve2", "pve3-dir:snippets/u.yaml"), creating, "Snippet storage not on the VM's node", 0, ""},
		{"unchanged snippet of an existing VM", vm("pve1", "cephfs:snippets/gone.yaml"), vm("pve1", "cephfs:snippets/gone.yaml"), "", 0, ""},
		{"existing VM moved to another node", vm("pve3", "pve3-dir:snippets/u.yaml"), vm("pve1", "pve3-dir:snippets/u.yaml"), "Snippet not found", 2, ""},
		{"offline node: a warning", vm("pve4", "local:snippets/web.yaml"), creating, "", 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.put != "" {
				must(t, sim.PutSnippet("pve1", "cephfs", tt.put, 100))
			}
			before := sim.Requests(snippetListings)
			var diags diag.Diagnostics
			r.CheckSnippets(ctx, tt.plan, tt.state, snap, &diags)
			got := ""
			if diags.HasError() {
				got = diags.Errors()[0].Summary()
				if d := diags.Errors()[0].Detail(); !strings.Contains(d, "cloud_init.user_data = ") || !strings.HasSuffix(d, changeset.DestroyAnyway) {
					t.Errorf("detail %q does not name the attribute or does not say how to destroy anyway", d)
				}
			}
			if got != tt.want {
				t.Errorf("error %q, want %q (%v)", got, tt.want, diags)
			}
			if warned := diags.WarningsCount() > 0; warned != strings.HasSuffix(tt.name, "a warning") {
				t.Errorf("warnings: %v", diags.Warnings())
			}
			if n := sim.Requests(snippetListings) - before; n != tt.listings {
				t.Errorf("%d listings, want %d", n, tt.listings)
			}
		})
	}
}

// ciVM is the configuration of a VM with one NIC and the cloud_init block's body ci.
func ciVM(env *accEnv, ci string) string {
	return env.config(`resource "qemuscheduler_vm" "web" {
  name = "ci-1"
  network {
    slot = "net0"
  }
  cloud_init {` + ci + `
  }
}`)
}

// A VM whose cloud-init comes from snippets: created and started (PVE reads the files at
// start), changed in place, and the second plan after each apply is empty.
func TestAccVMCloudInitSnippets(t *testing.T) {
	env, sim := simEnv(t, snippetLab())
	vm := func(ci string) string { return ciVM(env, ci) }
	runSteps(t,
		resource.TestStep{Config: vm(`
    user_data   = "cephfs:snippets/user.yaml"
    vendor_data = "cephfs:snippets/vendor.yaml"
    ip_config   = ["ip=dhcp"]
    upgrade     = false`),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(vmAddr, "cloud_init.user_data", "cephfs:snippets/user.yaml"),
				guestCheck(sim, func(g pvesim.GuestState) error {
					if g.Status != "running" {
						return fmt.Errorf("VM is %s: PVE found the snippets at start, it should run", g.Status)
					}
					return expectConfig(map[string]string{"cicustom": "user=cephfs:snippets/user.yaml,vendor=cephfs:snippets/vendor.yaml",
						"ciupgrade": "0", "ipconfig0": "ip=dhcp", "ide2": "ceph:vm-101-cloudinit,media=cdrom"})(g)
				}))},
		resource.TestStep{Config: vm(`
    user_data    = "cephfs:snippets/user2.yaml"
    network_data = "cephfs:snippets/network.yaml"`),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate)}},
			Check: guestCheck(sim, func(g pvesim.GuestState) error {
				if err := expectConfig(map[string]string{"cicustom": "user=cephfs:snippets/user2.yaml,network=cephfs:snippets/network.yaml"})(g); err != nil {
					return err
				}
				for _, k := range []string{"ciupgrade", "ipconfig0"} {
					if v, ok := g.Config[k]; ok {
						return fmt.Errorf("%s = %q is still set", k, v)
					}
				}
				return nil
			})},
		resource.TestStep{Config: vm(`
    user = "debian"
    upgrade = true`),
			Check: guestCheck(sim, expectConfig(map[string]string{"ciuser": "debian", "ciupgrade": "1", "cicustom": ""}))},
	)
}

// A VM set up by hand with snippets imports with them, and the plan is empty.
func TestAccVMCloudInitSnippetsImport(t *testing.T) {
	env, _ := simEnv(t, snippetLab())
	cfg := env.config(`resource "qemuscheduler_vm" "web" {
  name = "ci-legacy"
  network {
    slot = "net0"
  }
  cloud_init {
    user_data   = "cephfs:snippets/user.yaml"
    vendor_data = "cephfs:snippets/vendor.yaml"
    upgrade     = false
  }
}`)
	create := func() {
		env.createVM(t, "pve3", 150, map[string]string{"name": "ci-legacy", "net0": "virtio,bridge=vmbr0", "ide2": "ceph:cloudinit",
			"cicustom": "vendor=cephfs:snippets/vendor.yaml,user=cephfs:snippets/user.yaml", "ciupgrade": "0", "start": "1"})
	}
	runSteps(t,
		resource.TestStep{PreConfig: create, Config: cfg, ResourceName: vmAddr, ImportState: true, ImportStateId: "pve3/150", ImportStatePersist: true,
			ImportStateCheck: func(is []*terraform.InstanceState) error {
				if got := is[0].Attributes["cloud_init.user_data"]; got != "cephfs:snippets/user.yaml" {
					return fmt.Errorf("cloud_init.user_data = %q", got)
				}
				return nil
			}},
		resource.TestStep{Config: cfg, PlanOnly: true},
	)
}

// Conflicting settings and snippets PVE would not find fail the plan, naming the attribute.
func TestAccVMCloudInitSnippetValidation(t *testing.T) {
	env, _ := simEnv(t, snippetLab())
	vm := func(ci string) string { return ciVM(env, "\n    "+ci) }
	runParallel(t,
		resource.TestStep{Config: vm(`user = "debian"
    user_data = "cephfs:snippets/user.yaml"`), PlanOnly: true,
			ExpectError: regexp.MustCompile(`(?s)Conflicting cloud-init settings.*cloud_init.user and\s+cloud_init.user_data cannot both be set`)},
		resource.TestStep{Config: vm(`ssh_keys = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl a@b"]
    user_data = "cephfs:snippets/user.yaml"`), PlanOnly: true,
			ExpectError: regexp.MustCompile(`(?s)cloud_init.ssh_keys and\s+cloud_init.user_data`)},
		resource.TestStep{Config: vm(`user_data = "snippets/user.yaml"`), PlanOnly: true,
			ExpectError: regexp.MustCompile(`(?s)Invalid snippet volume id.*cloud_init.user_data.*STORAGE:snippets/FILE`)},
		resource.TestStep{Config: vm(`vendor_data = "nope:snippets/v.yaml"`), PlanOnly: true,
			ExpectError: regexp.MustCompile(`(?s)Snippet storage does not exist.*cloud_init.vendor_data`)},
		resource.TestStep{Config: vm(`network_data = "ceph:snippets/n.yaml"`), PlanOnly: true,
			ExpectError: regexp.MustCompile(`(?s)Storage holds no snippets.*cloud_init.network_data.*snippets\s+content\s+type`)},
		resource.TestStep{Config: vm(`user_data = "cephfs:snippets/usr.yaml"`), PlanOnly: true,
			ExpectError: regexp.MustCompile(`(?s)Snippet not found.*cloud_init.user_data.*network.yaml, cephfs:snippets/user.yaml.*terraform\s+destroy\s+-refresh=false`)},
	)
}

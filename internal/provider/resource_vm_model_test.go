package provider

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/cloudinit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/disk"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/network"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
)

func stringList(values ...string) types.List {
	elems := make([]attr.Value, len(values))
	for i, v := range values {
		elems[i] = types.StringValue(v)
	}
	return types.ListValueMust(types.StringType, elems)
}

func TestVMConfig(t *testing.T) {
	full := existingVM()
	full.Description, full.CPUType = types.StringValue("front end"), types.StringValue("host")
	full.Cores, full.Sockets, full.Memory, full.Balloon = types.Int64Value(2), types.Int64Value(2), types.Int64Value(4096), types.Int64Value(1024)
	full.Agent, full.OnBoot = types.BoolValue(true), types.BoolValue(true)
	full.Tags = types.SetValueMust(types.StringType, []attr.Value{types.StringValue("web"), types.StringValue("prod")})
	full.Networks = []network.Model{
		{Slot: types.StringValue("net0"), Model: types.StringValue("virtio"), Bridge: types.StringValue("vmbr0"), VLAN: types.Int64Value(10), Firewall: types.BoolValue(true), MAC: types.StringValue("BC:24:11:00:00:01")},
		{Slot: types.StringValue("net1"), Model: types.StringValue("e1000"), Bridge: types.StringValue("vmbr1"), VLAN: types.Int64Null(), Firewall: types.BoolValue(false), MAC: types.StringUnknown()},
	}
	full.CloudInit = &cloudinit.Model{User: types.StringValue("debian"), Password: types.StringValue("s3cret"),
		SSHKeys: stringList("ssh-ed25519 AAAA a@b"), IPConfig: stringList("ip=dhcp", "ip=10.0.0.5/24,gw=10.0.0.1"),
		Nameserver: types.StringValue("10.0.0.53"), Searchdomain: types.StringNull()}

	unknownSizes := newVM()
	unknownSizes.Memory = types.Int64Unknown()

	tests := []struct {
		name string
		m    *vmresource.Model
		want map[string]string
	}{
		// An empty cpu_type is PVE's default: no cpu key.
		{"what PVE reported is written back", existingVM(), map[string]string{"name": "web-1", "description": "", "cores": "1",
			"sockets": "1", "memory": "512", "balloon": "0", "agent": "0", "onboot": "0", "tags": ""}},
		{"every attribute", full, map[string]string{"name": "web-1", "description": "front end", "cpu": "host", "cores": "2", "sockets": "2",
			"memory": "4096", "balloon": "1024", "agent": "1", "onboot": "1", "tags": "prod;web",
			"net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0,tag=10,firewall=1", "net1": "e1000,bridge=vmbr1",
			"ciuser": "debian", "cipassword": "s3cret", "nameserver": "10.0.0.53", "sshkeys": "ssh-ed25519%20AAAA%20a%40b",
			"ipconfig0": "ip=dhcp", "ipconfig1": "ip=10.0.0.5/24,gw=10.0.0.1"}},
		{"unknown values are left to PVE or the template", unknownSizes, map[string]string{"name": "web-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var diags diag.Diagnostics
			got := tt.m.VMConfig(context.Background(), &diags)
			if diags.HasError() {
				t.Fatal(diags)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("vmConfig =\n%v\nwant\n%v", got, tt.want)
			}
		})
	}
}

func TestReadInto(t *testing.T) {
	vm := &proxmox.VM{Node: "pve3", VMID: 101, Status: "stopped", Config: map[string]string{
		"name": "web-1", "cores": "2", "memory": "2048", "agent": "enabled=1,fstrim_cloned_disks=1", "onboot": "1", "tags": "prod;web",
		"scsi0": "ceph:vm-101-disk-0,size=40G", "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0,tag=10",
		"ciuser": "ops", "cipassword": "**********", "sshkeys": "ssh-ed25519%20AAAA%20a%40b", "ipconfig0": "ip=dhcp", "ipconfig2": "ip=dhcp"}}
	m := existingVM()
	m.Disks = append(m.Disks, disk.Model{Slot: types.StringValue("scsi1"), Storage: types.StringValue("ceph"), Size: types.Int64Value(4)})
	m.Networks = []network.Model{{Slot: types.StringValue("net0")}, {Slot: types.StringValue("net1")}}
	m.CloudInit = &cloudinit.Model{User: types.StringValue("debian"), Password: types.StringValue("s3cret"), SSHKeys: stringList("old"),
		IPConfig: stringList("ip=dhcp"), Nameserver: types.StringNull(), Searchdomain: types.StringNull()}
	var diags diag.Diagnostics
	m.ReadInto(context.Background(), vm, &diags)
	if diags.HasError() {
		t.Fatal(diags)
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"node (moved)", m.Node.ValueString(), "pve3"},
		{"cores", m.Cores.ValueInt64(), int64(2)},
		{"sockets (PVE default when absent)", m.Sockets.ValueInt64(), int64(1)},
		{"memory", m.Memory.ValueInt64(), int64(2048)},
		{"balloon (absent: PVE's default, not 0)", m.Balloon.IsNull(), true},
		{"agent as a property string", m.Agent.ValueBool(), true},
		{"on_boot", m.OnBoot.ValueBool(), true},
		{"started", m.Started.ValueBool(), false},
		{"tags", m.Tags.String(), `["prod","web"]`},
		{"disks (scsi1 removed outside Terraform drops out)", len(m.Disks), 1},
		{"disk size", m.Disks[0].Size.ValueInt64(), int64(40)},
		{"networks (net1 removed outside Terraform drops out)", len(m.Networks), 1},
		{"mac", m.Networks[0].MAC.ValueString(), "BC:24:11:00:00:01"},
		{"vlan", m.Networks[0].VLAN.ValueInt64(), int64(10)},
		{"cloud-init user", m.CloudInit.User.ValueString(), "ops"},
		{"cloud-init password (PVE masks it; the configured one is kept)", m.CloudInit.Password.ValueString(), "s3cret"},
		{"ssh keys", m.CloudInit.SSHKeys.String(), `["ssh-ed25519 AAAA a@b"]`},
		{"ip config stops at the first gap", m.CloudInit.IPConfig.String(), `["ip=dhcp"]`},
		{"unmanaged nameserver stays null", m.CloudInit.Nameserver.IsNull(), true},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
}

func TestNormalizeTagsLikePVE(t *testing.T) {
	if got := vmresource.NormalizeTags([]string{"Web", "prod", "web", " db "}); got != "db;prod;web" {
		t.Fatalf("normalizeTags = %q", got)
	}
	if got := vmresource.SplitTags("db;prod, web x"); !reflect.DeepEqual(got, []string{"db", "prod", "web", "x"}) {
		t.Fatalf("splitTags = %q", got)
	}
}

func TestSummaryOn(t *testing.T) {
	const placed = "web-1: pve2 (score 186.56; 3/4 nodes feasible), vmid 500 (range 500-599), storage ceph"
	moved := "web-1: pve3 (migrated; placed on pve2 with score 186.56; 3/4 nodes feasible), vmid 500 (range 500-599), storage ceph"
	for _, tt := range []struct{ summary, node, want string }{
		{placed, "pve2", placed},
		{placed, "pve3", moved},
		{moved, "pve3", moved},
		{moved, "pve1", strings.Replace(moved, "web-1: pve3", "web-1: pve1", 1)},
		{moved, "pve2", placed},
		{"imported", "pve1", "imported"},
	} {
		if got := vmresource.SummaryOn(tt.summary, tt.node); got != tt.want {
			t.Errorf("summaryOn(%q, %s) = %q\nwant %q", tt.summary, tt.node, got, tt.want)
		}
	}
}

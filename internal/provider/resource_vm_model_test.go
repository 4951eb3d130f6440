package provider

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
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
	full.Networks = []networkModel{
		{Slot: types.StringValue("net0"), Model: types.StringValue("virtio"), Bridge: types.StringValue("vmbr0"), VLAN: types.Int64Value(10), Firewall: types.BoolValue(true), MAC: types.StringValue("BC:24:11:00:00:01")},
		{Slot: types.StringValue("net1"), Model: types.StringValue("e1000"), Bridge: types.StringValue("vmbr1"), VLAN: types.Int64Null(), Firewall: types.BoolValue(false), MAC: types.StringUnknown()},
	}
	full.CloudInit = &cloudInitModel{User: types.StringValue("debian"), Password: types.StringValue("s3cret"),
		SSHKeys: stringList("ssh-ed25519 AAAA a@b"), IPConfig: stringList("ip=dhcp", "ip=10.0.0.5/24,gw=10.0.0.1"),
		Nameserver: types.StringValue("10.0.0.53"), Searchdomain: types.StringNull()}

	unknownSizes := newVM()
	unknownSizes.Memory = types.Int64Unknown()

	tests := []struct {
		name string
		m    *vmModel
		want map[string]string
	}{
		{"what PVE reported is written back", existingVM(), map[string]string{"name": "web-1", "description": "", "cpu": "", "cores": "1",
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
			got := tt.m.vmConfig(context.Background(), &diags)
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
	m.Disks = append(m.Disks, diskModel{Slot: types.StringValue("scsi1"), Storage: types.StringValue("ceph"), Size: types.Int64Value(4)})
	m.Networks = []networkModel{{Slot: types.StringValue("net0")}, {Slot: types.StringValue("net1")}}
	m.CloudInit = &cloudInitModel{User: types.StringValue("debian"), Password: types.StringValue("s3cret"), SSHKeys: stringList("old"),
		IPConfig: stringList("ip=dhcp"), Nameserver: types.StringNull(), Searchdomain: types.StringNull()}
	var diags diag.Diagnostics
	m.readInto(context.Background(), vm, &diags)
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
		{"balloon (absent)", m.Balloon.ValueInt64(), int64(0)},
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

func TestAddCloudInitDrive(t *testing.T) {
	withCI := func(disks ...string) *vmModel {
		m := existingVM()
		m.Disks = nil
		for _, d := range disks {
			m.Disks = append(m.Disks, diskModel{Slot: types.StringValue(d), Size: types.Int64Value(1)})
		}
		m.CloudInit = &cloudInitModel{}
		return m
	}
	tests := []struct {
		name    string
		m       *vmModel
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
			err := tt.m.addCloudInitDrive(tt.cfg, set, "ceph")
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(set, tt.want) {
				t.Fatalf("set = %v, want %v", set, tt.want)
			}
		})
	}
}

func TestCloneNode(t *testing.T) {
	snap := scheduler.Snapshot{Nodes: []scheduler.Node{{Name: "pve1", Storages: []scheduler.Storage{
		{Name: "ceph", Shared: true}, {Name: "local-lvm"}}}}}
	source := func(cfg map[string]string) *proxmox.VM { return &proxmox.VM{Node: "pve1", VMID: 9000, Config: cfg} }
	tests := []struct {
		name     string
		src      *proxmox.VM
		pin      string
		wantNode string
		wantErr  string
	}{
		{"no clone", nil, "", "", ""},
		{"disks on shared storage: any node", source(map[string]string{"scsi0": "ceph:base-9000-disk-0,size=8G"}), "", "", ""},
		{"a local disk pins the source's node", source(map[string]string{"scsi0": "local-lvm:base-9000-disk-0,size=8G"}), "", "pve1", ""},
		{"a local CD-ROM does not", source(map[string]string{"scsi0": "ceph:base-9000-disk-0", "ide2": "local-lvm:iso/x.iso,media=cdrom"}), "", "", ""},
		{"pinned to the source's node", source(map[string]string{"scsi0": "local-lvm:base-9000-disk-0"}), "pve1", "pve1", ""},
		{"pinned elsewhere", source(map[string]string{"scsi0": "local-lvm:base-9000-disk-0"}), "pve2", "", `keeps scsi0 on storage "local-lvm", which is local to pve1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cloneNode(snap, tt.src, scheduler.Request{Name: "web-1", Node: tt.pin})
			var ie *scheduler.InputError
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatal(err)
			case tt.wantErr != "" && (!errors.As(err, &ie) || ie.Attribute != "node" || !strings.Contains(ie.Message, tt.wantErr)):
				t.Fatalf("error = %v, want an InputError on node containing %q", err, tt.wantErr)
			case tt.wantErr == "" && got.Node != tt.wantNode:
				t.Fatalf("node = %q, want %q", got.Node, tt.wantNode)
			}
		})
	}
}

func TestNetworkRoundTrip(t *testing.T) {
	tests := []struct {
		n    networkModel
		want string
	}{
		{networkModel{Model: types.StringValue("virtio"), Bridge: types.StringValue("vmbr0"), VLAN: types.Int64Null(), Firewall: types.BoolValue(false), MAC: types.StringUnknown()},
			"virtio,bridge=vmbr0"},
		{networkModel{Model: types.StringValue("e1000"), Bridge: types.StringValue("vmbr1"), VLAN: types.Int64Value(20), Firewall: types.BoolValue(true), MAC: types.StringValue("BC:24:11:00:00:01")},
			"e1000=BC:24:11:00:00:01,bridge=vmbr1,tag=20,firewall=1"},
	}
	for _, tt := range tests {
		if got := tt.n.render(); got != tt.want {
			t.Errorf("render = %q, want %q", got, tt.want)
		}
	}
	back := parseNetwork("net1", "e1000=BC:24:11:00:00:01,bridge=vmbr1,tag=20,firewall=1,queues=2")
	if back.Model.ValueString() != "e1000" || back.MAC.ValueString() != "BC:24:11:00:00:01" || back.Bridge.ValueString() != "vmbr1" ||
		back.VLAN.ValueInt64() != 20 || !back.Firewall.ValueBool() || back.Slot.ValueString() != "net1" {
		t.Errorf("parseNetwork = %+v", back)
	}
}

func TestDiskSizeGiB(t *testing.T) {
	for value, want := range map[string]int64{
		"local-lvm:vm-100-disk-0,size=32G":              32,
		"ceph:vm-100-disk-0,iothread=1,size=1T":         1024,
		"local-lvm:vm-100-disk-1,size=1536M":            2, // rounded up: never report less than there is
		"local:100/vm-100-disk-0.qcow2,size=8589934592": 8,
		"local-lvm:vm-100-disk-0":                       0,
	} {
		if got := diskSizeGiB(value); got != want {
			t.Errorf("diskSizeGiB(%q) = %d, want %d", value, got, want)
		}
	}
}

func TestSSHKeysEncodeLikePVE(t *testing.T) {
	keys := []string{"ssh-ed25519 AAAAC3Nz user@host", "ssh-rsa AAAAB3+/= other"}
	enc := encodeSSHKeys(keys)
	if want := "ssh-ed25519%20AAAAC3Nz%20user%40host%0Assh-rsa%20AAAAB3%2B%2F%3D%20other"; enc != want {
		t.Fatalf("encodeSSHKeys = %q, want %q (PVE rejects '+' for spaces)", enc, want)
	}
	if got := decodeSSHKeys(enc); !reflect.DeepEqual(got, keys) {
		t.Fatalf("decodeSSHKeys = %q", got)
	}
}

func TestNormalizeTagsLikePVE(t *testing.T) {
	if got := normalizeTags([]string{"Web", "prod", "web", " db "}); got != "db;prod;web" {
		t.Fatalf("normalizeTags = %q", got)
	}
	if got := splitTags("db;prod, web x"); !reflect.DeepEqual(got, []string{"db", "prod", "web", "x"}) {
		t.Fatalf("splitTags = %q", got)
	}
}

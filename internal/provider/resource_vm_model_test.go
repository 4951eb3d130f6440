package provider

import (
	"reflect"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
)

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

package provider

import (
	"reflect"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
)

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

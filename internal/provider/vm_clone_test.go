package provider

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

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
			got, err := vmresource.CloneNode(snap, tt.src, scheduler.Request{Name: "web-1", Node: tt.pin})
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

func TestCloneRequest(t *testing.T) {
	src := &proxmox.VM{Node: "pve1", VMID: 9000}
	p := scheduler.Placement{Node: "pve2", VMID: 101, Storage: "ceph"}
	clone := func(full types.Bool, storage types.String) *vmresource.NewGuest {
		m := existingVM()
		m.Clone = &vmresource.CloneModel{SourceVMID: types.Int64Value(9000), SourceNode: types.StringNull(), Full: full, Storage: storage}
		return &vmresource.NewGuest{M: m, Src: src}
	}
	tests := []struct {
		name        string
		g           *vmresource.NewGuest
		wantFull    bool
		wantStorage string
	}{
		{"full by default, on the scheduler's storage", clone(types.BoolNull(), types.StringNull()), true, "ceph"},
		{"full onto clone.storage", clone(types.BoolValue(true), types.StringValue("local-lvm")), true, "local-lvm"},
		{"linked stays on the template's storage", clone(types.BoolValue(false), types.StringNull()), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.g.CloneRequest(p)
			if got.Full != tt.wantFull || got.Storage != tt.wantStorage || got.SourceNode != "pve1" || got.SourceVMID != 9000 ||
				got.NewID != 101 || got.Target != "pve2" || got.Name != "web-1" {
				t.Fatalf("cloneRequest = %+v", got)
			}
		})
	}
}

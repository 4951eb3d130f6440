package provider

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/disk"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/firmware"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

func TestCheckReferences(t *testing.T) {
	view := scheduler.Snapshot{
		Pools: []string{"lab", "prod"},
		Nodes: []scheduler.Node{
			{Name: "pve1", Storages: []scheduler.Storage{{Name: "local-lvm", Content: []string{"images", "rootdir"}}, {Name: "backup", Content: []string{"backup", "iso"}}}},
			{Name: "pve2", Storages: []scheduler.Storage{{Name: "ceph", Content: []string{"images"}, Shared: true}}},
		},
	}
	s := types.StringValue
	diskOf := func(slot, storage string) disk.Model {
		d := disk.Model{Slot: s(slot), Storage: types.StringUnknown(), Size: types.Int64Value(8)}
		if storage != "" {
			d.Storage = s(storage)
		}
		return d
	}
	existing := vmresource.Model{ID: s("101"), Pool: s("gone"), Disks: []disk.Model{diskOf("scsi0", "vanished")},
		Clone: &vmresource.CloneModel{Storage: s("vanished")}, FirmwareModel: firmware.FirmwareModel{EFIDisk: &firmware.EFIDiskModel{Storage: s("vanished")}}}
	tests := []struct {
		name  string
		plan  vmresource.Model
		state *vmresource.Model   // nil: a new VM
		view  *scheduler.Snapshot // nil: the view above
		want  []string            // each error as "path: detail prefix"
	}{
		{name: "all known", plan: vmresource.Model{Pool: s("lab"), Disks: []disk.Model{diskOf("scsi0", "local-lvm"), diskOf("scsi1", "ceph"), diskOf("scsi2", "")},
			Clone: &vmresource.CloneModel{Storage: s("ceph")}, FirmwareModel: firmware.FirmwareModel{EFIDisk: &firmware.EFIDiskModel{Storage: s("local-lvm")}}}},
		{name: "unknown pool", plan: vmresource.Model{Pool: s("lap")},
			want: []string{`pool: pool = "lap": the cluster has no such pool (pools this token can see: lab, prod)`}},
		{name: "no pools in the cluster", plan: vmresource.Model{Pool: s("lab")}, view: &scheduler.Snapshot{Pools: []string{}},
			want: []string{`pool: pool = "lab": the cluster has no such pool (pools this token can see: none)`}},
		{name: "a view not read from the cluster tells no pools", plan: vmresource.Model{Pool: s("lab")}, view: &scheduler.Snapshot{}},
		{name: "unknown disk storage", plan: vmresource.Model{Disks: []disk.Model{diskOf("scsi0", "local-lvm"), diskOf("scsi1", "cepth")}},
			want: []string{`disk[1].storage: disk[1].storage = "cepth": the cluster has no such storage (storages: backup, ceph, local-lvm)`}},
		{name: "storage without images", plan: vmresource.Model{Disks: []disk.Model{diskOf("virtio0", "backup")}},
			want: []string{`disk[0].storage: disk[0].storage = "backup": the storage has no images content type (content: backup, iso)`}},
		{name: "clone and EFI disk storages", plan: vmresource.Model{Clone: &vmresource.CloneModel{Storage: s("nfs")}, FirmwareModel: firmware.FirmwareModel{EFIDisk: &firmware.EFIDiskModel{Storage: s("backup")}}},
			want: []string{`clone.storage: clone.storage = "nfs": the cluster has no such storage`, `efi_disk.storage: efi_disk.storage = "backup": the storage has no images content type`}},
		{name: "a view without storages tells none", plan: vmresource.Model{Disks: []disk.Model{diskOf("scsi0", "nfs")}}, view: &scheduler.Snapshot{Pools: []string{}, Nodes: []scheduler.Node{{Name: "pve1"}}}},
		// An existing VM: what it has is not checked again, even if gone from the cluster (a
		// destroy plans first); a new disk and a changed value are.
		{name: "existing VM, nothing new", state: &existing, plan: vmresource.Model{Pool: s("gone"), Disks: []disk.Model{diskOf("scsi0", "vanished")},
			Clone: &vmresource.CloneModel{Storage: s("vanished")}, FirmwareModel: firmware.FirmwareModel{EFIDisk: &firmware.EFIDiskModel{Storage: s("vanished")}}}},
		{name: "existing VM, new disk and changed pool", state: &existing, plan: vmresource.Model{Pool: s("prd"), Disks: []disk.Model{diskOf("scsi0", "vanished"), diskOf("scsi1", "nfs")}},
			want: []string{`pool: pool = "prd"`, `disk[1].storage: disk[1].storage = "nfs"`}},
		{name: "existing VM, disk moved to another slot's storage", state: &existing, plan: vmresource.Model{Disks: []disk.Model{diskOf("scsi0", "nfs")}},
			want: []string{`disk[0].storage: disk[0].storage = "nfs"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state, creating := vmresource.Model{}, tt.state == nil
			if !creating {
				state = *tt.state
			}
			snap := view
			if tt.view != nil {
				snap = *tt.view
			}
			var diags diag.Diagnostics
			vmresource.CheckReferences(&tt.plan, &state, creating, snap, &diags)
			var got []string
			for _, d := range diags {
				got = append(got, d.(diag.DiagnosticWithPath).Path().String()+": "+d.Detail())
			}
			if len(got) != len(tt.want) {
				t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("error %d:\n got %s\nwant %s...", i, got[i], w)
				}
			}
		})
	}
}

// A pool the shared view lacks is looked for in a view read now: at apply Terraform plans a VM
// again right after the resources it depends on (a pool another provider creates), and the
// shared view may have been read before them. A pool missing from both still fails the plan.
// A read now that fails leaves the shared view's error, with a warning saying why.
func TestCheckReferencesReadsAgain(t *testing.T) {
	ctx := context.Background()
	sim := pvesim.NewTestServer(t, labCluster())
	data := &config.Data{Client: simClient(t, sim), Nodes: config.NewNodePolicy(nil, nil), MaxAge: time.Hour}
	snap, err := data.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The view as read before the pool lab was made.
	before := snap
	before.Pools = slices.DeleteFunc(slices.Clone(snap.Pools), func(p string) bool { return p == "lab" })
	data.Cached = &before
	for _, tt := range []struct {
		pool  string
		fail  string // the read now fails with this PVE error
		want  string // error detail prefix, "" for none
		reads int
	}{
		{"lab", "", "", 1},
		{"lap", "", `pool = "lap": the cluster has no such pool (pools this token can see: lab)`, 1},
		{"lab", "Permission check failed (/, Sys.Audit)", `pool = "lab": the cluster has no such pool`, 1},
	} {
		if tt.fail != "" {
			sim.FailRequests(clusterReads, 10, 403, tt.fail)
		}
		reads := sim.Requests(clusterReads)
		var diags diag.Diagnostics
		vmresource.CheckReferencesNow(ctx, data, &vmresource.Model{Pool: types.StringValue(tt.pool)}, &vmresource.Model{}, true, before, &diags)
		got := ""
		if diags.HasError() {
			got = diags.Errors()[0].Detail()
		}
		if tt.want == "" && got != "" || !strings.HasPrefix(got, tt.want) {
			t.Errorf("pool %q: error %q, want %q", tt.pool, got, tt.want)
		}
		if w := diags.Warnings(); tt.fail != "" && (len(w) != 1 || !strings.Contains(w[0].Detail(), tt.fail)) || tt.fail == "" && len(w) > 0 {
			t.Errorf("pool %q: warnings %v, want one naming the failed read (%q) only when it failed", tt.pool, w, tt.fail)
		}
		if n := sim.Requests(clusterReads) - reads; n != tt.reads {
			t.Errorf("pool %q: %d cluster reads, want %d", tt.pool, n, tt.reads)
		}
	}
}

package provider

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

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
	disk := func(slot, storage string) diskModel {
		d := diskModel{Slot: s(slot), Storage: types.StringUnknown(), Size: types.Int64Value(8)}
		if storage != "" {
			d.Storage = s(storage)
		}
		return d
	}
	existing := vmModel{ID: s("101"), Pool: s("gone"), Disks: []diskModel{disk("scsi0", "vanished")},
		Clone: &cloneModel{Storage: s("vanished")}, firmwareModel: firmwareModel{EFIDisk: &efiDiskModel{Storage: s("vanished")}}}
	tests := []struct {
		name  string
		plan  vmModel
		state *vmModel            // nil: a new VM
		view  *scheduler.Snapshot // nil: the view above
		want  []string            // each error as "path: detail prefix"
	}{
		{name: "all known", plan: vmModel{Pool: s("lab"), Disks: []diskModel{disk("scsi0", "local-lvm"), disk("scsi1", "ceph"), disk("scsi2", "")},
			Clone: &cloneModel{Storage: s("ceph")}, firmwareModel: firmwareModel{EFIDisk: &efiDiskModel{Storage: s("local-lvm")}}}},
		{name: "unknown pool", plan: vmModel{Pool: s("lap")},
			want: []string{`pool: pool = "lap": the cluster has no such pool (pools this token can see: lab, prod)`}},
		{name: "no pools in the cluster", plan: vmModel{Pool: s("lab")}, view: &scheduler.Snapshot{Pools: []string{}},
			want: []string{`pool: pool = "lab": the cluster has no such pool (pools this token can see: none)`}},
		{name: "a view not read from the cluster tells no pools", plan: vmModel{Pool: s("lab")}, view: &scheduler.Snapshot{}},
		{name: "unknown disk storage", plan: vmModel{Disks: []diskModel{disk("scsi0", "local-lvm"), disk("scsi1", "cepth")}},
			want: []string{`disk[1].storage: disk[1].storage = "cepth": the cluster has no such storage (storages: backup, ceph, local-lvm)`}},
		{name: "storage without images", plan: vmModel{Disks: []diskModel{disk("virtio0", "backup")}},
			want: []string{`disk[0].storage: disk[0].storage = "backup": the storage has no images content type (content: backup, iso)`}},
		{name: "clone and EFI disk storages", plan: vmModel{Clone: &cloneModel{Storage: s("nfs")}, firmwareModel: firmwareModel{EFIDisk: &efiDiskModel{Storage: s("backup")}}},
			want: []string{`clone.storage: clone.storage = "nfs": the cluster has no such storage`, `efi_disk.storage: efi_disk.storage = "backup": the storage has no images content type`}},
		{name: "a view without storages tells none", plan: vmModel{Disks: []diskModel{disk("scsi0", "nfs")}}, view: &scheduler.Snapshot{Pools: []string{}, Nodes: []scheduler.Node{{Name: "pve1"}}}},
		// An existing VM: what it has is not checked again, even if gone from the cluster (a
		// destroy plans first); a new disk and a changed value are.
		{name: "existing VM, nothing new", state: &existing, plan: vmModel{Pool: s("gone"), Disks: []diskModel{disk("scsi0", "vanished")},
			Clone: &cloneModel{Storage: s("vanished")}, firmwareModel: firmwareModel{EFIDisk: &efiDiskModel{Storage: s("vanished")}}}},
		{name: "existing VM, new disk and changed pool", state: &existing, plan: vmModel{Pool: s("prd"), Disks: []diskModel{disk("scsi0", "vanished"), disk("scsi1", "nfs")}},
			want: []string{`pool: pool = "prd"`, `disk[1].storage: disk[1].storage = "nfs"`}},
		{name: "existing VM, disk moved to another slot's storage", state: &existing, plan: vmModel{Disks: []diskModel{disk("scsi0", "nfs")}},
			want: []string{`disk[0].storage: disk[0].storage = "nfs"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state, creating := vmModel{}, tt.state == nil
			if !creating {
				state = *tt.state
			}
			snap := view
			if tt.view != nil {
				snap = *tt.view
			}
			var diags diag.Diagnostics
			checkReferences(&tt.plan, &state, creating, snap, &diags)
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
	data := &providerData{client: simClient(t, sim), nodes: newNodePolicy(nil, nil), maxAge: time.Hour}
	snap, err := data.snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The view as read before the pool lab was made.
	before := snap
	before.Pools = slices.DeleteFunc(slices.Clone(snap.Pools), func(p string) bool { return p == "lab" })
	data.cached = &before
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
		checkReferencesNow(ctx, data, &vmModel{Pool: types.StringValue(tt.pool)}, &vmModel{}, true, before, &diags)
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

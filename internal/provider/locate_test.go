package provider

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// readVM finds a VM with as few cluster reads as the case allows. labCluster: VM 100 on pve1,
// container 200 on pve2, pve4 offline (with VM 104 added on it).
func TestReadVM(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// setup runs on the simulator before the shared view is read (when primed), change
		// after.
		setup, change func(s *pvesim.Server)
		primed        bool
		vmid          int
		node          string
		wantNode      string
		wantErr       string
		// wantReads counts cluster reads after priming.
		wantReads int
	}{
		{name: "on the node the state knows", vmid: 100, node: "pve1", wantNode: "pve1", wantReads: 0},
		{name: "moved before the view was read", setup: func(s *pvesim.Server) { must(t, s.SetGuestNode(100, "pve3")) },
			vmid: 100, node: "pve1", wantNode: "pve3", wantReads: 1},
		{name: "moved after the view was read", primed: true, change: func(s *pvesim.Server) { must(t, s.SetGuestNode(100, "pve3")) },
			vmid: 100, node: "pve1", wantNode: "pve3", wantReads: 1},
		{name: "known to exist, gone from a recent view", setup: func(s *pvesim.Server) { s.DeleteGuest(100) }, primed: true,
			vmid: 100, node: "pve1", wantErr: "VM 100 does not exist in the cluster", wantReads: 0},
		{name: "known to exist, gone since the view was read", primed: true, change: func(s *pvesim.Server) { s.DeleteGuest(100) },
			vmid: 100, node: "pve1", wantErr: "VM 100 does not exist in the cluster", wantReads: 1},
		{name: "node unknown, the shared view lists it", primed: true, vmid: 100, wantNode: "pve1", wantReads: 0},
		{name: "node unknown, younger than the shared view", primed: true, change: func(s *pvesim.Server) { s.TakeVMID(4242) },
			vmid: 4242, wantNode: "pve1", wantReads: 1},
		{name: "node unknown, absent now", primed: true, vmid: 4242, wantErr: "VM 4242 does not exist in the cluster", wantReads: 1},
		{name: "a container has the id", vmid: 200, node: "pve2", wantErr: "guest 200 is a lxc container", wantReads: 1},
		{name: "its node is offline", vmid: 104, node: "pve4", wantErr: "node is offline", wantReads: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster := labCluster()
			cluster.Guests = append(cluster.Guests, pvesim.GuestSpec{VMID: 104, Node: "pve4", Name: "backup", Status: "running", Cores: 1, MemoryMiB: 512})
			sim := pvesim.NewTestServer(t, cluster)
			client := simClient(t, sim)
			data := &config.Data{Client: client, Nodes: config.NewNodePolicy(nil, nil), MaxAge: time.Hour}
			if tt.setup != nil {
				tt.setup(sim)
			}
			if tt.primed {
				if _, err := data.Snapshot(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if tt.change != nil {
				tt.change(sim)
			}
			reads := sim.Requests(clusterReads)
			vm, err := data.ReadVM(ctx, tt.vmid, tt.node)
			switch {
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			case tt.wantErr == "" && err != nil:
				t.Errorf("err = %v", err)
			case tt.wantErr == "" && vm.Node != tt.wantNode:
				t.Errorf("found on %s, want %s", vm.Node, tt.wantNode)
			}
			if strings.Contains(tt.wantErr, "does not exist") && !errors.Is(err, proxmox.ErrNotFound) {
				t.Errorf("err = %v, want ErrNotFound", err)
			}
			if n := sim.Requests(clusterReads) - reads; n != tt.wantReads {
				t.Errorf("%d cluster reads, want %d", n, tt.wantReads)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

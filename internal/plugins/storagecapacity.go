package plugins

import (
	"fmt"
	"math"
	"slices"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// StorageCapacityName is the config key of the disk space filter.
const StorageCapacityName = "StorageCapacity"

// storageCapacity passes a node when the request's disks fit the storage the decision would
// choose there, after the disks of earlier placements and reservations (a shared storage's
// debits count on every node). A request of unknown disk size passes.
type storageCapacity struct{}

var (
	_ scheduler.FilterPlugin   = storageCapacity{}
	_ scheduler.CapacityPlugin = storageCapacity{}
)

func newStorageCapacity(map[string]string) (scheduler.Plugin, error) { return storageCapacity{}, nil }

func (storageCapacity) Name() string { return StorageCapacityName }

func (storageCapacity) Filter(_ *scheduler.CycleState, r *scheduler.Request, n *scheduler.NodeInfo) *scheduler.Rejection {
	if r.DiskBytes == 0 {
		return nil
	}
	name, free, reason := scheduler.ChooseStorage(n, r)
	// A node without a usable storage is the pipeline's storage check to report.
	if reason != "" || free >= r.DiskBytes {
		return nil
	}
	// Free space rounds down and the need up, so the figures always show the shortfall.
	freeGiB := math.Floor(float64(free)/scheduler.GiB*100) / 100
	needGiB := float64(r.DiskBytes) / scheduler.GiB
	return &scheduler.Rejection{
		Reason: fmt.Sprintf("StorageCapacity: %s has %s GiB free, needs %s", name, scheduler.FormatNumber(freeGiB), above(needGiB, freeGiB)),
		Group:  fmt.Sprintf("had too little free storage for %s GiB of disks", scheduler.FormatNumber(math.Ceil(needGiB*100)/100)),
	}
}

// Room is the free space of every storage the node can put disks on, for the joint search's
// bound: a node's VMs may split their disks between its storages, and a shared storage counts
// on every node (an overcount, which keeps the bound safe).
func (storageCapacity) Room(n *scheduler.NodeInfo) float64 {
	var free float64
	for _, s := range n.Node.Storages {
		if s.Active && slices.Contains(s.Content, "images") {
			free += float64(n.StorageFree(s))
		}
	}
	return free
}

func (storageCapacity) Demand(r *scheduler.Request) float64 { return float64(r.DiskBytes) }

func (storageCapacity) Amount(v float64) string {
	return scheduler.FormatGiB(uint64(v)) + " GiB of disk"
}

// Package scheduler decides where a QEMU VM runs in a Proxmox VE cluster and which VMID it
// gets: filter -> score -> select -> vmid -> storage. It is pure: no I/O, no Terraform, no
// HTTP. The proxmox package builds a Snapshot; the provider builds Requests and a Profile.
package scheduler

// Annotation keys understood by the reference plugins (same keys as CAPPX's qemu-scheduler).
const (
	AnnotationNodeRegex = "node.qemu-scheduler/regex"
	AnnotationVMIDRange = "vmid.qemu-scheduler/range"
	AnnotationVMIDRegex = "vmid.qemu-scheduler/regex"
)

// Valid VMIDs in Proxmox VE, inclusive.
const (
	MinVMID = 100
	MaxVMID = 999999999
)

// GuestType tells QEMU VMs from LXC containers. Both consume VMIDs and capacity.
type GuestType string

// Guest types as PVE names them in /cluster/resources.
const (
	GuestQEMU GuestType = "qemu"
	GuestLXC  GuestType = "lxc"
)

// Snapshot is the cluster as one scheduling decision sees it.
type Snapshot struct {
	Nodes  []Node
	Guests []Guest
	// NextIDBounds are the datacenter next-id bounds (datacenter.cfg "next-id"); nil when
	// unset, meaning [MinVMID, 1000000).
	NextIDBounds *IDBounds
	// Reservations are placements decided by this process whose guests may not exist yet.
	// They use their VMID and debit their node's capacity like a running guest.
	Reservations []Reservation
}

// IDBounds bound the default VMID: Lower inclusive, Upper exclusive.
type IDBounds struct {
	Lower int
	Upper int
}

// Node is one cluster member with its capacity and live load.
type Node struct {
	Name   string
	Online bool
	// MaxCPU is the number of logical CPUs.
	MaxCPU int
	// MaxMem is total memory in bytes.
	MaxMem uint64
	// CPU is the live CPU utilisation, a fraction 0..1.
	CPU float64
	// Mem is live used memory in bytes.
	Mem      uint64
	Storages []Storage
}

// Storage is one storage as enabled on one node.
type Storage struct {
	Name string
	// Content lists content types, e.g. "images", "rootdir", "iso".
	Content []string
	Active  bool
	Shared  bool
	// Total and Used are bytes.
	Total uint64
	Used  uint64
}

// Guest is a QEMU VM or LXC container, templates included.
type Guest struct {
	VMID int
	Node string
	Name string
	Type GuestType
	// Status is PVE's: running, stopped, paused or unknown.
	Status string
	// CPUs is the configured vCPU count (PVE's maxcpu); fractional for some containers.
	CPUs float64
	// MaxMem is the configured memory in bytes.
	MaxMem   uint64
	Tags     []string
	Pool     string
	Template bool
}

// Reservation is an in-flight placement: an id and capacity taken before the guest exists.
type Reservation struct {
	VMID      int
	Node      string
	VCPUs     int
	MemoryMiB int
}

// Request asks for one VM to be placed.
type Request struct {
	// Name is the VM name: the tie-break seed and the key of the sticky lookup.
	Name        string
	Annotations map[string]string
	Cores       int
	Sockets     int
	// MemoryMiB is the configured memory in MiB.
	MemoryMiB int
	// Node, VMID and Storage pin the decision when set (zero value = not pinned).
	Node    string
	VMID    int
	Storage string
}

// VCPUs is the number of vCPUs the request adds to a node.
func (r Request) VCPUs() int { return r.Cores * r.Sockets }

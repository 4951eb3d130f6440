package scheduler

import (
	"strings"
	"time"
)

// Annotation keys understood by the reference plugins (same keys as CAPPX's qemu-scheduler).
const (
	AnnotationNodeRegex = "node.qemu-scheduler/regex"
	AnnotationVMIDRange = "vmid.qemu-scheduler/range"
	AnnotationVMIDRegex = "vmid.qemu-scheduler/regex"
)

// MiB is one mebibyte in bytes: PVE configures memory in MiB and reports it in bytes.
const MiB = 1 << 20

// GiB is one gibibyte in bytes: disk sizes and storage space are shown in GiB.
const GiB = 1 << 30

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
	// ReadAt is when the cluster read began (zero: unknown): what PVE did before it shows.
	ReadAt time.Time
	// Pools are the resource pools the reader may see (Pool.Audit); nil when the view was
	// not read from the cluster's resource list. The scheduler does not use them: plans
	// check a VM's pool against them.
	Pools []string
	// HARules are the cluster's PVE 9 HA rules when the caller read them (nil otherwise, and
	// on PVE 8): moves and the rules the provider keeps must agree with them.
	HARules []HARule
	// HAMoves are the HA services the HA manager is moving (migrate, relocate), by VMID: the
	// node each is moving to. Read with HARules when there are resource-affinity rules.
	HAMoves map[int]string
	// HAFailbackOff are the HA resources whose failback is off (PVE 9's failback flag, on by
	// default), by VMID: the HA manager leaves them on a lower priority node of their
	// node-affinity rule. Read with HARules when a node-affinity rule has several priority
	// classes or is not strict.
	HAFailbackOff map[int]bool
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
	// Arch is the node's host-arch when PVE reports it.
	Arch string
	// HAState is the node row's hastate in /cluster/resources ("maintenance", "fence", "gone",
	// "online", ...); empty when HA never ran.
	HAState string
	// Labels and Taints are the node's policy facts (provider node blocks, Notes, built-ins);
	// the provider fills them, the scheduler only reads them.
	Labels map[string]string
	Taints []Taint
}

// Taint repels requests that do not tolerate it, as a Kubernetes node taint does.
type Taint struct {
	Key   string
	Value string
	// Effect is NoSchedule, PreferNoSchedule or NoExecute.
	Effect string
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
	// Lock is PVE's lock on the guest ("create", "clone", "migrate", ...), empty when none.
	Lock string
	// MigratingTo is the node a migration under way moves the guest to (its Lock is
	// "migrate"): PVE lists it on its source until the move's last step, yet it counts on its
	// target too, as PVE's HA manager counts a moving service on both (get_used_service_nodes).
	// Empty when no migration is known.
	MigratingTo string
	// Pending marks a guest that counts against its node's capacity although it does not run:
	// being created or cloned, or marked by this provider until its first start.
	Pending bool
	// Assumed marks a guest that PVE does not list yet: a placement made earlier in the same
	// decision or plan, or an in-flight reservation of this process.
	Assumed bool
	// Creating marks an assumed guest whose create this process runs (in flight), where the
	// others are only planned: reasons tell the two apart.
	Creating bool
	// DiskBytes is the configured size of the guest's disks when known (0 = unknown).
	DiskBytes uint64
	// Storage is where an assumed guest's new disks (DiskBytes) go; they debit its free space.
	Storage string
	// Recorded is the placement policy kept with the guest (its Notes' placement record), nil
	// when it has none: what the rebalance checks it against, and the required
	// anti-affinity a VM placed later must respect (kube's existing-pod symmetry).
	Recorded *Recorded
}

// Recorded is a guest's own placement policy: the scheduler profile it names and the policy
// fields of its request (annotations, node selector and affinity, tolerations, VM affinity and
// anti-affinity, topology spread).
type Recorded struct {
	Profile string
	Policy  Request
}

// Arriving reports whether the guest is the copy a node's view holds of a guest migrating to
// it (see MigratingTo), not a guest PVE lists there.
func (g *Guest) Arriving() bool { return g.MigratingTo != "" && g.MigratingTo == g.Node }

// CountsForCapacity reports whether the guest's configured size debits its node: running,
// pending or assumed guests do; stopped ones and templates do not.
func (g *Guest) CountsForCapacity() bool {
	return !g.Template && (g.Status == "running" || g.Pending || g.Assumed)
}

// Reservation is an in-flight placement: an id and capacity taken before the guest exists.
type Reservation struct {
	VMID      int
	Node      string
	Name      string
	VCPUs     int
	MemoryMiB int
	// Tags are the tags the guest will carry, so that group policies see it before it exists.
	Tags []string
	// Storage and DiskBytes are the disks the guest will put on a storage (Request.DiskBytes
	// on the placement's storage), debited until PVE counts them.
	Storage   string
	DiskBytes uint64
	// AntiAffinity are the VM's vm_anti_affinity terms, which later decisions respect before
	// the VM exists (the symmetry its placement record gives it once it does).
	AntiAffinity []VMGroupTerm
	// Creating marks the reservation of a create under way (the ledger's), where the others
	// hold what a plan placed tentatively or picked.
	Creating bool
}

// antiAffinityRecord is what a guest placed from a request with these anti-affinity terms
// records of them, nil for none.
func antiAffinityRecord(terms []VMGroupTerm) *Recorded {
	if len(terms) == 0 {
		return nil
	}
	return &Recorded{Policy: Request{VMAntiAffinity: terms}}
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
	// Tags are the tags the VM will carry: its membership in VM groups.
	Tags []string
	// NodeSelector pairs must all match the node's labels.
	NodeSelector map[string]string
	NodeAffinity []NodeAffinityTerm
	Tolerations  []Toleration
	// VMAffinity and VMAntiAffinity attract to or repel from groups of guests.
	VMAffinity     []VMGroupTerm
	VMAntiAffinity []VMGroupTerm
	TopologySpread []SpreadConstraint
	// DiskBytes is the total size of the disks the request puts on its storage (0 = unknown).
	DiskBytes uint64
	// CloneFrom is the node of a full clone's source: on any other node the clone's disks can
	// only go to a shared storage.
	CloneFrom string
	// PreferStorage is chosen on a node that can use it (active, holding images, with room for
	// the disks unless the guest stays where they are): where the disks of the existing guest
	// the request names are, so that keeping the guest in place, or moving it, does not answer
	// another storage and move its disks. A pinned Storage wins.
	PreferStorage string
}

// NodeExpression matches a node label: operator In, NotIn, Exists, DoesNotExist, Gt or Lt
// (kube's NodeSelectorRequirement).
type NodeExpression struct {
	Key      string
	Operator string
	Values   []string
}

// NodeAffinityTerm is one node_affinity block: a node matches it when it matches every
// expression of at least one of Terms (kube's nodeSelectorTerms ORed, each one's
// matchExpressions ANDed). Weight 0 makes it required (every required one must match);
// 1..100 makes it a preference of that weight.
type NodeAffinityTerm struct {
	Terms  [][]NodeExpression
	Weight int
}

// Expression is a node affinity of one term of one expression, the most common form.
func Expression(weight int, key, operator string, values ...string) NodeAffinityTerm {
	return NodeAffinityTerm{Terms: [][]NodeExpression{{{Key: key, Operator: operator, Values: values}}}, Weight: weight}
}

// Toleration lets a request onto a node with a matching taint. Operator is Equal (default)
// or Exists; an empty Effect matches every effect; an empty Key with Exists matches every
// taint.
type Toleration struct {
	Key      string
	Operator string
	Value    string
	Effect   string
}

// TagSelector picks a group of guests by their tags, as kube's label selector picks pods: every
// one of Tags (matchLabels), at least one of TagsAnyOf when set (a multi-value In) and none of
// TagsNoneOf (NotIn, DoesNotExist). PVE tags compare case-insensitively.
type TagSelector struct {
	Tags, TagsAnyOf, TagsNoneOf []string
}

// VMGroupTerm relates the request to the guests its selector picks within a topology domain:
// the node ("node") or the nodes sharing the value of a node label. Weight 0 makes the term
// required; 1..100 makes it a preference.
type VMGroupTerm struct {
	Tags, TagsAnyOf, TagsNoneOf []string
	TopologyKey                 string
	Weight                      int
}

// Group is the term's selector.
func (t VMGroupTerm) Group() TagSelector { return TagSelector{t.Tags, t.TagsAnyOf, t.TagsNoneOf} }

// Selects reports whether a guest carrying tags is in the selector's group; PVE tags are
// case-insensitive. It runs for every guest of every group of every request: no closures.
func (s TagSelector) Selects(tags []string) bool {
	// The loop of carries, inline: a call per tag of 10,000 guests weighs on every decision.
next:
	for _, w := range s.Tags {
		for _, t := range tags {
			if len(t) == len(w) && (t == w || strings.EqualFold(t, w)) {
				continue next
			}
		}
		return false
	}
	return (len(s.TagsAnyOf) == 0 || carriesAny(tags, s.TagsAnyOf)) && (len(s.TagsNoneOf) == 0 || !carriesAny(tags, s.TagsNoneOf))
}

func carriesAny(tags, want []string) bool {
	for _, w := range want {
		if carries(tags, w) {
			return true
		}
	}
	return false
}

func carries(tags []string, w string) bool {
	for _, t := range tags {
		// Most tags differ in length: skip the case fold for them.
		if len(t) == len(w) && (t == w || strings.EqualFold(t, w)) {
			return true
		}
	}
	return false
}

// SpreadConstraint keeps the group of guests its selector picks evenly spread over the domains
// of TopologyKey: WhenUnsatisfiable DoNotSchedule (a filter) or ScheduleAnyway (a score).
type SpreadConstraint struct {
	Tags, TagsAnyOf, TagsNoneOf []string
	TopologyKey                 string
	MaxSkew                     int
	WhenUnsatisfiable           string
	// MinDomains (DoNotSchedule only, 0 = unset) takes the minimum as 0 while fewer eligible
	// domains exist, as kube's minDomains.
	MinDomains int
	// NodeAffinityPolicy and NodeTaintsPolicy say whether members on nodes failing the
	// request's node selector and required node affinity, or carrying a NoSchedule taint it
	// does not tolerate, are counted: "Honor" (the default when empty) skips them, "Ignore"
	// counts them.
	NodeAffinityPolicy string
	NodeTaintsPolicy   string
}

// Group is the constraint's selector.
func (c SpreadConstraint) Group() TagSelector { return TagSelector{c.Tags, c.TagsAnyOf, c.TagsNoneOf} }

// VCPUs is the number of vCPUs the request adds to a node. ValidateRequest bounds cores and
// sockets, so the product cannot overflow.
func (r *Request) VCPUs() int { return r.Cores * r.Sockets }

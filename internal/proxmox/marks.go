package proxmox

import "slices"

// Tags this provider puts on the guests it creates, so that every process sees from
// /cluster/resources alone that a stopped guest is about to run and counts it against its
// node (scheduler.Guest.Pending). A guest carries ClaimTag from its create until its node has
// been checked again (provision's claim-and-retry), then PendingTag until its first start.
// A process that dies leaves a marked, stopped guest that keeps counting: the safe side.
const (
	ClaimTag   = "qemuscheduler-claim"
	PendingTag = "qemuscheduler-pending"
)

// Pending tells whether a guest with PVE lock lock and these tags counts for capacity
// although it may not run: being created or cloned (by anyone), or marked by this provider.
func Pending(lock string, tags []string) bool {
	return lock == "create" || lock == "clone" || slices.Contains(tags, ClaimTag) || slices.Contains(tags, PendingTag)
}

// RecordTag marks a guest whose Notes hold a placement record (internal/records), so that
// /cluster/resources alone tells which guests' configs are worth reading for their policies.
// Unlike the claim marks it stays as long as the record does.
const RecordTag = "qemuscheduler-record"

// IsMark tells the provider's own tags from the user's.
func IsMark(tag string) bool { return IsClaimMark(tag) || tag == RecordTag }

// IsClaimMark tells the marks of a create in progress (ClaimTag, PendingTag), which come and
// go, from the record mark, which stays.
func IsClaimMark(tag string) bool { return tag == ClaimTag || tag == PendingTag }

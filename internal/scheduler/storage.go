package scheduler

import "fmt"

// ChooseStorage picks the storage for r's disks on a node: the pinned r.Storage, which must
// exist there, be active and hold VM images, or else r.PreferStorage when it is such a storage
// and the disks fit there, or else the active one with images and the most free space after
// the decision's earlier placements (ties by name), so a storage the disks do not fit is never
// preferred over one they fit. A full clone from another node (r.CloneFrom)
// may only use a shared storage: PVE refuses to clone onto another node's local storage. It
// returns the storage and its free bytes, or a reason when the node cannot serve.
func ChooseStorage(n *NodeInfo, r *Request) (name string, freeBytes uint64, reason string) {
	node := n.Node
	sharedOnly := r.CloneFrom != "" && r.CloneFrom != node.Name
	if pinned := r.Storage; pinned != "" {
		for _, s := range node.Storages {
			if s.Name != pinned {
				continue
			}
			switch {
			case !s.Active:
				return "", 0, fmt.Sprintf("storage %q is not active on %s", pinned, node.Name)
			case !holdsImages(s):
				return "", 0, fmt.Sprintf("storage %q on %s does not hold VM images (content %v)", pinned, node.Name, s.Content)
			case sharedOnly && !s.Shared:
				return "", 0, fmt.Sprintf("storage %q is local to %s, and a clone from %s onto another node needs a shared storage", pinned, node.Name, r.CloneFrom)
			}
			return pinned, n.StorageFree(s), ""
		}
		return "", 0, fmt.Sprintf("storage %q does not exist on %s", pinned, node.Name)
	}
	for _, s := range node.Storages {
		if s.Name == r.PreferStorage && s.Active && holdsImages(s) && (!sharedOnly || s.Shared) && n.StorageFree(s) >= r.DiskBytes {
			return s.Name, n.StorageFree(s), ""
		}
	}
	best, bestFree := -1, uint64(0)
	for i, s := range node.Storages {
		if !s.Active || !holdsImages(s) || sharedOnly && !s.Shared {
			continue
		}
		f := n.StorageFree(s)
		if best < 0 || f > bestFree || (f == bestFree && s.Name < node.Storages[best].Name) {
			best, bestFree = i, f
		}
	}
	switch {
	case best < 0 && sharedOnly:
		return "", 0, fmt.Sprintf("no active shared storage on %s holds VM images, and a clone from %s onto another node needs one", node.Name, r.CloneFrom)
	case best < 0:
		return "", 0, fmt.Sprintf("no active storage on %s holds VM images", node.Name)
	}
	return node.Storages[best].Name, bestFree, ""
}

// storageKey names a storage for debits: a shared storage once for the cluster (node ""), a
// local one per node.
type storageKey struct{ node, storage string }

func keyOf(node string, s Storage) storageKey {
	if s.Shared {
		return storageKey{storage: s.Name}
	}
	return storageKey{node: node, storage: s.Name}
}

// keyOfGuest is the debit key of an assumed guest's disks: PVE's free space cannot include a
// disk that is not created yet.
func keyOfGuest(node *Node, g *Guest) storageKey {
	s := Storage{Name: g.Storage}
	for _, row := range node.Storages {
		if row.Name == g.Storage {
			s = row
		}
	}
	return keyOf(node.Name, s)
}

// StorageFree is a storage's free bytes on this node less the disks of the decision's assumed
// guests on it (on any node, for a shared storage).
func (n *NodeInfo) StorageFree(s Storage) uint64 {
	f, d := free(s), n.storageDebits[keyOf(n.Node.Name, s)]
	if d >= f {
		return 0
	}
	return f - d
}

func storageGroup(pinned string) string {
	if pinned != "" {
		return fmt.Sprintf("had no usable storage %q", pinned)
	}
	return "had no active storage for VM images"
}

func holdsImages(s Storage) bool {
	for _, c := range s.Content {
		if c == "images" {
			return true
		}
	}
	return false
}

func free(s Storage) uint64 {
	if s.Used >= s.Total {
		return 0
	}
	return s.Total - s.Used
}

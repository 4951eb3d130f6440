package scheduler

import "fmt"

// chooseStorage picks the storage for a VM's disks on node: the pinned one, which must exist
// there, be active and hold images, or else the active images storage with the most free space
// (ties by name). It returns a reason instead when the node cannot serve.
func chooseStorage(node *Node, pinned string) (string, string) {
	if node == nil {
		return "", "node is not part of the cluster"
	}
	if pinned != "" {
		for _, s := range node.Storages {
			if s.Name != pinned {
				continue
			}
			switch {
			case !s.Active:
				return "", fmt.Sprintf("storage %q is not active on %s", pinned, node.Name)
			case !holdsImages(s):
				return "", fmt.Sprintf("storage %q on %s does not hold VM images (content %v)", pinned, node.Name, s.Content)
			}
			return pinned, ""
		}
		return "", fmt.Sprintf("storage %q does not exist on %s", pinned, node.Name)
	}
	best := -1
	for i, s := range node.Storages {
		if !s.Active || !holdsImages(s) {
			continue
		}
		if best < 0 || free(s) > free(node.Storages[best]) || (free(s) == free(node.Storages[best]) && s.Name < node.Storages[best].Name) {
			best = i
		}
	}
	if best < 0 {
		return "", fmt.Sprintf("no active storage on %s holds VM images", node.Name)
	}
	return node.Storages[best].Name, ""
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

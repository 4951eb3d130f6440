package scheduler

// Storage is the storage ChooseStorage answers for r's disks on node for the existing guest
// vmid, its own usage left out: a placement data source's answer for a VM it does not place;
// "" when the node is not part of the cluster or cannot serve.
func (c *Checker) Storage(r Request, node string, vmid int) string {
	ni, ok := c.v.byName[node]
	if !ok {
		return ""
	}
	defer c.leaveOut(vmid)()
	name, _, _ := ChooseStorage(ni, existing(&r))
	return name
}

package proxmox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

type nextIDBounds struct{ lower, upper int }

// Snapshot reads the cluster for one scheduling decision. Its ReadAt is when the read began:
// everything PVE had done by then shows in it.
//
// Request budget: one GET /cluster/resources (unfiltered: it lists the pools too), plus GET
// /cluster/options on a client's first snapshot (the datacenter next-id bounds change rarely
// and a provider run is short); the two run concurrently. So a decision costs at most 2 requests, whatever the cluster size.
// Exception: PVE publishes a guest's sizes in /cluster/resources only with its next stats
// broadcast (about 10 s after a create or clone); until then the row says status "unknown"
// and nothing else. Such guests are sized from their node's guest list, one extra request
// per node and guest type that has any, rather than counted as empty. A running guest being
// migrated costs two requests more (migrationTargets): where it goes.
func (c *Client) Snapshot(ctx context.Context) (scheduler.Snapshot, error) {
	var bounds *nextIDBounds
	var boundsErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		bounds, boundsErr = c.nextIDBounds(ctx)
	}()
	readAt := time.Now()
	var b snapshotBuilder
	err := c.get(ctx, "read cluster resources", "/cluster/resources", nil, rawDecoder(func(body []byte) error {
		b = newSnapshotBuilder(len(body))
		return decodeResources(body, b.add)
	}))
	wg.Wait()
	if err != nil {
		return scheduler.Snapshot{}, err
	}
	if boundsErr != nil {
		return scheduler.Snapshot{}, boundsErr
	}
	snap, unsized := b.build(bounds)
	snap.ReadAt = readAt
	if err := c.sizeFromNodeLists(ctx, snap.Guests, unsized); err != nil {
		return scheduler.Snapshot{}, err
	}
	if err := c.migrationTargets(ctx, &snap); err != nil {
		return scheduler.Snapshot{}, err
	}
	return snap, nil
}

// LocateIn finds QEMU VM vmid's node in a snapshot, failing as LocateVM does.
func LocateIn(snap scheduler.Snapshot, vmid int) (string, error) {
	for _, g := range snap.Guests {
		switch {
		case g.VMID != vmid:
		case g.Type != scheduler.GuestQEMU:
			return "", &APIError{Op: "locate VM", Message: fmt.Sprintf("guest %d is a %s container, not a QEMU VM", vmid, g.Type)}
		default:
			return g.Node, nil
		}
	}
	return "", &APIError{Op: "locate VM", Message: fmt.Sprintf("VM %d does not exist in the cluster", vmid), kind: ErrNotFound}
}

// rowSizeHint is about the size of a guest's /cluster/resources row in bytes, to size the
// guest list once.
const rowSizeHint = 300

// snapshotBuilder collects /cluster/resources rows as they are decoded.
type snapshotBuilder struct {
	nodes    []scheduler.Node
	guests   []scheduler.Guest
	storages []nodeStorage
	pools    []string
	// tagLists shares one split list among the guests with the same tags text; nothing
	// modifies a guest's tags in place.
	tagLists map[string][]string
}

// newSnapshotBuilder sizes the guest list for an answer of size bytes.
func newSnapshotBuilder(size int) snapshotBuilder {
	return snapshotBuilder{guests: make([]scheduler.Guest, 0, size/rowSizeHint), pools: []string{}, tagLists: map[string][]string{}}
}

type nodeStorage struct {
	node    string
	storage scheduler.Storage
}

func (b *snapshotBuilder) add(r *resource) {
	switch r.Type {
	case "node":
		b.nodes = append(b.nodes, scheduler.Node{
			Name: r.Node, Online: r.Status == "online", MaxCPU: int(r.MaxCPU), MaxMem: r.MaxMem, CPU: r.CPU, Mem: r.Mem,
			HAState: r.HAState, Arch: r.Arch,
		})
	case "storage":
		b.storages = append(b.storages, nodeStorage{r.Node, scheduler.Storage{
			Name: r.Storage, Content: splitList(r.Content), Active: r.Status == "available", Shared: r.Shared,
			Total: r.MaxDisk, Used: r.Disk,
		}})
	case "pool":
		b.pools = append(b.pools, r.Pool)
	case "qemu", "lxc":
		tags := b.tags(r.Tags)
		b.guests = append(b.guests, scheduler.Guest{
			VMID: r.VMID, Node: r.Node, Name: r.Name, Type: scheduler.GuestType(r.Type), Status: r.Status,
			CPUs: r.MaxCPU, MaxMem: r.MaxMem, Tags: tags, Pool: r.Pool, Template: r.Template,
			Lock: r.Lock, Pending: Pending(r.Lock, tags),
		})
	}
}

func (b *snapshotBuilder) tags(text string) []string {
	if text == "" {
		return nil
	}
	list, ok := b.tagLists[text]
	if !ok {
		list = splitList(text)
		b.tagLists[text] = list
	}
	return list
}

// build returns the snapshot, and the indices of guests on online nodes that PVE has
// published no sizes for yet.
func (b *snapshotBuilder) build(bounds *nextIDBounds) (scheduler.Snapshot, []int) {
	snap := scheduler.Snapshot{Nodes: b.nodes, Guests: b.guests, Pools: b.pools}
	if bounds != nil {
		snap.NextIDBounds = &scheduler.IDBounds{Lower: bounds.lower, Upper: bounds.upper}
	}
	nodeIndex := make(map[string]int, len(snap.Nodes))
	for i, n := range snap.Nodes {
		nodeIndex[n.Name] = i
	}
	for _, s := range b.storages {
		if i, ok := nodeIndex[s.node]; ok {
			snap.Nodes[i].Storages = append(snap.Nodes[i].Storages, s.storage)
		}
	}
	var unsized []int
	for i, g := range snap.Guests {
		if n, ok := nodeIndex[g.Node]; ok && g.MaxMem == 0 && snap.Nodes[n].Online {
			unsized = append(unsized, i)
		}
	}
	return snap, unsized
}

func (c *Client) resources(ctx context.Context, typ string) ([]resource, error) {
	var rows []resource
	var params map[string]string
	if typ != "" {
		params = map[string]string{"type": typ}
	}
	err := c.get(ctx, "read cluster resources", "/cluster/resources", params, rawDecoder(func(body []byte) error {
		rows = rows[:0]
		return decodeResources(body, func(r *resource) { rows = append(rows, *r) })
	}))
	return rows, err
}

// listRow is a /nodes/{node}/qemu or /lxc row. Unlike /cluster/resources, PVE computes it
// from the guest configs on the spot, so a guest has its sizes from the moment it exists.
type listRow struct {
	VMID     flexInt `json:"vmid"`
	Name     string  `json:"name"`
	Status   string  `json:"status"`
	CPUs     float64 `json:"cpus"`
	MaxMem   uint64  `json:"maxmem"`
	Template int     `json:"template"`
	Tags     string  `json:"tags"`
	Lock     string  `json:"lock"`
}

// guest is the row as a guest of node; these lists do not name pools.
func (r listRow) guest(node string, typ scheduler.GuestType) scheduler.Guest {
	tags := splitList(r.Tags)
	return scheduler.Guest{VMID: int(r.VMID), Node: node, Name: r.Name, Type: typ, Status: r.Status, CPUs: r.CPUs,
		MaxMem: r.MaxMem, Tags: tags, Template: r.Template == 1, Lock: r.Lock, Pending: Pending(r.Lock, tags)}
}

func (c *Client) nodeList(ctx context.Context, node string, typ scheduler.GuestType) ([]listRow, error) {
	var rows []listRow
	err := c.get(ctx, fmt.Sprintf("list %s guests on %s", typ, node), "/nodes/"+node+"/"+string(typ), nil, &rows)
	return rows, err
}

// NodeGuests reads the guests on node as they are now, from its QEMU and container lists
// (two requests, sent together): what a look again at one node needs, at a small fraction
// of the cost of the whole cluster's view. The lists do not name pools: Pool stays empty.
func (c *Client) NodeGuests(ctx context.Context, node string) ([]scheduler.Guest, error) {
	kinds := [2]scheduler.GuestType{scheduler.GuestQEMU, scheduler.GuestLXC}
	var lists [2][]listRow
	var errs [2]error
	var wg sync.WaitGroup
	for i, typ := range kinds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lists[i], errs[i] = c.nodeList(ctx, node, typ)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	guests := make([]scheduler.Guest, 0, len(lists[0])+len(lists[1]))
	for i, rows := range lists {
		for _, r := range rows {
			guests = append(guests, r.guest(node, kinds[i]))
		}
	}
	return guests, nil
}

// flexInt accepts a number or a numeric string: older PVE sent ids in lists as strings.
type flexInt int

func (n *flexInt) UnmarshalJSON(b []byte) error {
	v, err := strconv.Atoi(strings.Trim(string(b), `"`))
	if err != nil {
		return fmt.Errorf("not an integer: %s", b)
	}
	*n = flexInt(v)
	return nil
}

// sizeFromNodeLists fills the sizes and status of guests (indices into guests) from their
// nodes' guest lists: one request per node and guest type, at most four at a time. A node
// that went offline meanwhile leaves its guests as they are.
func (c *Client) sizeFromNodeLists(ctx context.Context, guests []scheduler.Guest, unsized []int) error {
	type list struct {
		node string
		typ  scheduler.GuestType
	}
	byList := map[list][]int{}
	var order []list
	for _, i := range unsized {
		l := list{guests[i].Node, guests[i].Type}
		if byList[l] == nil {
			order = append(order, l)
		}
		byList[l] = append(byList[l], i)
	}
	errs := make([]error, len(order))
	parallel(len(order), 4, func(n int) {
		l := order[n]
		rows, err := c.nodeList(ctx, l.node, l.typ)
		if errors.Is(err, ErrNodeOffline) {
			return
		}
		if err != nil {
			errs[n] = err
			return
		}
		byID := make(map[int]listRow, len(rows))
		for _, r := range rows {
			byID[int(r.VMID)] = r
		}
		for _, i := range byList[l] {
			if r, ok := byID[guests[i].VMID]; ok {
				g := &guests[i]
				pool := g.Pool
				*g, g.Pool = r.guest(g.Node, g.Type), pool
			}
		}
	})
	return errors.Join(errs...)
}

// nextIDBounds reads the datacenter next-id bounds once per client. A token without
// Sys.Audit on / gets 403: then PVE's defaults apply.
func (c *Client) nextIDBounds(ctx context.Context) (*nextIDBounds, error) {
	c.optionsMu.Lock()
	defer c.optionsMu.Unlock()
	if c.optionsRead {
		return c.bounds, nil
	}
	var opts map[string]json.RawMessage
	err := c.get(ctx, "read datacenter options", "/cluster/options", nil, &opts)
	if errors.Is(err, ErrForbidden) {
		c.optionsRead = true
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if c.bounds, err = parseNextID(opts["next-id"]); err != nil {
		return nil, err
	}
	c.optionsRead = true
	return c.bounds, nil
}

// parseNextID reads datacenter.cfg next-id, which PVE may send as an object
// ({"lower":"5000","upper":"6000"}, values strings or numbers) or as a property string
// ("lower=5000,upper=6000"). Unset bounds take PVE's defaults, [100, 1000000).
func parseNextID(raw json.RawMessage) (*nextIDBounds, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	fields := map[string]string{}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		for _, kv := range strings.Split(s, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
	} else {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("datacenter option next-id: unexpected value %s", raw)
		}
		for k, v := range obj {
			fields[k] = stringify(v)
		}
	}
	b := &nextIDBounds{lower: scheduler.MinVMID, upper: 1000000}
	for key, dst := range map[string]*int{"lower": &b.lower, "upper": &b.upper} {
		if v, ok := fields[key]; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("datacenter option next-id: %s %q is not a number", key, v)
			}
			*dst = n
		}
	}
	if b.lower >= b.upper {
		return nil, fmt.Errorf("datacenter option next-id: lower %d is not below upper %d; fix next-id in Datacenter > Options", b.lower, b.upper)
	}
	return b, nil
}

// splitList splits PVE lists: tags separated by ";", "," or spaces, storage content by ",".
// Nothing to split gives nil.
func splitList(s string) []string {
	if items := strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' || unicode.IsSpace(r) }); len(items) > 0 {
		return items
	}
	return nil
}

package config

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/plugins"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/scheduling"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/records"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// guestRecords caches the marked guests' records for the process: a record changes when its
// VM's policy does, which this process writes itself (remember), or by hand, which the next
// process sees.
type guestRecords struct {
	client *proxmox.Client
	// warn queues a process-wide warning for the next reader of the cluster.
	warn func(summary, detail string)

	mu   sync.Mutex
	byID map[int]*scheduler.Recorded // nil: read, none usable
	// unread are the marked guests whose Notes could not be read (no VM.Audit, an error).
	unread map[int]bool
}

func NewGuestRecords(c *proxmox.Client, warn func(summary, detail string)) *guestRecords {
	return &guestRecords{client: c, warn: warn, byID: map[int]*scheduler.Recorded{}, unread: map[int]bool{}}
}

// Readable tells whether the guest's Notes were read (or written) by this process, so that
// a missing record is known missing.
func (gr *guestRecords) Readable(vmid int) bool {
	if gr == nil {
		return false
	}
	gr.mu.Lock()
	defer gr.mu.Unlock()
	_, read := gr.byID[vmid]
	return read && !gr.unread[vmid]
}

// apply gives every marked guest of snap its record, reading those not read yet.
func (gr *guestRecords) apply(ctx context.Context, snap *scheduler.Snapshot) {
	if gr == nil {
		return
	}
	gr.mu.Lock()
	defer gr.mu.Unlock()
	online := map[string]bool{}
	for _, n := range snap.Nodes {
		online[n.Name] = n.Online
	}
	var missing []*scheduler.Guest
	for i := range snap.Guests {
		g := &snap.Guests[i]
		// A guest of an offline node cannot be read (PVE answers 595): a later process will.
		if _, read := gr.byID[g.VMID]; !read && online[g.Node] && g.Type == scheduler.GuestQEMU && !g.Assumed && slices.Contains(g.Tags, proxmox.RecordTag) {
			missing = append(missing, g)
		}
	}
	sort.Slice(missing, func(i, j int) bool { return missing[i].VMID < missing[j].VMID })
	refs := make([]proxmox.GuestRef, len(missing))
	for i, g := range missing {
		refs[i] = proxmox.GuestRef{Node: g.Node, VMID: g.VMID}
	}
	notes, errs := gr.client.VMNotes(ctx, refs)
	var forbidden []string
	for i, g := range missing {
		who := GuestName(g)
		switch err := errs[i]; {
		case errors.Is(err, proxmox.ErrNodeOffline), errors.Is(err, proxmox.ErrNotFound):
			continue // gone or moved since the view was read: the next view has it
		case errors.Is(err, proxmox.ErrForbidden):
			forbidden = append(forbidden, who)
			gr.byID[g.VMID], gr.unread[g.VMID] = nil, true
			continue
		case err != nil:
			gr.warn("Placement record not read", fmt.Sprintf("VM %s carries the %s mark, but its Notes could not be read: %v. "+
				"Its recorded policy does not count in this run.", who, proxmox.RecordTag, err))
			gr.byID[g.VMID], gr.unread[g.VMID] = nil, true
			continue
		}
		gr.parse(g.VMID, who, notes[i])
	}
	if len(forbidden) > 0 {
		gr.warn("Placement records not read", fmt.Sprintf("The credentials may not read the configs of %d VM(s) carrying the %s mark "+
			"(PVE needs VM.Audit on them): %s. Their recorded policies do not count; grant VM.Audit to make them count.",
			len(forbidden), proxmox.RecordTag, strings.Join(forbidden, ", ")))
	}
	for i := range snap.Guests {
		snap.Guests[i].Recorded = gr.byID[snap.Guests[i].VMID]
	}
}

// parse takes a marked guest's record from its Notes, warning about a malformed or missing
// one; the caller holds mu.
func (gr *guestRecords) parse(vmid int, who, notes string) {
	_, rec, warnings := records.Parse(who, notes)
	for _, w := range warnings {
		gr.warn("Malformed placement record", w+". Fix the VM's Notes in the PVE UI (VM > Summary > Notes); the README shows the format.")
	}
	if rec == nil && len(warnings) == 0 {
		// The mark says an admin meant a record: a header in capitals or without its colon
		// must not drop the VM's rules silently.
		gr.warn("Placement record missing", fmt.Sprintf("VM %s carries the %s mark, but its Notes hold no placement record: the record "+
			"starts with the line %q, lowercase and with the colon. Its policy does not count in this run. Fix the VM's Notes in the PVE UI "+
			"(VM > Summary > Notes), or remove the mark.", who, proxmox.RecordTag, records.HeaderLine()))
	}
	gr.byID[vmid] = Recorded(rec)
	delete(gr.unread, vmid)
}

// Seen takes the record of a VM whose config this process read anyway (its refresh), so that
// no view reads it again; a VM without the mark is not looked at, as a view does not.
func (gr *guestRecords) Seen(vm *proxmox.VM) {
	if gr == nil || !slices.Contains(kit.TagFields(vm.Config["tags"]), proxmox.RecordTag) {
		return
	}
	gr.mu.Lock()
	defer gr.mu.Unlock()
	if _, read := gr.byID[vm.VMID]; read && !gr.unread[vm.VMID] {
		return
	}
	gr.parse(vm.VMID, GuestName(&scheduler.Guest{VMID: vm.VMID, Name: vm.Config["name"]}), vm.Config["description"])
}

// Remember records what this process wrote, so that it is never read back.
func (gr *guestRecords) Remember(vmid int, rec *records.Record) {
	if gr == nil {
		return
	}
	gr.mu.Lock()
	defer gr.mu.Unlock()
	gr.byID[vmid] = Recorded(rec)
	delete(gr.unread, vmid)
}

// Forget drops a deleted VM's record: its VMID may come back as another guest.
func (gr *guestRecords) Forget(vmid int) {
	if gr == nil {
		return
	}
	gr.mu.Lock()
	defer gr.mu.Unlock()
	delete(gr.byID, vmid)
	delete(gr.unread, vmid)
}

func Recorded(rec *records.Record) *scheduler.Recorded {
	if rec == nil {
		return nil
	}
	return &scheduler.Recorded{Profile: rec.Profile, Policy: rec.Policy()}
}

func GuestName(g *scheduler.Guest) string {
	if g.Name == "" {
		return fmt.Sprint(g.VMID)
	}
	return fmt.Sprintf("%d (%s)", g.VMID, g.Name)
}

// RecordProfiles resolves the profiles placement records name, for the rebalance: the
// provider's plugin config and the named profile, without any object's own layers.
func (p *Data) RecordProfiles() func(name string) (*scheduler.Profile, error) {
	return func(name string) (*scheduler.Profile, error) {
		// A record without a profile line is a VM of the default profile.
		name = scheduling.ProfileName(types.StringValue(name))
		if _, ok := p.Profiles[name]; !ok && name != scheduling.DefaultProfile {
			// Said of a record, not of an attribute the user can change here.
			return nil, fmt.Errorf("not defined in the provider (defined: %s); add it to the provider or correct the record", p.definedProfiles())
		}
		base, err := p.pluginBase(types.StringValue(name))
		if err != nil {
			return nil, err
		}
		return plugins.NewProfile(base)
	}
}

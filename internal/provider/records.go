package provider

// Placement records: qemuscheduler_vm keeps each VM's placement policy with the VM, as a
// section of its Notes (internal/records) and a mark among its tags; every view of the
// cluster gives the marked guests their recorded policy, read once per provider process.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/plugins"
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

func newGuestRecords(c *proxmox.Client, warn func(summary, detail string)) *guestRecords {
	return &guestRecords{client: c, warn: warn, byID: map[int]*scheduler.Recorded{}, unread: map[int]bool{}}
}

// readable tells whether the guest's Notes were read (or written) by this process, so that
// a missing record is known missing.
func (gr *guestRecords) readable(vmid int) bool {
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
		who := guestName(g)
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
	gr.byID[vmid] = recorded(rec)
	delete(gr.unread, vmid)
}

// seen takes the record of a VM whose config this process read anyway (its refresh), so that
// no view reads it again; a VM without the mark is not looked at, as a view does not.
func (gr *guestRecords) seen(vm *proxmox.VM) {
	if gr == nil || !slices.Contains(tagFields(vm.Config["tags"]), proxmox.RecordTag) {
		return
	}
	gr.mu.Lock()
	defer gr.mu.Unlock()
	if _, read := gr.byID[vm.VMID]; read && !gr.unread[vm.VMID] {
		return
	}
	gr.parse(vm.VMID, guestName(&scheduler.Guest{VMID: vm.VMID, Name: vm.Config["name"]}), vm.Config["description"])
}

// remember records what this process wrote, so that it is never read back.
func (gr *guestRecords) remember(vmid int, rec *records.Record) {
	if gr == nil {
		return
	}
	gr.mu.Lock()
	defer gr.mu.Unlock()
	gr.byID[vmid] = recorded(rec)
	delete(gr.unread, vmid)
}

// forget drops a deleted VM's record: its VMID may come back as another guest.
func (gr *guestRecords) forget(vmid int) {
	if gr == nil {
		return
	}
	gr.mu.Lock()
	defer gr.mu.Unlock()
	delete(gr.byID, vmid)
	delete(gr.unread, vmid)
}

func recorded(rec *records.Record) *scheduler.Recorded {
	if rec == nil {
		return nil
	}
	return &scheduler.Recorded{Profile: rec.Profile, Policy: rec.Policy()}
}

func guestName(g *scheduler.Guest) string {
	if g.Name == "" {
		return fmt.Sprint(g.VMID)
	}
	return fmt.Sprintf("%d (%s)", g.VMID, g.Name)
}

// record is the VM's placement record, nil when it has no policy to keep.
// The policy is the effective one, the profile's defaults included, so that a reader without
// this provider's profiles still sees it.
func (r *vmResource) record(ctx context.Context, m *vmModel, diags *diag.Diagnostics) *records.Record {
	return m.recordWith(ctx, r.data, diags)
}

func (m *vmModel) recordWith(ctx context.Context, data *providerData, diags *diag.Diagnostics) *records.Record {
	req, _ := m.schedulingModel.request(ctx, diags)
	data.withDefaults(m.Profile, &req)
	req.Tags, _ = knownStrings(ctx, m.Tags, diags)
	rec := records.FromRequest(profileName(m.Profile), req)
	if rec.Empty() {
		return nil
	}
	if len(req.NodeAffinity) == len(m.NodeAffinity) { // else a block was left out: unknown or invalid
		for _, a := range m.NodeAffinity {
			rec.NodeAffinityForms = append(rec.NodeAffinityForms, a.form())
		}
	}
	return &rec
}

// withRecord puts the record into a VM's PVE config: below the user's description in the
// Notes, and the record mark among the tags when the config sets tags (a create adds it to the
// tags it starts with, withRecordMark).
func withRecord(cfg map[string]string, rec *records.Record) {
	if rec == nil {
		return
	}
	cfg["description"] = records.Join(cfg["description"], rec)
	if tags, ok := cfg["tags"]; ok {
		cfg["tags"] = withRecordMark(tags)
	}
}

// checkPlannedNotes checks the Notes a create or update of m writes, description (null: none)
// and the placement record, against PVE's limit (checkNotesSize). data nil leaves the
// profile's defaults out of the record (ValidateConfig does not know them); an unknown
// description is not checked.
func checkPlannedNotes(ctx context.Context, m *vmModel, description types.String, data *providerData, diags *diag.Diagnostics) {
	if description.IsUnknown() {
		return
	}
	cfg := map[string]string{"description": description.ValueString()}
	withRecord(cfg, m.recordWith(ctx, data, diags))
	checkNotesSize(cfg, diags)
}

// checkNotesSize refuses Notes PVE would refuse: the description and the record share PVE's
// limit.
func checkNotesSize(cfg map[string]string, diags *diag.Diagnostics) {
	notes := cfg["description"]
	if len(notes) <= maxDescription {
		return
	}
	user, section := records.Split(notes)
	diags.AddAttributeError(path.Root("description"), "Description too long for the placement record",
		fmt.Sprintf("PVE keeps at most %d bytes of VM Notes; the description (%d bytes) and the VM's placement record (%d bytes) "+
			"need %d. Shorten the description by %d bytes.", maxDescription, len(user), len(section), len(notes), len(notes)-maxDescription))
}

// syncRecord reconciles an update's Notes and tags with PVE's (have). A VM whose policy gives
// it a record gets it written when PVE's differs (a VM created before records, a record edited
// by hand), and its mark when PVE's tags lack it. A VM whose configuration never had a policy keeps a record written by hand, with
// its mark, whatever else the update changes.
func syncRecord(old, want, have map[string]string) {
	d, ok := want["description"]
	if !ok {
		return
	}
	_, haveSection := records.Split(have["description"])
	_, wantSection := records.Split(d)
	_, oldSection := records.Split(old["description"])
	switch {
	case wantSection == "" && oldSection == "" && haveSection != "":
		want["description"] = records.JoinSection(d, haveSection)
		if t, ok := want["tags"]; ok && hasTag(have["tags"], proxmox.RecordTag) {
			want["tags"] = withRecordMark(t)
		}
	case wantSection == "" || wantSection == haveSection && hasTag(have["tags"], proxmox.RecordTag):
		return
	}
	// Compare with what PVE has, so that exactly the differences are written.
	old["description"] = have["description"]
	if _, ok := want["tags"]; ok {
		old["tags"] = have["tags"]
	}
}

// planRecordSync plans an update of an existing VM whose placement record in PVE is not the
// one its policy gives: a profile's defaults changed (the record holds them), or an admin
// removed or edited the record. Its configuration did not change the policy, so the plan makes
// placement_summary unknown (the update keeps it) for Terraform to apply, and says why; the
// update writes the record (syncRecord): also over one of another version, or a marked VM's
// Notes without one. The view has the guest's record already (one read per marked guest and
// process). A marked guest whose Notes could not be read was warned about and is left alone,
// as is a guest of an offline node.
func planRecordSync(ctx context.Context, resp *resource.ModifyPlanResponse, m, state *vmModel, data *providerData, snap scheduler.Snapshot, vmid int) {
	want := m.recordWith(ctx, data, &resp.Diagnostics)
	if want == nil {
		return
	}
	if had := state.recordWith(ctx, data, &resp.Diagnostics); had == nil || !sameRecord(recorded(want), recorded(had)) {
		return // the configuration changed the policy: that is the plan's diff, and the update writes the record
	}
	i := slices.IndexFunc(snap.Guests, func(g scheduler.Guest) bool { return g.VMID == vmid && !g.Assumed })
	if i < 0 || !slices.ContainsFunc(snap.Nodes, func(n scheduler.Node) bool { return n.Name == snap.Guests[i].Node && n.Online }) {
		return
	}
	g := &snap.Guests[i]
	marked := slices.Contains(g.Tags, proxmox.RecordTag)
	switch {
	case marked && g.Recorded == nil && !data.records.readable(vmid):
		return // its Notes could not be read (warned): whether the record differs is unknown
	case marked && g.Recorded != nil && sameRecord(recorded(want), g.Recorded):
		return
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("placement_summary"), types.StringUnknown())...)
	why := "the placement record in its Notes differs from the policy of its configuration with its profile's defaults " +
		"(a profile's defaults changed, or the record was edited by hand), so this apply writes it"
	if !marked {
		why = fmt.Sprintf("its tags lack the %s mark that makes its placement record count (a VM created before records, or the record or "+
			"its mark removed by hand), so this apply writes the record and the mark", proxmox.RecordTag)
	}
	resp.Diagnostics.AddWarning("Placement record out of date", fmt.Sprintf("VM %s: %s:\n%s", guestName(g), why, records.Format(*want)))
}

// sameRecord tells two records of the same policy apart from different ones: written alike,
// the informational tags line and the node affinity forms left out.
func sameRecord(a, b *scheduler.Recorded) bool {
	return records.Format(records.FromRequest(a.Profile, a.Policy)) == records.Format(records.FromRequest(b.Profile, b.Policy))
}

// withRecordMark adds the record mark to a PVE tags value.
func withRecordMark(tags string) string {
	return normalizeTags(append(tagFields(tags), proxmox.RecordTag))
}

// userNotes is the user's part of a VM's Notes: the record section is the provider's.
func userNotes(notes string) string {
	user, _ := records.Split(notes)
	return user
}

// importRecord gives an imported VM the scheduling attributes of its placement record, so that
// a configuration written from the record plans no change. Attributes with a schema default
// (profile, annotations, node_selector, topology_key, max_skew, when_unsatisfiable, a spread's
// node policies, a toleration's operator) get it
// where the record has none, as a configuration planned them whether it left them out or
// wrote them out; the others stay null, as a configuration leaves them. What the profile's
// defaults give is left out (withoutDefaults).
func importRecord(ctx context.Context, m *vmModel, vm *proxmox.VM, data *providerData, diags *diag.Diagnostics) {
	m.Profile = types.StringValue(defaultProfile)
	m.Annotations, m.NodeSelector = stringMap(ctx, nil, diags), stringMap(ctx, nil, diags)
	_, rec, warnings := records.Parse(fmt.Sprint(vm.VMID), vm.Config["description"])
	for _, w := range warnings {
		diags.AddWarning("Malformed placement record", w+".")
	}
	if rec == nil {
		return
	}
	data.withoutDefaults(rec)
	m.Profile = types.StringValue(profileName(types.StringValue(rec.Profile)))
	m.Annotations = stringMap(ctx, rec.Annotations, diags)
	m.NodeSelector = stringMap(ctx, rec.NodeSelector, diags)
	expression := func(e scheduler.NodeExpression) nodeExpressionModel {
		return nodeExpressionModel{Key: types.StringValue(e.Key), Operator: types.StringValue(e.Operator), Values: recordList(ctx, e.Values, diags)}
	}
	for i, a := range rec.NodeAffinity {
		// The blocks as the configuration wrote them (records.NodeAffinityForm).
		b := nodeAffinityModel{Key: types.StringNull(), Operator: types.StringNull(), Values: types.ListNull(types.StringType), Weight: optionalInt(a.Weight, 0)}
		switch rec.Form(i) {
		case records.FormOwn:
			own := expression(a.Terms[0][0])
			b.Key, b.Operator, b.Values = own.Key, own.Operator, own.Values
			for _, e := range a.Terms[0][1:] {
				b.MatchExpressions = append(b.MatchExpressions, expression(e))
			}
		case records.FormMatchExpressions:
			for _, e := range a.Terms[0] {
				b.MatchExpressions = append(b.MatchExpressions, expression(e))
			}
		default:
			for _, term := range a.Terms {
				var t nodeSelectorTermModel
				for _, e := range term {
					t.MatchExpressions = append(t.MatchExpressions, expression(e))
				}
				b.NodeSelectorTerms = append(b.NodeSelectorTerms, t)
			}
		}
		m.NodeAffinity = append(m.NodeAffinity, b)
	}
	for _, t := range rec.Tolerations {
		m.Tolerations = append(m.Tolerations, tolerationModel{Key: optionalString(t.Key, ""), Operator: types.StringValue(t.Operator),
			Value: optionalString(t.Value, ""), Effect: optionalString(t.Effect, "")})
	}
	groups := func(terms []scheduler.VMGroupTerm) []vmGroupTermModel {
		var out []vmGroupTermModel
		for _, t := range terms {
			out = append(out, vmGroupTermModel{groupSelectorModel: groupModel(ctx, t.Group(), diags),
				TopologyKey: types.StringValue(t.TopologyKey), Weight: optionalInt(t.Weight, 0)})
		}
		return out
	}
	m.VMAffinity, m.VMAntiAffinity = groups(rec.VMAffinity), groups(rec.VMAntiAffinity)
	for _, c := range rec.TopologySpread {
		m.TopologySpread = append(m.TopologySpread, topologySpreadModel{groupSelectorModel: groupModel(ctx, c.Group(), diags),
			TopologyKey: types.StringValue(c.TopologyKey), MaxSkew: types.Int64Value(int64(c.MaxSkew)),
			WhenUnsatisfiable: types.StringValue(c.WhenUnsatisfiable), MinDomains: optionalInt(c.MinDomains, 0),
			NodeAffinityPolicy: types.StringValue(c.NodeAffinityPolicy), NodeTaintsPolicy: types.StringValue(c.NodeTaintsPolicy)})
	}
}

// groupModel is a record's group selector as the block's attributes.
func groupModel(ctx context.Context, g scheduler.TagSelector, diags *diag.Diagnostics) groupSelectorModel {
	return groupSelectorModel{Tags: recordList(ctx, g.Tags, diags), TagsAnyOf: recordList(ctx, g.TagsAnyOf, diags), TagsNoneOf: recordList(ctx, g.TagsNoneOf, diags)}
}

// stringMap is a map attribute with a schema default of {}: empty, never null.
func stringMap(ctx context.Context, v map[string]string, diags *diag.Diagnostics) types.Map {
	if v == nil {
		v = map[string]string{}
	}
	out, d := types.MapValueFrom(ctx, types.StringType, v)
	diags.Append(d...)
	return out
}

func recordList(ctx context.Context, v []string, diags *diag.Diagnostics) types.List {
	if len(v) == 0 {
		return types.ListNull(types.StringType)
	}
	out, d := types.ListValueFrom(ctx, types.StringType, v)
	diags.Append(d...)
	return out
}

// optionalString and optionalInt are null for the value a configuration leaves out.
func optionalString(v, def string) types.String {
	if v == def {
		return types.StringNull()
	}
	return types.StringValue(v)
}

func optionalInt(v, def int) types.Int64 {
	if v == def {
		return types.Int64Null()
	}
	return types.Int64Value(int64(v))
}

// recordProfiles resolves the profiles placement records name, for the rebalance: the
// provider's plugin config and the named profile, without any object's own layers.
func (p *providerData) recordProfiles() func(name string) (*scheduler.Profile, error) {
	return func(name string) (*scheduler.Profile, error) {
		// A record without a profile line is a VM of the default profile.
		name = profileName(types.StringValue(name))
		if _, ok := p.profiles[name]; !ok && name != defaultProfile {
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

package vmresource

// Placement records: qemuscheduler_vm keeps each VM's placement policy with the VM, as a
// section of its Notes (internal/records) and a mark among its tags; every view of the
// cluster gives the marked guests their recorded policy, read once per provider process.

import (
	"context"
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/scheduling"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/records"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// record is the VM's placement record, nil when it has no policy to keep.
// The policy is the effective one, the profile's defaults included, so that a reader without
// this provider's profiles still sees it.
func (r *Resource) record(ctx context.Context, m *Model, diags *diag.Diagnostics) *records.Record {
	return m.recordWith(ctx, r.Data, diags)
}

func (m *Model) recordWith(ctx context.Context, data *config.Data, diags *diag.Diagnostics) *records.Record {
	req, _ := m.SchedulingModel.Request(ctx, diags)
	data.WithDefaults(m.Profile, &req)
	req.Tags, _ = scheduling.KnownStrings(ctx, m.Tags, diags)
	rec := records.FromRequest(scheduling.ProfileName(m.Profile), req)
	if rec.Empty() {
		return nil
	}
	if len(req.NodeAffinity) == len(m.NodeAffinity) { // else a block was left out: unknown or invalid
		for _, a := range m.NodeAffinity {
			rec.NodeAffinityForms = append(rec.NodeAffinityForms, a.Form())
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
func checkPlannedNotes(ctx context.Context, m *Model, description types.String, data *config.Data, diags *diag.Diagnostics) {
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
	if len(notes) <= kit.MaxDescription {
		return
	}
	user, section := records.Split(notes)
	diags.AddAttributeError(path.Root("description"), "Description too long for the placement record",
		fmt.Sprintf("PVE keeps at most %d bytes of VM Notes; the description (%d bytes) and the VM's placement record (%d bytes) "+
			"need %d. Shorten the description by %d bytes.", kit.MaxDescription, len(user), len(section), len(notes), len(notes)-kit.MaxDescription))
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
func planRecordSync(ctx context.Context, resp *resource.ModifyPlanResponse, m, state *Model, data *config.Data, snap scheduler.Snapshot, vmid int) {
	want := m.recordWith(ctx, data, &resp.Diagnostics)
	if want == nil {
		return
	}
	if had := state.recordWith(ctx, data, &resp.Diagnostics); had == nil || !sameRecord(config.Recorded(want), config.Recorded(had)) {
		return // the configuration changed the policy: that is the plan's diff, and the update writes the record
	}
	i := slices.IndexFunc(snap.Guests, func(g scheduler.Guest) bool { return g.VMID == vmid && !g.Assumed })
	if i < 0 || !slices.ContainsFunc(snap.Nodes, func(n scheduler.Node) bool { return n.Name == snap.Guests[i].Node && n.Online }) {
		return
	}
	g := &snap.Guests[i]
	marked := slices.Contains(g.Tags, proxmox.RecordTag)
	switch {
	case marked && g.Recorded == nil && !data.Records.Readable(vmid):
		return // its Notes could not be read (warned): whether the record differs is unknown
	case marked && g.Recorded != nil && sameRecord(config.Recorded(want), g.Recorded):
		return
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("placement_summary"), types.StringUnknown())...)
	why := "the placement record in its Notes differs from the policy of its configuration with its profile's defaults " +
		"(a profile's defaults changed, or the record was edited by hand), so this apply writes it"
	if !marked {
		why = fmt.Sprintf("its tags lack the %s mark that makes its placement record count (a VM created before records, or the record or "+
			"its mark removed by hand), so this apply writes the record and the mark", proxmox.RecordTag)
	}
	resp.Diagnostics.AddWarning("Placement record out of date", fmt.Sprintf("VM %s: %s:\n%s", config.GuestName(g), why, records.Format(*want)))
}

// sameRecord tells two records of the same policy apart from different ones: written alike,
// the informational tags line and the node affinity forms left out.
func sameRecord(a, b *scheduler.Recorded) bool {
	return records.Format(records.FromRequest(a.Profile, a.Policy)) == records.Format(records.FromRequest(b.Profile, b.Policy))
}

// withRecordMark adds the record mark to a PVE tags value.
func withRecordMark(tags string) string {
	return NormalizeTags(append(kit.TagFields(tags), proxmox.RecordTag))
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
func importRecord(ctx context.Context, m *Model, vm *proxmox.VM, data *config.Data, diags *diag.Diagnostics) {
	m.Profile = types.StringValue(scheduling.DefaultProfile)
	m.Annotations, m.NodeSelector = stringMap(ctx, nil, diags), stringMap(ctx, nil, diags)
	_, rec, warnings := records.Parse(fmt.Sprint(vm.VMID), vm.Config["description"])
	for _, w := range warnings {
		diags.AddWarning("Malformed placement record", w+".")
	}
	if rec == nil {
		return
	}
	data.WithoutDefaults(rec)
	m.Profile = types.StringValue(scheduling.ProfileName(types.StringValue(rec.Profile)))
	m.Annotations = stringMap(ctx, rec.Annotations, diags)
	m.NodeSelector = stringMap(ctx, rec.NodeSelector, diags)
	expression := func(e scheduler.NodeExpression) scheduling.NodeExpressionModel {
		return scheduling.NodeExpressionModel{Key: types.StringValue(e.Key), Operator: types.StringValue(e.Operator), Values: recordList(ctx, e.Values, diags)}
	}
	for i, a := range rec.NodeAffinity {
		// The blocks as the configuration wrote them (records.NodeAffinityForm).
		b := scheduling.NodeAffinityModel{Key: types.StringNull(), Operator: types.StringNull(), Values: types.ListNull(types.StringType), Weight: optionalInt(a.Weight, 0)}
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
				var t scheduling.NodeSelectorTermModel
				for _, e := range term {
					t.MatchExpressions = append(t.MatchExpressions, expression(e))
				}
				b.NodeSelectorTerms = append(b.NodeSelectorTerms, t)
			}
		}
		m.NodeAffinity = append(m.NodeAffinity, b)
	}
	for _, t := range rec.Tolerations {
		m.Tolerations = append(m.Tolerations, scheduling.TolerationModel{Key: optionalString(t.Key, ""), Operator: types.StringValue(t.Operator),
			Value: optionalString(t.Value, ""), Effect: optionalString(t.Effect, "")})
	}
	groups := func(terms []scheduler.VMGroupTerm) []scheduling.VMGroupTermModel {
		var out []scheduling.VMGroupTermModel
		for _, t := range terms {
			out = append(out, scheduling.VMGroupTermModel{GroupSelectorModel: groupModel(ctx, t.Group(), diags),
				TopologyKey: types.StringValue(t.TopologyKey), Weight: optionalInt(t.Weight, 0)})
		}
		return out
	}
	m.VMAffinity, m.VMAntiAffinity = groups(rec.VMAffinity), groups(rec.VMAntiAffinity)
	for _, c := range rec.TopologySpread {
		m.TopologySpread = append(m.TopologySpread, scheduling.TopologySpreadModel{GroupSelectorModel: groupModel(ctx, c.Group(), diags),
			TopologyKey: types.StringValue(c.TopologyKey), MaxSkew: types.Int64Value(int64(c.MaxSkew)),
			WhenUnsatisfiable: types.StringValue(c.WhenUnsatisfiable), MinDomains: optionalInt(c.MinDomains, 0),
			NodeAffinityPolicy: types.StringValue(c.NodeAffinityPolicy), NodeTaintsPolicy: types.StringValue(c.NodeTaintsPolicy)})
	}
}

// groupModel is a record's group selector as the block's attributes.
func groupModel(ctx context.Context, g scheduler.TagSelector, diags *diag.Diagnostics) scheduling.GroupSelectorModel {
	return scheduling.GroupSelectorModel{Tags: recordList(ctx, g.Tags, diags), TagsAnyOf: recordList(ctx, g.TagsAnyOf, diags), TagsNoneOf: recordList(ctx, g.TagsNoneOf, diags)}
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

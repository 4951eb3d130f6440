// Package records reads and writes a VM's placement record: the placement policy a VM was
// created with, kept with the VM as a section of its Notes (PVE's description) below the
// user's own text, in the style of the node Notes lines:
//
//	qemu-scheduler/record: v1
//	qemu-scheduler/profile: ha
//	qemu-scheduler/tags: k8s, control-plane
//	qemu-scheduler/annotation: vmid.qemu-scheduler/range=1000-1099
//	qemu-scheduler/node-selector: zone=a, disk=nvme
//	qemu-scheduler/node-affinity: key=rack operator=In values=r1,r2 weight=50
//	qemu-scheduler/node-affinity: key=zone operator=In values=a & key=gpu operator=Exists | key=zone operator=In values=b
//	qemu-scheduler/node-affinity: key=zone operator=In values=c form=node_selector_term
//	qemu-scheduler/toleration: key=dedicated operator=Equal value=db effect=NoSchedule
//	qemu-scheduler/vm-affinity: tags=db topology_key=zone weight=20
//	qemu-scheduler/vm-anti-affinity: tags=k8s,control-plane topology_key=node
//	qemu-scheduler/topology-spread: tags=worker tags_none_of=canary topology_key=rack max_skew=1 when_unsatisfiable=DoNotSchedule min_domains=3
//
// The section starts at the record line and runs to the end of the Notes. Term lines repeat,
// one block each, with the attribute names of qemuscheduler_vm's blocks (lists comma-separated,
// defaults as there; a toleration's operator Equal and a spread's Honor policies are left out
// when written); a node-affinity line joins the expressions of a term with " & " and its
// terms with " | " (kube's matchExpressions and nodeSelectorTerms), and form= says how the
// block wrote them where the terms alone do not tell (NodeAffinityForm); annotation lines hold one
// key=value each, the value being the rest of the line. Blank lines, leading spaces and a leading "- " are allowed, so that an admin can
// write the section by hand. It is pure: the provider reads and writes the Notes.
package records

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/nodelabels"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/plugins"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Version is the record format this package writes and reads.
const Version = 1

// Line keys. Header starts the section and carries the version.
const (
	prefix        = "qemu-scheduler/"
	Header        = prefix + "record"
	keyProfile    = "profile"
	keyTags       = "tags"
	keyAnnotation = "annotation"
	keySelector   = "node-selector"
	keyNodeAff    = "node-affinity"
	keyToleration = "toleration"
	keyVMAffinity = "vm-affinity"
	keyVMAnti     = "vm-anti-affinity"
	keySpread     = "topology-spread"
)

const (
	topologyNode   = plugins.TopologyNode
	doNotSchedule  = plugins.DoNotSchedule
	scheduleAnyway = plugins.ScheduleAnyway
)

// Record is a VM's placement policy.
type Record struct {
	Profile      string
	Tags         []string
	Annotations  map[string]string
	NodeSelector map[string]string
	NodeAffinity []scheduler.NodeAffinityTerm
	// NodeAffinityForms, when set, holds NodeAffinity[i]'s form at i, so that an import writes
	// the blocks back as the configuration wrote them.
	NodeAffinityForms []NodeAffinityForm
	Tolerations       []scheduler.Toleration
	VMAffinity        []scheduler.VMGroupTerm
	VMAntiAffinity    []scheduler.VMGroupTerm
	TopologySpread    []scheduler.SpreadConstraint
}

// NodeAffinityForm is how a node_affinity block writes its terms.
type NodeAffinityForm string

const (
	// FormOwn is the block's own expression (key, operator, values) followed by its
	// match_expressions: one term. It is what a single term imports as unless told otherwise.
	FormOwn NodeAffinityForm = ""
	// FormMatchExpressions is one term of match_expressions blocks only.
	FormMatchExpressions NodeAffinityForm = "match_expressions"
	// FormSelectorTerms is node_selector_term blocks; several terms always have this form.
	FormSelectorTerms NodeAffinityForm = "node_selector_term"
)

// Form is node affinity i's form: as recorded, or implied by its number of terms.
func (r *Record) Form(i int) NodeAffinityForm {
	if len(r.NodeAffinity[i].Terms) > 1 {
		return FormSelectorTerms
	}
	if i < len(r.NodeAffinityForms) {
		return r.NodeAffinityForms[i]
	}
	return FormOwn
}

// FromRequest is the record of a request's policy (its size and pins are no policy).
func FromRequest(profile string, r scheduler.Request) Record {
	return Record{Profile: profile, Tags: r.Tags, Annotations: r.Annotations, NodeSelector: r.NodeSelector,
		NodeAffinity: r.NodeAffinity, Tolerations: r.Tolerations, VMAffinity: r.VMAffinity,
		VMAntiAffinity: r.VMAntiAffinity, TopologySpread: r.TopologySpread}
}

// Empty tells a record without any policy: tags alone are group membership, which the guest's
// PVE tags already show, so they need no record.
func (r *Record) Empty() bool {
	return (r.Profile == "" || r.Profile == "default") && len(r.Annotations) == 0 && len(r.NodeSelector) == 0 &&
		len(r.NodeAffinity) == 0 && len(r.Tolerations) == 0 && len(r.VMAffinity) == 0 && len(r.VMAntiAffinity) == 0 &&
		len(r.TopologySpread) == 0
}

// Policy is the record as a scheduling request's policy, size and name left for the caller.
func (r *Record) Policy() scheduler.Request {
	return scheduler.Request{Annotations: r.Annotations, NodeSelector: r.NodeSelector, NodeAffinity: r.NodeAffinity,
		Tolerations: r.Tolerations, VMAffinity: r.VMAffinity, VMAntiAffinity: r.VMAntiAffinity, TopologySpread: r.TopologySpread}
}

// HeaderLine is the line a record starts with.
func HeaderLine() string { return fmt.Sprintf("%s: v%d", Header, Version) }

// Format writes the section, ending with a newline, in a fixed order so that the same policy
// always gives the same text (no needless writes, no diffs).
func Format(r Record) string {
	var b strings.Builder
	line := func(key, value string) { fmt.Fprintf(&b, "%s%s: %s\n", prefix, key, value) }
	b.WriteString(HeaderLine() + "\n")
	if r.Profile != "" && r.Profile != "default" {
		line(keyProfile, r.Profile)
	}
	if len(r.Tags) > 0 {
		tags := slices.Clone(r.Tags)
		slices.Sort(tags)
		line(keyTags, strings.Join(tags, ", "))
	}
	for _, k := range slices.Sorted(maps.Keys(r.Annotations)) {
		line(keyAnnotation, k+"="+r.Annotations[k])
	}
	if len(r.NodeSelector) > 0 {
		var pairs []string
		for _, k := range slices.Sorted(maps.Keys(r.NodeSelector)) {
			pairs = append(pairs, k+"="+r.NodeSelector[k])
		}
		line(keySelector, strings.Join(pairs, ", "))
	}
	for i, a := range r.NodeAffinity {
		terms := make([]string, len(a.Terms))
		for i, term := range a.Terms {
			exprs := make([]string, len(term))
			for j, e := range term {
				f := fields{{"key", e.Key}, {"operator", e.Operator}}
				if len(e.Values) > 0 {
					f = append(f, field{"values", strings.Join(e.Values, ",")})
				}
				exprs[j] = f.String()
			}
			terms[i] = strings.Join(exprs, " & ")
		}
		var f fields
		if form := r.Form(i); form != FormOwn && len(a.Terms) == 1 {
			f = fields{{"form", string(form)}}
		}
		line(keyNodeAff, strings.TrimSpace(strings.Join(terms, " | ")+" "+f.withWeight(a.Weight).String()))
	}
	for _, t := range r.Tolerations {
		var f fields
		for _, kv := range []field{{"key", t.Key}, {"operator", omitDefault(t.Operator, nodelabels.TolEqual)}, {"value", t.Value}, {"effect", t.Effect}} {
			if kv.value != "" {
				f = append(f, kv)
			}
		}
		line(keyToleration, f.String())
	}
	for _, set := range []struct {
		key   string
		terms []scheduler.VMGroupTerm
	}{{keyVMAffinity, r.VMAffinity}, {keyVMAnti, r.VMAntiAffinity}} {
		for _, t := range set.terms {
			line(set.key, append(groupFields(t.Group()), field{"topology_key", orNode(t.TopologyKey)}).withWeight(t.Weight).String())
		}
	}
	for _, c := range r.TopologySpread {
		f := append(groupFields(c.Group()), field{"topology_key", orNode(c.TopologyKey)},
			field{"max_skew", strconv.Itoa(max(1, c.MaxSkew))}, field{"when_unsatisfiable", orDefault(c.WhenUnsatisfiable, doNotSchedule)})
		if c.MinDomains > 0 {
			f = append(f, field{"min_domains", strconv.Itoa(c.MinDomains)})
		}
		for _, p := range []field{{"node_affinity_policy", omitDefault(c.NodeAffinityPolicy, plugins.PolicyHonor)},
			{"node_taints_policy", omitDefault(c.NodeTaintsPolicy, plugins.PolicyHonor)}} {
			if p.value != "" {
				f = append(f, p)
			}
		}
		line(keySpread, f.String())
	}
	return b.String()
}

// groupFields writes a group's selector, each list only when given.
func groupFields(g scheduler.TagSelector) fields {
	var f fields
	for _, l := range []struct {
		name string
		tags []string
	}{{"tags", g.Tags}, {"tags_any_of", g.TagsAnyOf}, {"tags_none_of", g.TagsNoneOf}} {
		if len(l.tags) > 0 {
			f = append(f, field{l.name, strings.Join(l.tags, ",")})
		}
	}
	return f
}

// Join puts the section below the user's text, a blank line between; nil leaves the text alone.
func Join(user string, r *Record) string {
	if r == nil {
		return user
	}
	return JoinSection(user, Format(*r))
}

// JoinSection puts a section as Split returns it below the user's text.
func JoinSection(user, section string) string {
	if user == "" || section == "" {
		return user + section
	}
	return user + "\n\n" + section
}

// Split cuts Notes at the record line: the user's text (without the blank line Join put
// before the section) and the section, "" when there is none.
func Split(notes string) (user, section string) {
	at := -1
	for i := 0; i < len(notes); {
		end := strings.IndexByte(notes[i:], '\n')
		if end < 0 {
			end = len(notes) - i
		}
		if isHeader(notes[i : i+end]) {
			at = i
			break
		}
		i += end + 1
	}
	if at < 0 {
		return notes, ""
	}
	user = notes[:at]
	if u, ok := strings.CutSuffix(user, "\n\n"); ok {
		user = u
	} else {
		user = strings.TrimSuffix(user, "\n")
	}
	return user, notes[at:]
}

func isHeader(line string) bool {
	key, _, ok := cutLine(line)
	return ok && key == "record"
}

// cutLine reads "qemu-scheduler/<key>: <value>" after optional spaces and "- ".
func cutLine(line string) (key, value string, ok bool) {
	text := strings.TrimSpace(line)
	if rest, listed := strings.CutPrefix(text, "- "); listed {
		text = strings.TrimSpace(rest)
	}
	rest, ok := strings.CutPrefix(text, prefix)
	if !ok {
		return "", "", false
	}
	key, value, ok = strings.Cut(rest, ":")
	return strings.TrimSpace(key), strings.TrimSpace(value), ok && !strings.ContainsAny(key, " \t")
}

// Parse reads the Notes of VM vm (its name or id, for warnings): the user's text and the
// record, nil when there is none or its version is unknown. A malformed line is skipped with a
// warning naming the VM and the line; the rest of the record still counts.
func Parse(vm, notes string) (user string, rec *Record, warnings []string) {
	user, section := Split(notes)
	if section == "" {
		return user, nil, nil
	}
	r := &Record{}
	warn := func(n int, line string, format string, args ...any) {
		warnings = append(warnings, fmt.Sprintf("VM %s, placement record line %d %q: %s; the line is skipped",
			vm, n, strings.TrimSpace(line), fmt.Sprintf(format, args...)))
	}
	for i, line := range strings.Split(section, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		key, value, ok := cutLine(line)
		if !ok {
			warn(i+1, line, "not a qemu-scheduler/<key>: <value> line (the record runs from its first line to the end of the Notes)")
			continue
		}
		if i == 0 {
			if value != "v"+strconv.Itoa(Version) {
				warnings = append(warnings, fmt.Sprintf("VM %s: placement record version %q is not one this provider reads (v%d); the record is ignored and the VM counts as having none",
					vm, value, Version))
				return user, nil, warnings
			}
			continue
		}
		if err := r.add(key, value); err != nil {
			warn(i+1, line, "%v", err)
		}
	}
	return user, r, warnings
}

// add reads one line of the section into the record.
func (r *Record) add(key, value string) error {
	switch key {
	case "record":
		return fmt.Errorf("a second record line")
	case keyProfile:
		if value == "" {
			return fmt.Errorf("the profile name is empty")
		}
		r.Profile = value
	case keyTags:
		for _, t := range splitList(value, ",") {
			r.Tags = append(r.Tags, strings.ToLower(t))
		}
	case keyAnnotation:
		k, v, ok := strings.Cut(value, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("write key=value, e.g. vmid.qemu-scheduler/range=1000-1099")
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if err := plugins.CheckAnnotation(k, v); err != nil {
			return err
		}
		if r.Annotations == nil {
			r.Annotations = map[string]string{}
		}
		r.Annotations[k] = v
	case keySelector:
		return r.addSelector(value)
	case keyNodeAff:
		return r.addNodeAffinity(value)
	case keyToleration:
		return r.addToleration(value)
	case keyVMAffinity, keyVMAnti:
		f, err := parseFields(value, "tags", "tags_any_of", "tags_none_of", "topology_key", "weight")
		if err != nil {
			return err
		}
		t := scheduler.VMGroupTerm{TopologyKey: orNode(f["topology_key"])}
		if t.Tags, t.TagsAnyOf, t.TagsNoneOf, err = groupTags(f); err != nil {
			return err
		}
		if t.Weight, err = weight(f); err != nil {
			return err
		}
		if err := checkTopologyKey(t.TopologyKey); err != nil {
			return err
		}
		if key == keyVMAffinity {
			r.VMAffinity = append(r.VMAffinity, t)
		} else {
			r.VMAntiAffinity = append(r.VMAntiAffinity, t)
		}
	case keySpread:
		return r.addSpread(value)
	default:
		return fmt.Errorf("unknown key %q; the record knows %s", key, strings.Join([]string{keyProfile, keyTags, keyAnnotation,
			keySelector, keyNodeAff, keyToleration, keyVMAffinity, keyVMAnti, keySpread}, ", "))
	}
	return nil
}

func (r *Record) addSelector(value string) error {
	pairs := map[string]string{}
	for _, entry := range splitList(value, ",") {
		k, v, ok := strings.Cut(entry, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok {
			return fmt.Errorf("node selector entry %q has no value; write key=value", entry)
		}
		if err := nodelabels.ValidateKey(k); err != nil {
			return err
		}
		if err := nodelabels.ValidateValue(v); err != nil {
			return err
		}
		pairs[k] = v
	}
	if r.NodeSelector == nil {
		r.NodeSelector = map[string]string{}
	}
	maps.Copy(r.NodeSelector, pairs)
	return nil
}

// addNodeAffinity reads one node affinity: terms split by "|", expressions by "&", a weight
// and a form each in any one expression.
func (r *Record) addNodeAffinity(value string) error {
	var a scheduler.NodeAffinityTerm
	weighted, form := false, FormOwn
	for _, termText := range strings.Split(value, "|") {
		var term []scheduler.NodeExpression
		for _, exprText := range strings.Split(termText, "&") {
			f, err := parseFields(exprText, "key", "operator", "values", "weight", "form")
			if err != nil {
				return err
			}
			if v, ok := f["form"]; ok {
				switch {
				case form != FormOwn:
					return fmt.Errorf("form given twice; a node affinity has one form")
				case v != string(FormMatchExpressions) && v != string(FormSelectorTerms):
					return fmt.Errorf("form must be %s or %s, got %q", FormMatchExpressions, FormSelectorTerms, v)
				}
				form = NodeAffinityForm(v)
			}
			if _, ok := f["weight"]; ok {
				if weighted {
					return fmt.Errorf("weight given twice; a node affinity has one weight")
				}
				weighted = true
				if a.Weight, err = weight(f); err != nil {
					return err
				}
			}
			term = append(term, scheduler.NodeExpression{Key: f["key"], Operator: f["operator"], Values: splitList(f["values"], ",")})
		}
		a.Terms = append(a.Terms, term)
	}
	if err := nodelabels.ValidateAffinity(a); err != nil {
		return err
	}
	if form != FormOwn {
		// Earlier affinities keep their own (implied) forms.
		for len(r.NodeAffinityForms) < len(r.NodeAffinity) {
			r.NodeAffinityForms = append(r.NodeAffinityForms, FormOwn)
		}
		r.NodeAffinityForms = append(r.NodeAffinityForms, form)
	}
	r.NodeAffinity = append(r.NodeAffinity, a)
	return nil
}

func (r *Record) addToleration(value string) error {
	f, err := parseFields(value, "key", "operator", "value", "effect")
	if err != nil {
		return err
	}
	t := scheduler.Toleration{Key: f["key"], Operator: orDefault(f["operator"], nodelabels.TolEqual), Value: f["value"], Effect: f["effect"]}
	if err := nodelabels.ValidateToleration(t); err != nil {
		return err
	}
	r.Tolerations = append(r.Tolerations, t)
	return nil
}

func (r *Record) addSpread(value string) error {
	f, err := parseFields(value, "tags", "tags_any_of", "tags_none_of", "topology_key", "max_skew", "when_unsatisfiable",
		"min_domains", "node_affinity_policy", "node_taints_policy")
	if err != nil {
		return err
	}
	c := scheduler.SpreadConstraint{TopologyKey: orNode(f["topology_key"]), MaxSkew: 1, WhenUnsatisfiable: orDefault(f["when_unsatisfiable"], doNotSchedule),
		NodeAffinityPolicy: orDefault(f["node_affinity_policy"], plugins.PolicyHonor), NodeTaintsPolicy: orDefault(f["node_taints_policy"], plugins.PolicyHonor)}
	if c.Tags, c.TagsAnyOf, c.TagsNoneOf, err = groupTags(f); err != nil {
		return err
	}
	if s, ok := f["min_domains"]; ok {
		if c.MinDomains, err = strconv.Atoi(s); err != nil || c.MinDomains < 1 {
			return fmt.Errorf("min_domains must be a whole number of at least 1, got %q", s)
		}
	}
	for _, p := range []string{c.NodeAffinityPolicy, c.NodeTaintsPolicy} {
		if p != "" && p != plugins.PolicyHonor && p != plugins.PolicyIgnore {
			return fmt.Errorf("a node inclusion policy must be %s or %s, got %q", plugins.PolicyHonor, plugins.PolicyIgnore, p)
		}
	}
	if s, ok := f["max_skew"]; ok {
		if c.MaxSkew, err = strconv.Atoi(s); err != nil || c.MaxSkew < 1 {
			return fmt.Errorf("max_skew must be a whole number of at least 1, got %q", s)
		}
	}
	if c.WhenUnsatisfiable != doNotSchedule && c.WhenUnsatisfiable != scheduleAnyway {
		return fmt.Errorf("when_unsatisfiable must be %s or %s, got %q", doNotSchedule, scheduleAnyway, c.WhenUnsatisfiable)
	}
	if c.MinDomains > 0 && c.WhenUnsatisfiable != doNotSchedule {
		return fmt.Errorf("min_domains applies to when_unsatisfiable=%s only, as kube's minDomains", doNotSchedule)
	}
	if err := checkTopologyKey(c.TopologyKey); err != nil {
		return err
	}
	r.TopologySpread = append(r.TopologySpread, c)
	return nil
}

// field is one name=value of a term line; fields keep their order for writing.
type field struct{ name, value string }

type fields []field

func (f fields) withWeight(w int) fields {
	if w > 0 {
		return append(f, field{"weight", strconv.Itoa(w)})
	}
	return f
}

func (f fields) String() string {
	parts := make([]string, len(f))
	for i, kv := range f {
		parts[i] = kv.name + "=" + kv.value
	}
	return strings.Join(parts, " ")
}

// parseFields reads space-separated name=value pairs, each name known and given once.
func parseFields(value string, known ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Fields(value) {
		name, v, ok := strings.Cut(part, "=")
		switch {
		case !ok:
			return nil, fmt.Errorf("%q is not name=value", part)
		case !slices.Contains(known, name):
			return nil, fmt.Errorf("unknown field %q; this line knows %s", name, strings.Join(known, ", "))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("field %q given twice", name)
		}
		out[name] = v
	}
	return out, nil
}

// groupTags reads a group's selector: tags (all of them), tags_any_of, tags_none_of; one is
// needed. Tags keep their case, as the configuration wrote them (selectors compare tags
// case-insensitively), so that the record formats back to the same text.
func groupTags(f map[string]string) (all, anyOf, noneOf []string, err error) {
	lists := make([][]string, 3)
	for i, name := range []string{"tags", "tags_any_of", "tags_none_of"} {
		lists[i] = splitList(f[name], ",")
		for _, t := range lists[i] {
			if !validTag(t) {
				return nil, nil, nil, fmt.Errorf("tag %q is not a PVE tag (letters, digits and _ - + ., not starting with - + .)", t)
			}
		}
	}
	if len(lists[0])+len(lists[1])+len(lists[2]) == 0 {
		return nil, nil, nil, fmt.Errorf("tags is missing: write tags=a,b (the group: guests carrying all of them), tags_any_of or tags_none_of")
	}
	return lists[0], lists[1], lists[2], nil
}

func validTag(t string) bool {
	for i, c := range t {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || i > 0 && strings.ContainsRune("-+.", c)
		if !ok {
			return false
		}
	}
	return t != ""
}

func weight(f map[string]string) (int, error) {
	s, ok := f["weight"]
	if !ok {
		return 0, nil
	}
	w, err := strconv.Atoi(s)
	if err != nil || w < 1 || w > nodelabels.MaxWeight {
		return 0, fmt.Errorf("weight must be 1..%d (a preference), or absent for a requirement; got %q", nodelabels.MaxWeight, s)
	}
	return w, nil
}

func checkTopologyKey(key string) error {
	if key == topologyNode {
		return nil
	}
	return nodelabels.ValidateKey(key)
}

func splitList(s, sep string) []string {
	var out []string
	for _, p := range strings.Split(s, sep) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func orNode(key string) string { return orDefault(key, topologyNode) }

// omitDefault is "" for a value a line leaves out because it is the default (Parse fills it
// in), so that the record is the same whether the configuration wrote the default or not.
func omitDefault(s, def string) string {
	if s == def {
		return ""
	}
	return s
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

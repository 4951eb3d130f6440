package pvesim

// PVE 9 HA rules (/cluster/ha/rules, rules.cfg) as pve-ha-manager 5.2 keeps them: the API
// with its checks and messages (API2/HA/Rules.pm), the feasibility checks of Rules.pm and its
// plugins, which refuse a create or update that would make the rule infeasible and mark rules
// already in the file with errors, and the purge of a removed resource from its rules.

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// rulesAPI serves a rules request under the lock; PVE 8 (no rules) has no such method.
func (s *Server) rulesAPI(handle http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.haRules == nil {
			notImplemented(w, r)
			return
		}
		handle(w, r)
	}
}

// haRuleDigest is the SHA-1 of rules.cfg as the simulator writes it.
func (s *Server) haRuleDigest() string {
	var file strings.Builder
	for _, rule := range s.haRules {
		fmt.Fprintf(&file, "%s: %s\n\tresources %s\n\tnodes %s\n\tstrict %t\n\taffinity %s\n\tdisable %t\n\tcomment %s\n",
			rule.Type, rule.Rule, strings.Join(rule.Resources, ","), strings.Join(rule.Nodes, ","), rule.Strict, rule.Affinity,
			rule.Disable, rule.Comment)
	}
	sum := sha1.Sum([]byte(file.String()))
	return hex.EncodeToString(sum[:])
}

// haRuleRow is a rule as the API shows it: resources and nodes as comma strings sorted by
// name, a priority of 0 written as the bare node name, strict and disable only when set,
// order as the file position, the file's digest and the rule's feasibility errors.
func haRuleRow(rule HARuleSpec, order int, digest string, errs map[string][]string) map[string]any {
	row := map[string]any{"rule": rule.Rule, "type": rule.Type, "resources": sortedList(rule.Resources), "order": order, "digest": digest}
	if rule.Type == "node-affinity" {
		nodes := make([]string, len(rule.Nodes))
		for j, n := range rule.Nodes {
			nodes[j] = strings.TrimSuffix(n, ":0")
		}
		row["nodes"] = sortedList(nodes)
		if rule.Strict {
			row["strict"] = 1
		}
	} else {
		row["affinity"] = rule.Affinity
	}
	if rule.Disable {
		row["disable"] = 1
	}
	if rule.Comment != "" {
		row["comment"] = rule.Comment
	}
	if len(errs) > 0 {
		out := map[string]string{}
		for prop, msgs := range errs {
			out[prop] = strings.Join(msgs, ", ")
		}
		row["errors"] = out
	}
	return row
}

// handleHARules answers GET /cluster/ha/rules, filtered by type and by resource (the rules
// holding that sid).
func (s *Server) handleHARules(w http.ResponseWriter, r *http.Request) {
	p, ok := readAllowedParams(w, r, "type", "resource")
	if !ok {
		return
	}
	if typ := p["type"]; typ != "" && typ != "node-affinity" && typ != "resource-affinity" {
		paramError(w, "type", fmt.Sprintf("value '%s' does not have a value in the enumeration 'node-affinity, resource-affinity'", typ))
		return
	}
	digest, errs := s.haRuleDigest(), haRuleErrors(s.haRules, len(s.nodes))
	out := []map[string]any{}
	for i, rule := range s.haRules {
		if (p["type"] != "" && rule.Type != p["type"]) || (p["resource"] != "" && !slices.Contains(rule.Resources, p["resource"])) {
			continue
		}
		out = append(out, haRuleRow(rule, i+1, digest, errs[rule.Rule]))
	}
	writeData(w, out)
}

// haRuleIndex is the position of the rule {rule} names, -1 when there is none.
func (s *Server) haRuleIndex(id string) int {
	return slices.IndexFunc(s.haRules, func(r HARuleSpec) bool { return strings.EqualFold(r.Rule, id) })
}

func (s *Server) handleHARuleGet(w http.ResponseWriter, r *http.Request) {
	i := s.haRuleIndex(r.PathValue("rule"))
	if i < 0 {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("no such ha rule '%s'", r.PathValue("rule")))
		return
	}
	writeData(w, haRuleRow(s.haRules[i], i+1, s.haRuleDigest(), haRuleErrors(s.haRules, len(s.nodes))[s.haRules[i].Rule]))
}

// haRuleOptions are the properties each rule type takes (the plugins' options).
var haRuleOptions = map[string][]string{
	"node-affinity":     {"resources", "nodes", "strict", "disable", "comment"},
	"resource-affinity": {"resources", "affinity", "disable", "comment"},
}

// checkHARuleParams checks a create's or update's properties as the section config schema
// does, answering a 400 when one is wrong; required lists those that must be present.
func checkHARuleParams(w http.ResponseWriter, p map[string]string, typ string, required bool, extra ...string) bool {
	problems := map[string]string{}
	opts, known := haRuleOptions[typ]
	if !known {
		if typ == "" {
			problems["type"] = "property is missing and it is not optional"
		} else {
			problems["type"] = fmt.Sprintf("value '%s' does not have a value in the enumeration 'node-affinity, resource-affinity'", typ)
		}
		writeParamError(w, problems)
		return false
	}
	for k, v := range p {
		switch {
		case k == "type" || contains(extra, k):
		case !contains(opts, k):
			problems[k] = "property is not defined in schema and the schema does not allow additional properties"
		case k == "strict" || k == "disable":
			if _, ok := parseBool(v); !ok {
				problems[k] = fmt.Sprintf("type check ('boolean') failed - got '%s'", v)
			}
		case k == "affinity" && v != "positive" && v != "negative":
			problems[k] = fmt.Sprintf("value '%s' does not have a value in the enumeration 'positive, negative'", v)
		case k == "comment" && len(v) > 4096:
			problems[k] = "value may only be 4096 characters long"
		case k == "resources":
			for _, sid := range splitList(v) {
				if !haSIDFormat.MatchString(sid) {
					problems[k] = fmt.Sprintf("invalid format - value does not look like a valid ha resource id '%s'", sid)
				}
			}
		case k == "nodes":
			for _, n := range splitList(v) {
				if !haNodeFormat.MatchString(n) {
					problems[k] = fmt.Sprintf("invalid format - value does not look like a valid node name with optional priority '%s'", n)
				}
			}
		}
	}
	if required {
		for _, k := range opts {
			if _, set := p[k]; !set && (k == "resources" || k == "nodes" || k == "affinity") {
				problems[k] = "property is missing and it is not optional"
			}
		}
	}
	if len(problems) > 0 {
		writeParamError(w, problems)
		return false
	}
	return true
}

var (
	haSIDFormat  = regexp.MustCompile(`^(vm|ct):[1-9][0-9]*$`)
	haNodeFormat = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(:[0-9]+)?$`)
)

// setHARuleProps writes the properties p sets into rule.
func setHARuleProps(rule *HARuleSpec, p map[string]string) {
	for k, v := range p {
		switch k {
		case "resources":
			rule.Resources = uniqueList(splitList(v))
		case "nodes":
			rule.Nodes = uniqueList(splitList(v))
		case "strict":
			rule.Strict, _ = parseBool(v)
		case "disable":
			rule.Disable, _ = parseBool(v)
		case "affinity":
			rule.Affinity = v
		case "comment":
			rule.Comment = v
		}
	}
}

func uniqueList(items []string) []string {
	out := []string{}
	for _, it := range items {
		if !contains(out, it) {
			out = append(out, it)
		}
	}
	return out
}

// checkHARuleRefs is what the API checks under the lock before the feasibility: some
// resources, every one configured, and a node rule's nodes, every one a cluster member
// (pve-ha-manager 5.1.2 refused empty lists from here on). The caller holds s.mu.
func (s *Server) checkHARuleRefs(rule HARuleSpec) string {
	if len(rule.Resources) == 0 {
		return "no resources were specified"
	}
	if rule.Type == "node-affinity" && len(rule.Nodes) == 0 {
		return "no nodes were specified"
	}
	var unmanaged, missing []string
	for _, sid := range sortedStrings(rule.Resources) {
		if s.haResources[sid] == nil {
			unmanaged = append(unmanaged, sid)
		}
	}
	if unmanaged != nil {
		return "cannot use unmanaged resource(s) " + strings.Join(unmanaged, ", ") + "."
	}
	for _, n := range sortedStrings(rule.Nodes) {
		name, _, _ := strings.Cut(n, ":")
		if s.node(name) == nil {
			missing = append(missing, name)
		}
	}
	if missing != nil {
		return "cannot use non-existent node(s) " + strings.Join(missing, ", ") + "."
	}
	return ""
}

func sortedStrings(items []string) []string {
	out := append([]string(nil), items...)
	sort.Strings(out)
	return out
}

// infeasible is PVE's assert_feasibility for rule id in rules: "Rule '<id>' is invalid."
// (a 400 inside the config lock, which turns it into the 500 its caller writes) with a
// line per property and its problems; "" when the rule is feasible.
func infeasible(rules []HARuleSpec, id string, nodes int) string {
	errs := haRuleErrors(rules, nodes)[id]
	if len(errs) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "400 Rule '%s' is invalid.", id)
	for _, prop := range slices.Sorted(maps.Keys(errs)) {
		fmt.Fprintf(&b, "\n%s: %s", prop, strings.Join(errs[prop], ", "))
	}
	return b.String()
}

func (s *Server) handleHARuleCreate(w http.ResponseWriter, r *http.Request) {
	p, ok := readParams(w, r)
	if !ok || !checkHARuleParams(w, p, p["type"], true, "rule") {
		return
	}
	rule := HARuleSpec{Rule: p["rule"], Type: p["type"]}
	switch {
	case rule.Rule == "":
		paramError(w, "rule", "property is missing and it is not optional")
		return
	case !haRuleID.MatchString(rule.Rule):
		paramError(w, "rule", fmt.Sprintf("invalid configuration ID '%s'", rule.Rule))
		return
	}
	setHARuleProps(&rule, p)
	fail := func(msg string) { writeError(w, http.StatusInternalServerError, "create ha rule failed: "+msg) }
	if s.haRuleIndex(rule.Rule) >= 0 {
		fail(fmt.Sprintf("HA rule '%s' already defined", rule.Rule))
		return
	}
	s.writeHARule(w, rule, -1, fail)
}

// writeHARule puts rule at position i of the rules (-1: at the end) after the checks the API
// makes under the lock: configured resources, existing nodes, then the feasibility.
func (s *Server) writeHARule(w http.ResponseWriter, rule HARuleSpec, i int, fail func(string)) {
	if msg := s.checkHARuleRefs(rule); msg != "" {
		fail(msg)
		return
	}
	next := slices.Clone(s.haRules)
	if i < 0 {
		next = append(next, rule)
	} else {
		next[i] = rule
	}
	if msg := infeasible(next, rule.Rule, len(s.nodes)); msg != "" {
		fail(msg)
		return
	}
	s.haRules = next
	writeData(w, nil)
}

func (s *Server) handleHARuleUpdate(w http.ResponseWriter, r *http.Request) {
	p, ok := readParams(w, r)
	if !ok || !checkHARuleParams(w, p, p["type"], false, "digest", "delete") {
		return
	}
	fail := func(msg string) { writeError(w, http.StatusInternalServerError, "update HA rules failed: "+msg) }
	if p["digest"] != "" && p["digest"] != s.haRuleDigest() {
		fail("detected modified configuration - file changed by other user? Try again.")
		return
	}
	i := s.haRuleIndex(r.PathValue("rule"))
	if i < 0 {
		fail(fmt.Sprintf("HA rule '%s' does not exist", r.PathValue("rule")))
		return
	}
	rule := s.haRules[i]
	if rule.Type != p["type"] {
		fail(fmt.Sprintf("rule type '%s' does not match the rule's type '%s'", p["type"], rule.Type))
		return
	}
	for _, k := range splitList(p["delete"]) {
		switch {
		case !contains(haRuleOptions[rule.Type], k):
			paramError(w, "delete", fmt.Sprintf("invalid option '%s'", k))
			return
		case k == "resources" || k == "nodes" || k == "affinity":
			paramError(w, "delete", fmt.Sprintf("cannot delete required option '%s'", k))
			return
		case k == "strict":
			rule.Strict = false
		case k == "disable":
			rule.Disable = false
		case k == "comment":
			rule.Comment = ""
		}
	}
	setHARuleProps(&rule, p)
	s.writeHARule(w, rule, i, fail)
}

// handleHARuleDelete removes a rule; PVE deletes without asking whether it exists, and takes
// no parameter but the rule's id: no digest.
func (s *Server) handleHARuleDelete(w http.ResponseWriter, r *http.Request) {
	if _, ok := readAllowedParams(w, r); !ok {
		return
	}
	if i := s.haRuleIndex(r.PathValue("rule")); i >= 0 {
		s.haRules = slices.Delete(s.haRules, i, i+1)
	}
	writeData(w, nil)
}

// purgeFromHARules takes a removed resource out of every rule, deleting the rules it was the
// only resource of, as deleting an HA resource with purge (the default) does. The caller
// holds s.mu.
func (s *Server) purgeFromHARules(sid string) {
	if s.haRules == nil {
		return
	}
	kept := s.haRules[:0]
	for _, rule := range s.haRules {
		rule.Resources = slices.DeleteFunc(slices.Clone(rule.Resources), func(r string) bool { return r == sid })
		if len(rule.Resources) > 0 {
			kept = append(kept, rule)
		}
	}
	s.haRules = kept
}

// haRuleErrors is PVE's check_feasibility: per enabled rule, per property, the problems that
// make the rule set infeasible (Rules.pm and its node- and resource-affinity plugins).
func haRuleErrors(rules []HARuleSpec, nodeCount int) map[string]map[string][]string {
	errs := map[string]map[string][]string{}
	add := func(id, msg string) {
		if errs[id] == nil {
			errs[id] = map[string][]string{}
		}
		errs[id]["resources"] = append(errs[id]["resources"], msg)
	}
	var nodeRules, resRules []HARuleSpec
	for _, r := range rules {
		switch {
		case r.Disable:
		case r.Type == "node-affinity":
			nodeRules = append(nodeRules, r)
		default:
			resRules = append(resRules, r)
		}
	}
	// A resource is in at most one node-affinity rule.
	for i, a := range nodeRules {
		for _, sid := range a.Resources {
			for j, b := range nodeRules {
				if i != j && slices.Contains(b.Resources, sid) {
					add(a.Rule, fmt.Sprintf("resource '%s' is already used in another node affinity rule", sid))
					break
				}
			}
		}
	}
	for _, r := range resRules {
		if len(r.Resources) < 2 {
			add(r.Rule, "rule is ineffective as there are less than two resources")
		}
		if r.Affinity == "negative" && len(r.Resources) > nodeCount {
			add(r.Rule, "rule defines more resources than available nodes")
		}
	}
	// The same two resources cannot be kept together and apart.
	for _, pos := range resRules {
		for _, neg := range resRules {
			if pos.Affinity == "positive" && neg.Affinity == "negative" && len(intersect(pos.Resources, neg.Resources)) >= 2 {
				add(pos.Rule, "rule shares two or more resources with a negative resource affinity rule")
				add(neg.Rule, "rule shares two or more resources with a positive resource affinity rule")
			}
		}
	}
	for _, ra := range resRules {
		var paired []HARuleSpec
		for _, na := range nodeRules {
			if len(intersect(ra.Resources, na.Resources)) > 0 {
				paired = append(paired, na)
			}
		}
		// Resources in a resource-affinity rule need node rules of a single priority class.
		if slices.ContainsFunc(paired, multiplePriorities) {
			add(ra.Rule, "resources are in node affinity rules with multiple priorities")
			for _, na := range paired {
				add(na.Rule, "resources are in a resource affinity rule and cannot be in a node affinity rule with multiple priorities")
			}
		}
		// A positive group is in at most one node-affinity rule.
		if ra.Affinity == "positive" && len(paired) > 1 {
			add(ra.Rule, "resources are in multiple node affinity rules")
			for _, na := range paired {
				add(na.Rule, "at least one resource is in a positive resource affinity rule and there are other resources in at least one other node affinity rule already")
			}
		}
		// A negative group must not be restricted to fewer nodes than its resources there.
		if ra.Affinity == "negative" && len(paired) > 0 {
			located, allowed := map[string]bool{}, map[string]bool{}
			for _, na := range paired {
				for _, sid := range intersect(ra.Resources, na.Resources) {
					located[sid] = true
				}
				for _, n := range na.Nodes {
					name, _, _ := strings.Cut(n, ":")
					allowed[name] = true
				}
			}
			if len(allowed) < len(located) {
				add(ra.Rule, "two or more resources are restricted to less nodes than available to the resources")
				for _, na := range paired {
					add(na.Rule, "at least one resource is in a negative resource affinity rule and this rule would restrict these to less nodes than available to the resources")
				}
			}
		}
	}
	return errs
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// multiplePriorities tells a node-affinity rule with more than one priority class.
func multiplePriorities(r HARuleSpec) bool {
	prio := -1
	for _, n := range r.Nodes {
		_, v := nodePriority(n)
		if prio >= 0 && v != prio {
			return true
		}
		prio = v
	}
	return false
}

func sortedList(items []string) string {
	return strings.Join(sortedStrings(items), ",")
}

// validateHARules refuses what PVE's rules.cfg parser and rule checks refuse: an unknown
// type, a bad rule id, unknown nodes, resources that are not vm:N or ct:N of a listed guest,
// a resource-affinity rule without affinity or with fewer than two resources.
func (c Cluster) validateHARules(nodes map[string]bool, ids map[int]bool) error {
	seen := map[string]bool{}
	for _, r := range c.HARules {
		if !haRuleID.MatchString(r.Rule) || seen[strings.ToLower(r.Rule)] {
			return fmt.Errorf("cluster file: HA rule %q: ids match [a-z][a-z0-9_-]+ and are unique", r.Rule)
		}
		seen[strings.ToLower(r.Rule)] = true
		for _, sid := range r.Resources {
			var kind string
			var vmid int
			if _, err := fmt.Sscanf(sid, "%2s:%d", &kind, &vmid); err != nil || (kind != "vm" && kind != "ct") || !ids[vmid] {
				return fmt.Errorf("cluster file: HA rule %q: resource %q is not vm:<vmid> or ct:<vmid> of a listed guest", r.Rule, sid)
			}
		}
		switch r.Type {
		case "node-affinity":
			if len(r.Nodes) == 0 {
				return fmt.Errorf("cluster file: HA rule %q: node-affinity needs nodes", r.Rule)
			}
			for _, n := range r.Nodes {
				if !nodes[strings.SplitN(n, ":", 2)[0]] {
					return fmt.Errorf("cluster file: HA rule %q: cannot use non-existent node(s) %s", r.Rule, n)
				}
			}
		case "resource-affinity":
			if r.Affinity != "positive" && r.Affinity != "negative" {
				return fmt.Errorf("cluster file: HA rule %q: affinity must be positive or negative", r.Rule)
			}
			if len(r.Resources) < 2 {
				return fmt.Errorf("cluster file: HA rule %q: rule is ineffective as there are less than two resources", r.Rule)
			}
		default:
			return fmt.Errorf("cluster file: HA rule %q: type must be node-affinity or resource-affinity", r.Rule)
		}
	}
	return nil
}

var haRuleID = regexp.MustCompile(`^(?i)[a-z][a-z0-9_-]+$`)

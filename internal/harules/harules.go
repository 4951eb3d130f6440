// Package harules computes the PVE 9 HA rules that make the HA manager honour a VM's hard
// placement rules as ha.failover asks (design-failover §2), the changes that bring the cluster's rules there,
// and PVE's feasibility checks on the result. It is pure: the provider reads and writes.
package harules

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/nodelabels"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// The values of failover (ha.failover, ha_failover; design-failover §1): whether a failover
// may break a hard placement rule to keep the VM running (preferred) or leaves it down rather
// than do so (strict).
const (
	FailoverPreferred = "preferred"
	FailoverStrict    = "strict"
)

// Prefix starts the id of every rule the provider keeps; it changes no other rule.
const Prefix = "qemuscheduler-"

// topologyNode is the topology key that makes every node its own domain.
const topologyNode = "node"

// Rule is a rule a VM wants and the VM policy it keeps, for messages.
type Rule struct {
	scheduler.HARule
	Policy string
	// Shared marks a node rule that the members of a positive group share: it keeps the
	// members other writers added, and the nodes all of them allow.
	Shared bool
}

// Input is one VM and the cluster view its rules come from.
type Input struct {
	VMID int
	Name string
	// Node is where the VM runs ("" before it exists), or is placed (Placing).
	Node    string
	Request scheduler.Request
	Snap    scheduler.Snapshot
	// Managed are the guests the HA manager acts on (HA resources not ignored), the VM
	// itself included or not.
	Managed map[int]bool
	// PolicyNodes are the nodes that pass the VM's node-level rules (NodeRuleNodes).
	PolicyNodes []string
	// Strict is ha.failover = "strict": the HA manager leaves the VM down rather than break
	// a hard rule; else (preferred) it may run the VM on any node, its rules' nodes first.
	Strict bool
	// Lenient are the guests whose failover is preferred (Lenient): in no negative rule.
	Lenient map[int]bool
	// PairedBy are the peers whose required vm_affinity over nodes holds the VM in a positive
	// pair (Held): its node rule is the pair's, of one priority class.
	PairedBy []int
	// Placing says Node is where the provider places the VM now (its create, a pinned move):
	// its new home. Else its home is the one its rule records (Home).
	Placing bool
	// Rules are the cluster's rules: where they record the homes of the VM and its peers, and
	// the positive groups a pair joins.
	Rules []scheduler.HARule
}

// Want is the rules the VM must be in, by the design's table (design-failover §2). Under
// preferred (in.Strict false) its node rule is non-strict with priority classes and a required
// vm_anti_affinity over nodes only ranks the nodes; under strict the node rule is strict and
// such a term is a negative resource-affinity rule over the term's HA-managed group, once that
// makes two. A required vm_affinity over nodes is a positive rule over the VM and the one peer
// it runs next to, and the pair shares the peer's node rule (PVE allows a positive group in one
// node rule only). The node rule is left out when it would list every node in one class.
// Sorted by id.
func Want(in Input) []Rule {
	var out []Rule
	add := func(r Rule) {
		if !slices.ContainsFunc(out, func(o Rule) bool { return o.Name == r.Name }) {
			out = append(out, r)
		}
	}
	if in.Strict {
		for _, t := range in.Request.VMAntiAffinity {
			sel := t.Group()
			if !overNodes(t) {
				continue
			}
			members, cts := []int{in.VMID}, []int(nil)
			for _, g := range in.Snap.Guests {
				if g.VMID != in.VMID && in.Managed[g.VMID] && !in.Lenient[g.VMID] && sel.Selects(g.Tags) && !slices.Contains(members, g.VMID) {
					members = append(members, g.VMID)
					if g.Type == scheduler.GuestLXC {
						cts = append(cts, g.VMID)
					}
				}
			}
			if len(members) < 2 {
				continue
			}
			sort.Ints(members)
			add(Rule{HARule: scheduler.HARule{Name: Prefix + "apart-" + groupKey(sel), Type: scheduler.HAResourceAffinity, Affinity: scheduler.HANegative,
				VMIDs: members, CTs: cts, Comment: fmt.Sprintf("qemuscheduler: VMs tagged %s apart (required vm_anti_affinity)", describe(sel))},
				Policy: termPolicy("vm_anti_affinity", sel, topologyNode)})
		}
	}
	peer := 0
	if i := slices.IndexFunc(in.Request.VMAffinity, overNodes); i >= 0 {
		sel := in.Request.VMAffinity[i].Group()
		if g := nextTo(in, sel); g != nil {
			peer = g.VMID
			rule := Rule{HARule: scheduler.HARule{Name: pairName(sel, in.VMID, peer), Type: scheduler.HAResourceAffinity, Affinity: scheduler.HAPositive,
				// One comment whichever side writes, as the id.
				VMIDs: []int{min(in.VMID, peer), max(in.VMID, peer)}, Comment: fmt.Sprintf("qemuscheduler: VMs %d and %d together (required vm_affinity on tags %s)",
					min(in.VMID, peer), max(in.VMID, peer), describe(sel))}, Policy: termPolicy("vm_affinity", sel, topologyNode)}
			if g.Type == scheduler.GuestLXC {
				rule.CTs = []int{peer}
			}
			add(rule)
		}
	}
	nodes, priorities, policy, placed := nodeClasses(in)
	// PVE allows a resource in a resource-affinity rule only a node rule of one priority class.
	pair := append(slices.Clone(in.PairedBy), in.VMID)
	if peer != 0 {
		pair = append(pair, peer)
	}
	// The cluster's positive rules count too: a peer's pair written while this VM's view did
	// not show the peer yet must not be undone by this VM's own rule.
	group := positiveGroup(pair, in.Rules)
	paired := len(group) > 1
	// Under strict, a member of a negative group flattens from its first apply on, alone in
	// the group still: else a peer joining it would write a negative rule PVE refuses.
	if paired || len(out) > 0 || in.Strict && slices.ContainsFunc(in.Request.VMAntiAffinity, overNodes) {
		priorities = nil
	}
	if paired || len(nodes) < len(in.Snap.Nodes) || len(priorities) > 0 {
		rule := Rule{HARule: scheduler.HARule{Name: NodeRuleName(in.VMID), Type: scheduler.HANodeAffinity, Strict: in.Strict,
			VMIDs: []int{in.VMID}, Nodes: nodes, Priorities: priorities,
			Comment: fmt.Sprintf("qemuscheduler: VM %s (%d) on the nodes its rules allow", in.Name, in.VMID)}, Policy: policy}
		if placed != "" {
			rule.Comment += placedOn + placed
		}
		if paired {
			// PVE merges the positive rules that share a resource into one group (pairs that
			// chain, A-B and B-C), and allows a group one node rule: the group meets in one,
			// named for its lowest VMID whichever member writes, on the nodes all allow
			// (Changes keeps the nodes of the others and folds their own rules into it), with
			// the same comment: else each apply would rewrite the others'.
			rule.Name, rule.VMIDs, rule.Shared = NodeRuleName(group[0]), group, true
			rule.Comment = fmt.Sprintf("qemuscheduler: VM %d and the VMs next to it on the nodes all their rules allow", group[0])
		}
		add(rule)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// positiveGroup is members with every VM the enabled positive rules of this provider among
// rules join to them, transitively, sorted: the group PVE makes of overlapping positive rules.
// A user's positive rule is the user's to give a node rule.
func positiveGroup(members []int, rules []scheduler.HARule) []int {
	group := slices.Clone(members)
	for grown := true; grown; {
		grown = false
		for _, r := range rules {
			if r.Disabled || r.Type != scheduler.HAResourceAffinity || r.Affinity != scheduler.HAPositive || !strings.HasPrefix(r.Name, Prefix) ||
				!slices.ContainsFunc(r.VMIDs, func(m int) bool { return slices.Contains(group, m) }) {
				continue
			}
			for _, m := range r.VMIDs {
				if !slices.Contains(group, m) {
					group, grown = append(group, m), true
				}
			}
		}
	}
	slices.Sort(group)
	return slices.Compact(group)
}

// overNodes matches the required VM group terms over nodes with a group: the terms that make
// resource-affinity rules.
func overNodes(t scheduler.VMGroupTerm) bool {
	sel := t.Group()
	return t.Weight == 0 && t.TopologyKey == topologyNode && len(sel.Tags)+len(sel.TagsAnyOf) > 0
}

// pairName is the id of the positive rule a required vm_affinity over nodes makes of the VMs
// a and b: the same whichever of them has the term, so that two VMs with the term next to
// each other write one rule.
func pairName(sel scheduler.TagSelector, a, b int) string {
	return Prefix + "together-" + groupKey(sel) + "-" + strconv.Itoa(min(a, b)) + "-" + strconv.Itoa(max(a, b))
}

// nextTo is the HA-managed member of the group sel that runs on the VM's node, the lowest
// VMID of them: the one peer it was placed next to (nil before it exists, or alone there).
// Pairing it with the whole group would let the HA manager move the group's other members
// next to it (kube's "next to a pod of the group", not "all pods together").
func nextTo(in Input, sel scheduler.TagSelector) *scheduler.Guest {
	var out *scheduler.Guest
	// The peer of a pair it is in already stays its peer, wherever both run now: another
	// member the HA manager recovered onto its node must not take its place.
	for _, r := range in.Rules {
		if r.Type != scheduler.HAResourceAffinity || r.Affinity != scheduler.HAPositive || len(r.VMIDs) != 2 || !slices.Contains(r.VMIDs, in.VMID) {
			continue
		}
		peer := r.VMIDs[0] + r.VMIDs[1] - in.VMID
		for i, g := range in.Snap.Guests {
			if g.VMID == peer && in.Managed[peer] && sel.Selects(g.Tags) && !g.Arriving() && strings.EqualFold(r.Name, pairName(sel, in.VMID, peer)) {
				return &in.Snap.Guests[i]
			}
		}
	}
	for i, g := range in.Snap.Guests {
		if in.Node != "" && g.Node == in.Node && g.VMID != in.VMID && in.Managed[g.VMID] && sel.Selects(g.Tags) && !g.Arriving() &&
			(out == nil || g.VMID < out.VMID) {
			out = &in.Snap.Guests[i]
		}
	}
	return out
}

// Held are the rules among cur that hold the VM vmid, tagged tags, because a peer keeps it
// there: an HA-managed member of the rule whose placement record holds the required term over
// nodes that made the rule and selects the VM (kube's symmetry: an existing pod's anti-affinity
// binds the pods it selects). The VM does not leave them for lack of such a term of its own;
// else the peer's next apply would put it back, and its own take it out again. A VM whose
// failover is preferred (strict false) is held in no negative rule: it chose to keep running
// over keeping apart, and its peers leave it out (Lenient).
func Held(vmid int, tags []string, strict bool, cur []scheduler.HARule, snap scheduler.Snapshot, managed map[int]bool) []Rule {
	recorded := map[int]*scheduler.Recorded{}
	for _, g := range snap.Guests {
		if g.Recorded != nil && managed[g.VMID] {
			recorded[g.VMID] = g.Recorded
		}
	}
	var out []Rule
	for _, r := range cur {
		if r.Type != scheduler.HAResourceAffinity || !strings.HasPrefix(r.Name, Prefix) || !slices.Contains(r.VMIDs, vmid) ||
			(r.Affinity == scheduler.HANegative && !strict) {
			continue
		}
		for _, m := range r.VMIDs {
			if rec := recorded[m]; m != vmid && rec != nil && (selectsInRule(rec.Policy.VMAntiAffinity, r.Name, tags, func(sel scheduler.TagSelector) string {
				return Prefix + "apart-" + groupKey(sel)
			}) || selectsInRule(rec.Policy.VMAffinity, r.Name, tags, func(sel scheduler.TagSelector) string { return pairName(sel, m, vmid) })) {
				out = append(out, Rule{HARule: r})
				break
			}
		}
	}
	return out
}

// Lenient are the guests whose failover is preferred, as the cluster's rules show it: a
// non-strict node rule of this provider named for them. A strict VM's negative group leaves
// them out, as they leave it (Held).
func Lenient(cur []scheduler.HARule) map[int]bool {
	out := map[int]bool{}
	for _, r := range cur {
		if id, ok := strings.CutPrefix(r.Name, Prefix+"vm-"); ok && r.Type == scheduler.HANodeAffinity && !r.Strict {
			if vmid, err := strconv.Atoi(id); err == nil {
				out[vmid] = true
			}
		}
	}
	return out
}

// GroupTags are the tags, in lower case (PVE's tags are case-insensitive), that terms select
// by where they make resource-affinity rules (required, topology key node; Want, Held): a
// guest whose tags change in none of them joins or leaves none of their groups.
func GroupTags(terms ...[]scheduler.VMGroupTerm) []string {
	var out []string
	for _, list := range terms {
		for _, t := range list {
			if t.Weight != 0 || t.TopologyKey != topologyNode {
				continue
			}
			for _, tag := range slices.Concat(t.Tags, t.TagsAnyOf, t.TagsNoneOf) {
				out = append(out, strings.ToLower(tag))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// selectsInRule tells whether one of terms is a required term over nodes whose rule (named
// by name) is named and whose group holds a VM tagged tags.
func selectsInRule(terms []scheduler.VMGroupTerm, named string, tags []string, name func(scheduler.TagSelector) string) bool {
	return slices.ContainsFunc(terms, func(t scheduler.VMGroupTerm) bool {
		sel := t.Group()
		return overNodes(t) && strings.EqualFold(name(sel), named) && sel.Selects(tags)
	})
}

// termPolicy names a required VM group term as the configuration writes it.
func termPolicy(attr string, sel scheduler.TagSelector, key string) string {
	return fmt.Sprintf("required %s on tags %s with topology_key %s", attr, describe(sel), key)
}

// Node classes, PVE priorities: higher is preferred.
const (
	classHome  = 2 // the VM's own domain, or a node without another member of its group
	classOther = 1 // a domain that keeps the term (without another member, fewer members)
	classLast  = 0 // the rest of the nodes its node-level rules allow
)

// nodeClasses are the nodes the VM's node rule lists and their priorities (those not 0; nil
// for one class), by the design's table: the nodes passing its node-level rules, each in the
// lowest class a required term ranks it in. Under strict, a required term with another
// topology key keeps only its domain's nodes; a topology_spread never does (a distribution
// goal, not a pin). The domains are those of the VM's home (Home, or in.Node when Placing),
// placed its node, which is always listed and in the highest class: the HA manager must not
// move it off on its own (placement is sticky, and failback would), and brings it back there
// after a recovery. policy names what ranks or restricts the nodes, as the VM sets it.
func nodeClasses(in Input) (nodes []string, priorities map[string]int, policy, placed string) {
	rank := map[string]int{}
	for _, n := range in.PolicyNodes {
		rank[n] = classHome
	}
	policies := nodeLevelPolicy(in)
	labels := map[string]map[string]string{}
	for _, n := range in.Snap.Nodes {
		labels[n.Name] = n.Labels
	}
	home := in.Node
	if !in.Placing {
		home = Home(in.VMID, in.Node, in.Rules)
	}
	var at *scheduler.Node
	for i, n := range in.Snap.Nodes {
		if n.Name == home || at == nil && n.Name == in.Node {
			at = &in.Snap.Nodes[i]
		}
	}
	// members counts by their homes the guests of group sel other than the VM, and the
	// placements of this process not created yet (the other VMs of a count placed with it):
	// counted where they run, the classes would change with each recovery and with each
	// create of the same apply.
	members := func(sel scheduler.TagSelector) map[string]int {
		out := map[string]int{}
		// A VM the view shows twice (a guest and its reservation, a reservation from the plan
		// and from the decision) counts once, by VMID or by name; its reservation first, as
		// the scheduler does: a guest being created has no tags yet.
		seen, named := map[int]bool{in.VMID: true}, map[string]bool{in.Name: true}
		for _, r := range in.Snap.Reservations {
			if !seen[r.VMID] && !named[r.Name] && r.Node != "" && sel.Selects(r.Tags) {
				out[r.Node]++
			}
			seen[r.VMID], named[r.Name] = true, true
		}
		for _, g := range in.Snap.Guests {
			if !seen[g.VMID] && !g.Template && !g.Arriving() && sel.Selects(g.Tags) {
				out[Home(g.VMID, g.Node, in.Rules)]++
			}
			seen[g.VMID] = true
		}
		return out
	}
	// term ranks the nodes by class(node); under strict, a restricting term drops the nodes
	// it does not rank highest.
	term := func(desc, where string, restricts bool, class func(node string) int) {
		verb := "prefers"
		if in.Strict && restricts {
			verb = "stays in"
		}
		policies = append(policies, desc+": "+verb+" "+where)
		for n, r := range rank {
			c := class(n)
			if in.Strict && restricts && c < classHome {
				delete(rank, n)
			} else {
				rank[n] = min(r, c)
			}
		}
	}
	// domain is a term over key: ranks by the VM's domain D, skipped while D is unknown
	// (before the VM exists, or its node without the key).
	domain := func(key, desc string, restricts bool, class func(home string, domainOf func(string) (string, bool)) func(string) int) {
		if key == topologyNode || at == nil {
			return
		}
		home, ok := at.Labels[key]
		if !ok {
			return
		}
		domainOf := func(node string) (string, bool) { v, ok := labels[node][key]; return v, ok }
		term(desc, key+"="+home, restricts, class(home, domainOf))
	}
	if !in.Strict {
		for _, t := range in.Request.VMAntiAffinity {
			if overNodes(t) {
				count := members(t.Group())
				term(termPolicy("vm_anti_affinity", t.Group(), topologyNode), "the nodes without another member", false, func(n string) int {
					if count[n] > 0 && (at == nil || n != at.Name) {
						return classLast
					}
					return classHome
				})
			}
		}
	}
	for _, t := range in.Request.VMAntiAffinity {
		if t.Weight != 0 {
			continue
		}
		sel := t.Group()
		domain(t.TopologyKey, termPolicy("vm_anti_affinity", sel, t.TopologyKey), true, func(home string, domainOf func(string) (string, bool)) func(string) int {
			byDomain := map[string]int{}
			for n, c := range members(sel) {
				if d, ok := domainOf(n); ok {
					byDomain[d] += c
				}
			}
			return func(n string) int {
				d, ok := domainOf(n)
				switch {
				case ok && d == home:
					return classHome
				case ok && byDomain[d] == 0:
					return classOther
				}
				return classLast
			}
		})
	}
	for _, t := range in.Request.VMAffinity {
		if t.Weight == 0 {
			domain(t.TopologyKey, termPolicy("vm_affinity", t.Group(), t.TopologyKey), true, func(home string, domainOf func(string) (string, bool)) func(string) int {
				return func(n string) int {
					if d, ok := domainOf(n); ok && d == home {
						return classHome
					}
					return classLast
				}
			})
		}
	}
	for _, c := range in.Request.TopologySpread {
		if c.WhenUnsatisfiable != "DoNotSchedule" {
			continue
		}
		sel := scheduler.TagSelector{Tags: c.Tags, TagsAnyOf: c.TagsAnyOf, TagsNoneOf: c.TagsNoneOf}
		desc := fmt.Sprintf("topology_spread on tags %s with topology_key %s (DoNotSchedule)", describe(sel), c.TopologyKey)
		domain(c.TopologyKey, desc, false, func(home string, domainOf func(string) (string, bool)) func(string) int {
			byDomain := map[string]int{}
			for n, count := range members(sel) {
				if d, ok := domainOf(n); ok {
					byDomain[d] += count
				}
			}
			byDomain[home]++ // the VM itself
			return func(n string) int {
				d, ok := domainOf(n)
				switch {
				case ok && d == home:
					return classHome
				case ok && byDomain[d] < byDomain[home]:
					return classOther
				}
				return classLast
			}
		})
	}
	if at != nil {
		if !slices.Contains(in.PolicyNodes, at.Name) {
			policies = append(policies, "the node it runs on, "+at.Name+" (placement is sticky)")
		}
		rank[at.Name] = classHome
		placed = at.Name
	}
	nodes = slices.Sorted(maps.Keys(rank))
	for _, n := range nodes {
		if rank[n] != rank[nodes[0]] {
			priorities = map[string]int{}
			break
		}
	}
	for n, r := range rank {
		if priorities != nil && r != 0 {
			priorities[n] = r
		}
	}
	if len(policies) == 0 {
		policies = []string{"its node-level rules"}
	}
	return nodes, priorities, strings.Join(policies, "; "), placed
}

// placedOn ends the comment of a VM's own node rule: the node the provider placed it on, its
// home (Home).
const placedOn = ", placed on "

// Home is the node the provider placed the VM vmid on, running on node now: as its own node
// rule's comment records it; for a rule without (written by an older version), node when it
// is in the rule's highest class, else the first node of that class; without a rule, node. An
// HA recovery does not change it: the rules computed from it stay as they were, and failback
// brings the VM home.
func Home(vmid int, node string, rules []scheduler.HARule) string {
	i := slices.IndexFunc(rules, func(r scheduler.HARule) bool {
		return r.Name == NodeRuleName(vmid) && r.Type == scheduler.HANodeAffinity
	})
	if i < 0 {
		return node
	}
	if _, h, ok := strings.Cut(rules[i].Comment, placedOn); ok && h != "" {
		return h
	}
	if top := TopClass(rules[i]); len(top) > 0 && !slices.Contains(top, node) {
		return top[0]
	}
	return node
}

// domainKeys are the topology keys other than node of req's required terms, each with the
// terms that need it as the configuration writes them: the VM's node rule keeps it in the
// domain of its node for each.
func domainKeys(req scheduler.Request) map[string][]string {
	keys := map[string][]string{}
	terms := func(list []scheduler.VMGroupTerm, attr string) {
		for _, t := range list {
			if t.Weight == 0 && t.TopologyKey != topologyNode {
				keys[t.TopologyKey] = append(keys[t.TopologyKey], termPolicy(attr, t.Group(), t.TopologyKey))
			}
		}
	}
	terms(req.VMAffinity, "vm_affinity")
	terms(req.VMAntiAffinity, "vm_anti_affinity")
	for _, c := range req.TopologySpread {
		if c.WhenUnsatisfiable == "DoNotSchedule" && c.TopologyKey != topologyNode {
			sel := scheduler.TagSelector{Tags: c.Tags, TagsAnyOf: c.TagsAnyOf, TagsNoneOf: c.TagsNoneOf}
			keys[c.TopologyKey] = append(keys[c.TopologyKey],
				fmt.Sprintf("topology_spread on tags %s with topology_key %s (DoNotSchedule)", describe(sel), c.TopologyKey))
		}
	}
	return keys
}

// Lost is a node of a VM's current node rule that no longer has a topology key the rule
// keeps the VM's domain by.
type Lost struct {
	Node, Key string
	// Rule is the current rule's id; Policy the VM's terms that need the key.
	Rule, Policy string
	// Value is the key's value on the rule's other nodes, "" when none has it.
	Value string
	// VMNode says Node is where the VM runs: written anew, the rule would hold no domain and
	// list every node, rather than leave Node out.
	VMNode bool
}

// LostKeys are the nodes of the VM's current node rule in cur (the provider's node-affinity
// rule holding in.VMID), in its highest priority class (TopClass), that are online and have no value for a key of its required terms
// (domainKeys), while the rule is narrower than its node-level rules (in.PolicyNodes): a rule
// of a domain. Computed anew, such a rule would leave the node out of every domain, or, when
// it is the VM's node, hold no domain at all and list every node: a Notes typo or a removed
// label must not widen a rule silently (design-failover §3). An offline node is left out: its
// Notes cannot be read, so a missing label says nothing about it. A rule as wide as the
// node-level rules was not made for a domain (the VM runs on a node without the key, which a
// vm_anti_affinity allows): its nodes lose nothing.
func LostKeys(in Input, cur []scheduler.HARule) []Lost {
	keys := domainKeys(in.Request)
	if len(keys) == 0 {
		return nil
	}
	online := map[string]*scheduler.Node{}
	for i, n := range in.Snap.Nodes {
		if n.Online {
			online[n.Name] = &in.Snap.Nodes[i]
		}
	}
	var out []Lost
	for _, r := range cur {
		home := TopClass(r)
		if r.Type != scheduler.HANodeAffinity || !strings.HasPrefix(r.Name, Prefix) || !slices.Contains(r.VMIDs, in.VMID) ||
			!slices.ContainsFunc(in.PolicyNodes, func(n string) bool { return !slices.Contains(home, n) }) {
			continue
		}
		for _, key := range slices.Sorted(maps.Keys(keys)) {
			value := ""
			for _, name := range home {
				if n := online[name]; n != nil {
					if v, ok := n.Labels[key]; ok {
						value = v
					}
				}
			}
			for _, name := range home {
				if n := online[name]; n != nil {
					if _, ok := n.Labels[key]; !ok {
						out = append(out, Lost{Node: name, Key: key, Rule: r.Name, Policy: strings.Join(slices.Compact(keys[key]), ", "), Value: value, VMNode: name == in.Node})
					}
				}
			}
		}
	}
	return out
}

// TopClass are the nodes of a node rule in its highest priority class: all of them for a rule
// of one class. For the VM's own rule they are its home domain (nodeClasses).
func TopClass(r scheduler.HARule) []string {
	top := 0
	for _, n := range r.Nodes {
		top = max(top, r.Priorities[n])
	}
	return slices.DeleteFunc(slices.Clone(r.Nodes), func(n string) bool { return r.Priorities[n] != top })
}

// nodeLevelPolicy names the node-level rules that keep the VM off a node (NodeRuleNodes), as
// the VM sets them: its node_selector, required node_affinity terms and node regex
// annotation, and for a node left out that these pass, a taint it does not tolerate or too
// few CPUs.
func nodeLevelPolicy(in Input) []string {
	req := in.Request
	var out []string
	if len(req.NodeSelector) > 0 {
		pairs := make([]string, 0, len(req.NodeSelector))
		for _, k := range slices.Sorted(maps.Keys(req.NodeSelector)) {
			pairs = append(pairs, fmt.Sprintf("%s = %q", k, req.NodeSelector[k]))
		}
		out = append(out, "node_selector = { "+strings.Join(pairs, ", ")+" }")
	}
	for _, t := range req.NodeAffinity {
		if t.Weight == 0 {
			out = append(out, "required node_affinity "+nodelabels.FormatAffinity(t))
		}
	}
	if re, ok := req.Annotations[scheduler.AnnotationNodeRegex]; ok {
		out = append(out, fmt.Sprintf("annotation %s = %q", scheduler.AnnotationNodeRegex, re))
	}
	vcpus := max(req.Cores, 1) * max(req.Sockets, 1)
	for _, n := range in.Snap.Nodes {
		if slices.Contains(in.PolicyNodes, n.Name) || !namesPass(req, n) {
			continue
		}
		for _, t := range n.Taints {
			if (t.Effect == nodelabels.NoSchedule || t.Effect == nodelabels.NoExecute) &&
				!strings.HasPrefix(t.Key, nodelabels.ReservedPrefix) && !nodelabels.Tolerated(req.Tolerations, t) {
				out = append(out, fmt.Sprintf("no toleration for taint %s of %s", nodelabels.FormatTaint(t), n.Name))
			}
		}
		if n.MaxCPU > 0 && vcpus > n.MaxCPU {
			out = append(out, fmt.Sprintf("%d vCPUs, more than the %d CPUs of %s", vcpus, n.MaxCPU, n.Name))
		}
	}
	return out
}

// namesPass tells whether node n passes req's rules on its labels and name: node selector,
// required node affinity and node regex (matching the whole name, as the filter does).
func namesPass(req scheduler.Request, n scheduler.Node) bool {
	for k, v := range req.NodeSelector {
		if n.Labels[k] != v {
			return false
		}
	}
	for _, t := range req.NodeAffinity {
		if t.Weight == 0 && !nodelabels.MatchAffinity(n.Labels, t) {
			return false
		}
	}
	re, err := regexp.Compile(`^(?:` + req.Annotations[scheduler.AnnotationNodeRegex] + `)$`)
	_, set := req.Annotations[scheduler.AnnotationNodeRegex]
	return !set || err != nil || re.MatchString(n.Name)
}

// NodeRuleNodes are the nodes that pass req's node-level rules (node selector, required node
// affinity, untolerated NoSchedule and NoExecute taints, the node regex annotation) and could
// take its vCPUs empty (PVE starts no VM with more vCPUs than its node has CPUs) under
// profile, whatever runs on them and whether they are up: the nodes a failover may use. The
// built-in taints of a node's passing state (maintenance, fenced) are left out: a rule must
// not follow them.
func NodeRuleNodes(profile *scheduler.Profile, snap scheduler.Snapshot, req scheduler.Request) []string {
	// Its vCPUs count as on an empty node (CPUOvercommit): a node with fewer CPUs can never
	// start it. Its memory does not count.
	only := scheduler.Request{Name: req.Name, NodeSelector: req.NodeSelector, Tolerations: req.Tolerations, Cores: req.Cores, Sockets: req.Sockets}
	for _, t := range req.NodeAffinity {
		if t.Weight == 0 {
			only.NodeAffinity = append(only.NodeAffinity, t)
		}
	}
	if re, ok := req.Annotations[scheduler.AnnotationNodeRegex]; ok {
		only.Annotations = map[string]string{scheduler.AnnotationNodeRegex: re}
	}
	bare := scheduler.Snapshot{Nodes: make([]scheduler.Node, len(snap.Nodes))}
	for i, n := range snap.Nodes {
		n.Online, n.CPU, n.Mem, n.HAState = true, 0, 0, ""
		n.MaxCPU, n.MaxMem = max(n.MaxCPU, 1), max(n.MaxMem, 1)
		n.Taints = slices.DeleteFunc(slices.Clone(n.Taints), func(t scheduler.Taint) bool {
			return strings.HasPrefix(t.Key, nodelabels.ReservedPrefix)
		})
		bare.Nodes[i] = n
	}
	checker := profile.NewChecker(&bare)
	var out []string
	for _, n := range bare.Nodes {
		if len(checker.Check(only, n.Name, 0)) == 0 {
			out = append(out, n.Name)
		}
	}
	return out
}

// describe shows a group's selector: its tags, then "any of" and "none of" parts when set.
func describe(s scheduler.TagSelector) string {
	parts := []string{strings.Join(s.Tags, ",")}
	if len(s.TagsAnyOf) > 0 {
		parts = append(parts, "any of "+strings.Join(s.TagsAnyOf, ","))
	}
	if len(s.TagsNoneOf) > 0 {
		parts = append(parts, "none of "+strings.Join(s.TagsNoneOf, ","))
	}
	return strings.TrimSpace(strings.Join(parts, " "))
}

var notID = regexp.MustCompile(`[^a-z0-9_-]+`)

// groupKey names a group in a rule id: its tags, lowercased and sorted, joined by "_", then
// "-any-" and "-none-" with those of a selector's other parts; a hash of the whole follows
// when a tag had to be changed to fit an id.
func groupKey(s scheduler.TagSelector) string {
	norm := func(tags []string) string {
		lower := make([]string, len(tags))
		for i, t := range tags {
			lower[i] = strings.ToLower(t)
		}
		sort.Strings(lower)
		return strings.Join(lower, "_")
	}
	joined := norm(s.Tags)
	if len(s.TagsAnyOf) > 0 {
		joined += "-any-" + norm(s.TagsAnyOf)
	}
	if len(s.TagsNoneOf) > 0 {
		joined += "-none-" + norm(s.TagsNoneOf)
	}
	joined = strings.TrimPrefix(joined, "-")
	key := notID.ReplaceAllString(joined, "_")
	if key != joined || len(key) > 64 {
		sum := sha1.Sum([]byte(joined))
		key = key[:min(len(key), 48)] + "-" + hex.EncodeToString(sum[:4])
	}
	return key
}

// NoTarget warns of the rules of want that leave the VM vmid (name) no node to fail over to,
// with nodes eligible for it (NodeRuleNodes): a strict node rule with one node that is up, or
// a negative rule with as many members as eligible nodes. Non-strict rules never do: PVE then
// runs the VM on any node.
func NoTarget(vmid int, name string, want []Rule, snap scheduler.Snapshot, eligible []string) []string {
	online := map[string]bool{}
	for _, n := range snap.Nodes {
		online[n.Name] = n.Online
	}
	vm := fmt.Sprintf("VM %s (%d)", name, vmid)
	var out []string
	for _, r := range want {
		switch {
		case r.Type == scheduler.HANodeAffinity && r.Strict:
			up := slices.DeleteFunc(slices.Clone(r.Nodes), func(n string) bool { return !online[n] })
			if len(up) == 1 {
				out = append(out, fmt.Sprintf("HA rule %s (strict node affinity, keeping %s) leaves %s one usable node, %s: if %s fails, "+
					"the HA manager keeps the VM down (recovery) until %s is back", r.Name, r.Policy, vm, up[0], up[0], up[0]))
			}
		case r.Type == scheduler.HAResourceAffinity && r.Affinity == scheduler.HANegative && len(r.VMIDs) >= len(eligible):
			out = append(out, fmt.Sprintf("HA rule %s (negative resource affinity) holds %d VMs apart on the %d nodes eligible for %s: "+
				"if the node of one of them fails, that VM stays down (recovery) until the node is back", r.Name, len(r.VMIDs), len(eligible), vm))
		}
	}
	return out
}

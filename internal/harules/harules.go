// Package harules computes the PVE 9 HA rules that make the HA manager honour a VM's hard
// placement rules (design-guarantees §2), the changes that bring the cluster's rules there,
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
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/nodelabels"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
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
	// Node is where the VM runs ("" before it exists): the domain its other-topology terms
	// keep it in.
	Node    string
	Request scheduler.Request
	Snap    scheduler.Snapshot
	// Managed are the guests the HA manager acts on (HA resources not ignored), the VM
	// itself included or not.
	Managed map[int]bool
	// PolicyNodes are the nodes that pass the VM's node-level rules (NodeRuleNodes).
	PolicyNodes []string
}

// Want is the rules the VM must be in: a resource-affinity rule per required VM (anti-)
// affinity term with topology key node, over the term's HA-managed group and the VM, once
// that makes two; and one strict node-affinity rule listing the nodes its node-level rules
// and its other required terms allow, none when that is every node. A VM with a required
// vm_affinity term over nodes shares that node rule with its group (PVE allows a positive
// group in one node rule only, and extends it to every member), from its first member on, so
// that members written at the same time meet in one rule. Sorted by id.
func Want(in Input) []Rule {
	var out []Rule
	add := func(r Rule) {
		if !slices.ContainsFunc(out, func(o Rule) bool { return o.Name == r.Name }) {
			out = append(out, r)
		}
	}
	terms := func(list []scheduler.VMGroupTerm, affinity, attr, verb string) {
		for _, t := range list {
			sel := t.Group()
			if t.Weight != 0 || t.TopologyKey != topologyNode || len(sel.Tags)+len(sel.TagsAnyOf) == 0 {
				continue
			}
			members := []int{in.VMID}
			var cts []int
			for _, g := range in.Snap.Guests {
				if g.VMID != in.VMID && in.Managed[g.VMID] && sel.Selects(g.Tags) && !slices.Contains(members, g.VMID) {
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
			add(Rule{HARule: scheduler.HARule{Name: Prefix + verb + "-" + groupKey(sel), Type: scheduler.HAResourceAffinity, Affinity: affinity,
				VMIDs: members, CTs: cts, Comment: fmt.Sprintf("qemuscheduler: VMs tagged %s %s (required %s)", describe(sel), verb, attr)},
				Policy: termPolicy(attr, sel, topologyNode)})
		}
	}
	terms(in.Request.VMAntiAffinity, scheduler.HANegative, "vm_anti_affinity", "apart")
	terms(in.Request.VMAffinity, scheduler.HAPositive, "vm_affinity", "together")
	if nodes, policy := nodeRuleNodes(in); len(nodes) < len(in.Snap.Nodes) {
		rule := Rule{HARule: scheduler.HARule{Name: NodeRuleName(in.VMID), Type: scheduler.HANodeAffinity, Strict: true,
			VMIDs: []int{in.VMID}, Nodes: nodes, Comment: fmt.Sprintf("qemuscheduler: VM %s (%d) on the nodes its rules allow", in.Name, in.VMID)},
			Policy: policy}
		if i := slices.IndexFunc(in.Request.VMAffinity, func(t scheduler.VMGroupTerm) bool {
			sel := t.Group()
			return t.Weight == 0 && t.TopologyKey == topologyNode && len(sel.Tags)+len(sel.TagsAnyOf) > 0
		}); i >= 0 {
			sel := in.Request.VMAffinity[i].Group()
			rule.Name, rule.Shared = Prefix+"together-"+groupKey(sel)+"-nodes", true
			rule.Comment = fmt.Sprintf("qemuscheduler: VMs tagged %s together (required vm_affinity) on the nodes all their rules allow", describe(sel))
		}
		add(rule)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Held are the rules among cur that hold the VM vmid, tagged tags, because a peer keeps it
// there: an HA-managed member of the rule whose placement record holds the required term over
// nodes that made the rule and selects the VM (kube's symmetry: an existing pod's anti-affinity
// binds the pods it selects). The VM does not leave them for lack of such a term of its own;
// else the peer's next apply would put it back, and its own take it out again.
func Held(vmid int, tags []string, cur []scheduler.HARule, snap scheduler.Snapshot, managed map[int]bool) []Rule {
	recorded := map[int]*scheduler.Recorded{}
	for _, g := range snap.Guests {
		if g.Recorded != nil && managed[g.VMID] {
			recorded[g.VMID] = g.Recorded
		}
	}
	var out []Rule
	for _, r := range cur {
		if r.Type != scheduler.HAResourceAffinity || !strings.HasPrefix(r.Name, Prefix) || !slices.Contains(r.VMIDs, vmid) {
			continue
		}
		for _, m := range r.VMIDs {
			if rec := recorded[m]; m != vmid && rec != nil && (selectsInRule(rec.Policy.VMAntiAffinity, "apart", r.Name, tags) ||
				selectsInRule(rec.Policy.VMAffinity, "together", r.Name, tags)) {
				out = append(out, Rule{HARule: r})
				break
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

// selectsInRule tells whether one of terms is a required term over nodes whose rule is named
// name (verb apart or together) and whose group holds a VM tagged tags.
func selectsInRule(terms []scheduler.VMGroupTerm, verb, name string, tags []string) bool {
	return slices.ContainsFunc(terms, func(t scheduler.VMGroupTerm) bool {
		sel := t.Group()
		return t.Weight == 0 && t.TopologyKey == topologyNode && strings.EqualFold(Prefix+verb+"-"+groupKey(sel), name) && sel.Selects(tags)
	})
}

// termPolicy names a required VM group term as the configuration writes it.
func termPolicy(attr string, sel scheduler.TagSelector, key string) string {
	return fmt.Sprintf("required %s on tags %s with topology_key %s", attr, describe(sel), key)
}

// nodeRuleNodes are the nodes the VM's node rule lists: those passing its node-level rules,
// within the domain of its node for every required term with another topology key, and the
// node it runs on. policy names what restricts them, as the VM sets it.
func nodeRuleNodes(in Input) ([]string, string) {
	nodes := slices.Clone(in.PolicyNodes)
	policy := nodeLevelPolicy(in)
	var at *scheduler.Node
	for i := range in.Snap.Nodes {
		if in.Snap.Nodes[i].Name == in.Node {
			at = &in.Snap.Nodes[i]
		}
	}
	keys := domainKeys(in.Request)
	for _, key := range slices.Sorted(maps.Keys(keys)) {
		v, ok := "", false
		if at != nil {
			v, ok = at.Labels[key]
		}
		if !ok {
			continue
		}
		policy = append(policy, fmt.Sprintf("%s: stays in %s=%s", strings.Join(slices.Compact(keys[key]), ", "), key, v))
		nodes = slices.DeleteFunc(nodes, func(name string) bool {
			for _, n := range in.Snap.Nodes {
				if n.Name == name {
					return n.Labels[key] != v
				}
			}
			return true
		})
	}
	// Placement is sticky (kube's IgnoredDuringExecution): the node the VM runs on stays in
	// its rule when its rules no longer pass there (a changed node_selector, a new taint), or
	// the HA manager would move it off that node on its own, which no plan showed.
	if at != nil && !slices.Contains(nodes, at.Name) {
		nodes = append(nodes, at.Name)
		policy = append(policy, "the node it runs on, "+at.Name+" (placement is sticky)")
	}
	sort.Strings(nodes)
	if len(policy) == 0 {
		policy = []string{"its node-level rules"}
	}
	return nodes, strings.Join(policy, "; ")
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
// rule holding in.VMID) that are online and have no value for a key of its required terms
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
		if r.Type != scheduler.HANodeAffinity || !strings.HasPrefix(r.Name, Prefix) || !slices.Contains(r.VMIDs, in.VMID) ||
			!slices.ContainsFunc(in.PolicyNodes, func(n string) bool { return !slices.Contains(r.Nodes, n) }) {
			continue
		}
		for _, key := range slices.Sorted(maps.Keys(keys)) {
			value := ""
			for _, name := range r.Nodes {
				if n := online[name]; n != nil {
					if v, ok := n.Labels[key]; ok {
						value = v
					}
				}
			}
			for _, name := range r.Nodes {
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

package plugins

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// TopologyNode is the topology key that makes every node its own domain; any other key is a
// node label, and the nodes sharing its value form one domain.
const TopologyNode = "node"

// ProxLB tag prefixes (ProxLB matches them case-sensitively with startswith; the whole tag is
// the group, and a pin names its node after the prefix).
const (
	proxLBAffinity     = "plb_affinity"
	proxLBAntiAffinity = "plb_anti_affinity"
	proxLBPin          = "plb_pin_"
)

// ProxLBTagsArg is the arg of both VMAffinity plugins that turns ProxLB tags off ("false");
// the provider's honor_proxlb_tags sets it through ProxLBConfig.
const ProxLBTagsArg = "proxlb_tags"

// ProxLBConfig is the plugin config layer of the switch honor_proxlb_tags: nothing when the
// tags are honoured (the default), else the arg that turns them off in both VMAffinity plugins.
func ProxLBConfig(honor bool) scheduler.PluginConfig {
	if honor {
		return scheduler.PluginConfig{}
	}
	off := scheduler.PluginSetting{Args: map[string]string{ProxLBTagsArg: "false"}}
	return scheduler.PluginConfig{
		Filters: map[string]scheduler.PluginSetting{VMAffinityName: off},
		Scores:  map[string]scheduler.PluginSetting{VMAffinityName: off},
	}
}

// parseProxLBArg reads proxlb_tags: true (the default) or false.
func parseProxLBArg(args map[string]string) (bool, error) {
	s, ok := args[ProxLBTagsArg]
	if !ok {
		return true, nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("arg %s must be true or false, got %q", ProxLBTagsArg, s)
	}
	return v, nil
}

// domainOf is the node's domain under key; ok is false when the node lacks the label and so
// belongs to no domain.
func domainOf(n *scheduler.Node, key string) (string, bool) {
	if key == TopologyNode {
		return n.Name, true
	}
	v, ok := n.Labels[key]
	return v, ok
}

// offlineNoKey is the rejection of an offline node without the topology key: its labels from
// Notes cannot be read while it is offline, so no reason may say it has none.
func offlineNoKey(plugin string, n *scheduler.Node, key string) *scheduler.Rejection {
	return &scheduler.Rejection{Reason: fmt.Sprintf("%s: %s is offline, so its label %s is not known", plugin, n.Name, key), Group: "were offline"}
}

// domainName shows a domain in a reason: the node name for "node", else key=value.
func domainName(key, domain string) string {
	if key == TopologyNode {
		return domain
	}
	return key + "=" + domain
}

// DescribeGroup shows a selector in reasons: "[web]" for tags alone, else with "any of [a b]"
// and "none of [c]".
func DescribeGroup(s scheduler.TagSelector) string {
	var parts []string
	if len(s.Tags) > 0 || len(s.TagsAnyOf)+len(s.TagsNoneOf) == 0 {
		parts = append(parts, fmt.Sprint(s.Tags))
	}
	if len(s.TagsAnyOf) > 0 {
		parts = append(parts, fmt.Sprint("any of ", s.TagsAnyOf))
	}
	if len(s.TagsNoneOf) > 0 {
		parts = append(parts, fmt.Sprint("none of ", s.TagsNoneOf))
	}
	return strings.Join(parts, " ")
}

// groupKey identifies a selector in the request's state, case folded as tags compare.
func groupKey(s scheduler.TagSelector) string {
	return strings.ToLower(strings.Join(s.Tags, "\x00") + "\x01" + strings.Join(s.TagsAnyOf, "\x00") + "\x01" + strings.Join(s.TagsNoneOf, "\x00"))
}

// listedIDs bounds the ids a reason lists.
const listedIDs = 5

// members is a set of guests of one group: how many, and the first few for reasons (an
// array, so that counting allocates nothing per node).
type members struct {
	count int
	first [listedIDs]*scheduler.Guest
}

func (m *members) add(g *scheduler.Guest) {
	if m.count < listedIDs {
		m.first[m.count] = g
	}
	m.count++
}

// merge adds another set's members.
func (m *members) merge(o *members) {
	for i := 0; i < min(o.count, listedIDs) && m.count+i < listedIDs; i++ {
		m.first[m.count+i] = o.first[i]
	}
	m.count += o.count
}

// String lists the ids, an assumed guest marked as in flight when this process creates it,
// else as planned (placed earlier in the same plan or decision), and a guest being migrated
// to the node as migrating here: "1001, 1002 (in flight), 1003 (planned), 1004 (migrating
// here)".
func (m *members) String() string {
	listed := min(m.count, listedIDs)
	ids := make([]string, listed)
	for i, g := range m.first[:listed] {
		ids[i] = strconv.Itoa(g.VMID)
		switch {
		case g.Creating:
			ids[i] += " (in flight)"
		case g.Assumed:
			ids[i] += " (planned)"
		case g.Arriving():
			ids[i] += " (migrating here)"
		}
	}
	s := strings.Join(ids, ", ")
	if more := m.count - listed; more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// groupMembers is one group's members per node of the view: every non-template guest the
// selector picks, stopped and assumed guests included.
type groupMembers struct {
	total   int
	perNode []members
}

// membersOf walks the guests once per group and request, whatever the topology keys; the
// result is kept in the request's state.
func membersOf(state *scheduler.CycleState, nodes []*scheduler.NodeInfo, group scheduler.TagSelector) *groupMembers {
	cacheKey := "members\x00" + groupKey(group)
	if v, ok := state.Read(cacheKey); ok {
		return v.(*groupMembers)
	}
	gm := &groupMembers{perNode: make([]members, len(nodes))}
	for i, ni := range nodes {
		for _, g := range ni.Guests {
			if !g.Template && group.Selects(g.Tags) {
				gm.perNode[i].add(g)
			}
		}
		gm.total += gm.perNode[i].count
	}
	state.Write(cacheKey, gm)
	return gm
}

// groupCounts is where the members of one group sit, by domain of one topology key.
type groupCounts struct {
	key string
	// total counts members anywhere, on nodes without the key too.
	total    int
	byDomain map[string]*members
	// domains is the number of domains among all nodes, members or not; occupied those
	// holding a member.
	domains, occupied int
}

// in returns the members in the node's domain (0 for a node without the key).
func (c *groupCounts) in(n *scheduler.Node) int {
	d, ok := domainOf(n, c.key)
	if !ok {
		return 0
	}
	if m := c.byDomain[d]; m != nil {
		return m.count
	}
	return 0
}

// holds returns the members in domain d, nil when it holds none.
func (c *groupCounts) holds(d string) *members {
	if m := c.byDomain[d]; m != nil && m.count > 0 {
		return m
	}
	return nil
}

// countGroup sums the group's members per domain of key, once per request: the result is
// kept in the request's state, so every plugin and every node reuses it.
func countGroup(state *scheduler.CycleState, nodes []*scheduler.NodeInfo, group scheduler.TagSelector, key string) *groupCounts {
	cacheKey := "groups\x00" + key + "\x00" + groupKey(group)
	if v, ok := state.Read(cacheKey); ok {
		return v.(*groupCounts)
	}
	gm := membersOf(state, nodes, group)
	c := &groupCounts{key: key, total: gm.total, byDomain: make(map[string]*members, len(nodes))}
	for i, ni := range nodes {
		d, ok := domainOf(ni.Node, key)
		if !ok {
			continue
		}
		m, seen := c.byDomain[d]
		if !seen {
			c.domains++
			if key == TopologyNode {
				// A node is its own domain: share its set rather than copy it.
				c.byDomain[d] = &gm.perNode[i]
				continue
			}
			m = &members{}
			c.byDomain[d] = m
		}
		m.merge(&gm.perNode[i])
	}
	for _, m := range c.byDomain {
		if m.count > 0 {
			c.occupied++
		}
	}
	state.Write(cacheKey, c)
	return c
}

// guests says "1 guest" or "3 guests".
func guests(n int) string {
	if n == 1 {
		return "1 guest"
	}
	return fmt.Sprintf("%d guests", n)
}

// proxLBTerms turns the request's ProxLB tags into preferred terms by node: plb_affinity* keeps
// the VM with the other guests carrying that tag, plb_anti_affinity* away from them.
func proxLBTerms(r *scheduler.Request) (affinity, anti []scheduler.VMGroupTerm) {
	for _, t := range r.Tags {
		switch {
		case strings.HasPrefix(t, proxLBAntiAffinity):
			anti = append(anti, scheduler.VMGroupTerm{Tags: []string{t}, TopologyKey: TopologyNode, Weight: 100})
		case strings.HasPrefix(t, proxLBAffinity):
			affinity = append(affinity, scheduler.VMGroupTerm{Tags: []string{t}, TopologyKey: TopologyNode, Weight: 100})
		}
	}
	return affinity, anti
}

// proxLBPins lists the nodes the request's plb_pin_<node> tags allow; nil when it has none.
func proxLBPins(r *scheduler.Request) []string {
	var pins []string
	for _, t := range r.Tags {
		if node, ok := strings.CutPrefix(t, proxLBPin); ok && node != "" {
			pins = append(pins, node)
		}
	}
	return pins
}

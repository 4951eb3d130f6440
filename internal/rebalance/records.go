package rebalance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/plugins"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// profileOf is the scheduler a guest is checked under: the profile its record names, else the
// data source's. A profile the provider does not define is warned about once and the data
// source's is used.
func (p *planner) profileOf(g *scheduler.Guest) *scheduler.Profile {
	if g.Recorded == nil || p.in.Profiles == nil {
		return p.in.Profile
	}
	name := g.Recorded.Profile
	if prof, ok := p.profiles[name]; ok {
		return prof
	}
	prof, err := p.in.Profiles(name)
	if err != nil {
		p.plan.Warnings = append(p.plan.Warnings, fmt.Sprintf("VM %d (%s): its placement record names profile %q: %v; it is checked under the data source's profile.",
			g.VMID, g.Name, name, err))
		prof = p.in.Profile
	}
	p.profiles[name] = prof
	return prof
}

// budgetGroups are the required anti-affinity and spread groups of the guest's policy that the
// guest is a member of: the groups whose availability its move takes from.
func budgetGroups(g *scheduler.Guest, req scheduler.Request) []string {
	var keys []string
	add := func(group scheduler.TagSelector) {
		if !group.Selects(g.Tags) {
			return
		}
		key := plugins.DescribeGroup(normalGroup(group))
		if !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	for _, t := range req.VMAntiAffinity {
		if t.Weight == 0 {
			add(t.Group())
		}
	}
	for _, c := range req.TopologySpread {
		add(c.Group())
	}
	return keys
}

// normalGroup writes a selector's tags lowercased and sorted, as PVE compares tags, so that
// one group has one name.
func normalGroup(s scheduler.TagSelector) scheduler.TagSelector {
	norm := func(tags []string) []string {
		out := make([]string, len(tags))
		for i, t := range tags {
			out[i] = strings.ToLower(t)
		}
		slices.Sort(out)
		return out
	}
	return scheduler.TagSelector{Tags: norm(s.Tags), TagsAnyOf: norm(s.TagsAnyOf), TagsNoneOf: norm(s.TagsNoneOf)}
}

// overBudget says why the guest may not move because a group of its has used its disruption
// budget in this plan, or "" when none has.
func (p *planner) overBudget(g *scheduler.Guest, req scheduler.Request) string {
	if p.in.MaxMovesPerGroup <= 0 {
		return ""
	}
	for _, key := range budgetGroups(g, req) {
		if n := p.groupMoves[key]; n >= p.in.MaxMovesPerGroup {
			return fmt.Sprintf("max_moves_per_group (%d) reached for the group tagged %s: this plan already moves %d of its members",
				p.in.MaxMovesPerGroup, key, n)
		}
	}
	return ""
}

package plugins

import (
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// zoned is a node with a zone label ("" = no label).
func zoned(name, zone string) scheduler.Node {
	n := node(name, 8, 32)
	if zone != "" {
		n.Labels = map[string]string{"zone": zone}
	}
	return n
}

// tagged is a running guest with tags.
func tagged(vmid int, nodeName string, tags ...string) scheduler.Guest {
	g := running(vmid, nodeName, 1, 1)
	g.Tags = tags
	return g
}

// verdicts is filterVerdicts for a filter whose pre-step cannot fail.
func verdicts(t *testing.T, f scheduler.FilterPlugin, r *scheduler.Request, nodes []*scheduler.NodeInfo) map[string]string {
	t.Helper()
	out, err := filterVerdicts(f, r, nodes)
	if err != nil {
		t.Fatalf("PreFilter: %v", err)
	}
	return out
}

func TestCountGroupOncePerRequest(t *testing.T) {
	nodes := []scheduler.Node{zoned("pve1", "a"), zoned("pve2", "a"), zoned("pve3", "b"), zoned("pve4", "")}
	stopped := tagged(104, "pve3", "web", "prod")
	stopped.Status = "stopped"
	tmpl := tagged(105, "pve3", "web", "prod")
	tmpl.Template = true
	guests := []scheduler.Guest{
		tagged(101, "pve1", "WEB", "prod"), // PVE tags are case-insensitive
		tagged(102, "pve2", "web"),         // lacks prod: not a member
		tagged(103, "pve4", "web", "prod"), // a member on a node in no zone
		stopped, tmpl,
	}
	ns := infos(nodes, guests...)
	ns[1].Guests = append(ns[1].Guests, &scheduler.Guest{VMID: 106, Node: "pve2", Tags: []string{"web", "prod"}, Assumed: true, Creating: true})
	state := scheduler.NewCycleState()
	c := countGroup(state, ns, scheduler.TagSelector{Tags: []string{"web", "prod"}}, "zone")
	if c.total != 4 || c.domains != 2 || c.in(&nodes[0]) != 2 || c.in(&nodes[2]) != 1 {
		t.Fatalf("counts: total %d, domains %d, a %+v, b %+v", c.total, c.domains, c.byDomain["a"], c.byDomain["b"])
	}
	if got := c.byDomain["a"].String(); got != "101, 106 (in flight)" {
		t.Errorf("members of zone a = %q", got)
	}
	if c.in(ns[3].Node) != 0 {
		t.Error("a node without the key counts members")
	}
	// Same group, tags in another case: the request's state answers without counting again.
	if again := countGroup(state, nil, scheduler.TagSelector{Tags: []string{"WEB", "PROD"}}, "zone"); again != c {
		t.Error("the group was counted twice for one request")
	}
}

func TestDomainMembersListsFewIDs(t *testing.T) {
	nodes := []scheduler.Node{node("pve1", 8, 32)}
	var guests []scheduler.Guest
	for id := 100; id < 108; id++ {
		guests = append(guests, tagged(id, "pve1", "web"))
	}
	c := countGroup(scheduler.NewCycleState(), infos(nodes, guests...), scheduler.TagSelector{Tags: []string{"web"}}, TopologyNode)
	if got := c.byDomain["pve1"].String(); got != "100, 101, 102, 103, 104 and 3 more" {
		t.Errorf("got %q", got)
	}
}

func TestProxLBTagsBecomeTerms(t *testing.T) {
	r := request("a")
	r.Tags = []string{"plb_affinity_db", "plb_anti_affinity_web", "plb_pin_pve1", "plb_pin_pve3", "plb_pin_", "plain"}
	aff, anti := proxLBTerms(&r)
	if len(aff) != 1 || aff[0].Tags[0] != "plb_affinity_db" || aff[0].Weight != 100 || aff[0].TopologyKey != TopologyNode {
		t.Errorf("affinity terms %+v", aff)
	}
	if len(anti) != 1 || anti[0].Tags[0] != "plb_anti_affinity_web" || anti[0].Weight != 100 {
		t.Errorf("anti-affinity terms %+v", anti)
	}
	if pins := proxLBPins(&r); len(pins) != 2 || pins[0] != "pve1" || pins[1] != "pve3" {
		t.Errorf("pins %v", pins)
	}
	if _, err := parseProxLBArg(map[string]string{ProxLBTagsArg: "maybe"}); err == nil {
		t.Error("a bad proxlb_tags arg is accepted")
	}
}

package pvesim_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

func TestHARulesAnswerAsPVE9(t *testing.T) {
	c := pvesim.Cluster{
		Nodes:  []pvesim.NodeSpec{{Name: "pve1", CPUs: 4, MemoryGiB: 8}, {Name: "pve2", CPUs: 4, MemoryGiB: 8}},
		Guests: []pvesim.GuestSpec{{VMID: 100, Node: "pve1"}, {VMID: 101, Node: "pve2"}},
		HARules: []pvesim.HARuleSpec{
			{Rule: "pin", Type: "node-affinity", Resources: []string{"vm:101", "vm:100"}, Nodes: []string{"pve2:2", "pve1:0"}, Strict: true},
			{Rule: "apart", Type: "resource-affinity", Affinity: "negative", Resources: []string{"vm:100", "vm:101"}, Disable: true},
		},
	}
	a := newAPI(t, pvesim.NewTestServer(t, c))
	rows := a.get("/cluster/ha/rules").list()
	if len(rows) != 2 {
		t.Fatalf("rows %v", rows)
	}
	pin, apart := rows[0], rows[1]
	if pin["resources"] != "vm:100,vm:101" || pin["nodes"] != "pve1,pve2:2" || pin["strict"] != float64(1) || pin["order"] != float64(1) {
		t.Fatalf("node-affinity row %v: resources and nodes sorted, priority 0 bare, strict 1, order 1", pin)
	}
	if _, ok := apart["strict"]; ok || apart["disable"] != float64(1) || apart["affinity"] != "negative" || apart["digest"] != pin["digest"] {
		t.Fatalf("resource-affinity row %v: no strict, disable 1, the file's digest", apart)
	}
	if rows := a.get("/cluster/ha/rules?type=resource-affinity").list(); len(rows) != 1 || rows[0]["rule"] != "apart" {
		t.Fatalf("type filter: %v", rows)
	}
}

func TestHARulesAbsentOnPVE8(t *testing.T) {
	a := newAPI(t, pvesim.NewTestServer(t, pvesim.Cluster{Nodes: []pvesim.NodeSpec{{Name: "pve1", CPUs: 4, MemoryGiB: 8}}}))
	if r := a.get("/cluster/ha/rules"); r.code != http.StatusNotImplemented || !strings.Contains(r.status, "not implemented") {
		t.Fatalf("PVE 8 answers %d %q, want 501 not implemented", r.code, r.status)
	}
}

func TestHARulesValidated(t *testing.T) {
	base := pvesim.Cluster{Nodes: []pvesim.NodeSpec{{Name: "pve1", CPUs: 4, MemoryGiB: 8}}, Guests: []pvesim.GuestSpec{{VMID: 100, Node: "pve1"}}}
	tests := map[string]pvesim.HARuleSpec{
		"non-existent node":    {Rule: "ab", Type: "node-affinity", Resources: []string{"vm:100"}, Nodes: []string{"pve9"}},
		"less than two":        {Rule: "ab", Type: "resource-affinity", Affinity: "negative", Resources: []string{"vm:100"}},
		"not vm:<vmid> or ct:": {Rule: "ab", Type: "node-affinity", Resources: []string{"vm:999"}, Nodes: []string{"pve1"}},
		"ids match":            {Rule: "1a", Type: "node-affinity", Resources: []string{"vm:100"}, Nodes: []string{"pve1"}},
		"type must be":         {Rule: "ab", Type: "group", Resources: []string{"vm:100"}},
		"positive or negative": {Rule: "ab", Type: "resource-affinity", Resources: []string{"vm:100", "vm:100"}},
	}
	for want, rule := range tests {
		c := base
		c.HARules = []pvesim.HARuleSpec{rule}
		if _, err := pvesim.New(c); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: err = %v, want %q", rule, err, want)
		}
	}
}

// haCluster is four nodes and six running VMs without disks (any node can run them), the
// first four HA resources the CRM has picked up, and PVE 9 rules (none yet).
func haCluster(t *testing.T, guests map[int]string) (*pvesim.Server, *api) {
	t.Helper()
	c := pvesim.Cluster{HARules: []pvesim.HARuleSpec{}}
	for _, n := range []string{"pve1", "pve2", "pve3", "pve4"} {
		c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: n, CPUs: 8, MemoryGiB: 16})
	}
	for vmid := 100; vmid <= 105; vmid++ {
		node := guests[vmid]
		if node == "" {
			node = "pve1"
		}
		c.Guests = append(c.Guests, pvesim.GuestSpec{VMID: vmid, Node: node, Status: "running"})
	}
	s := pvesim.NewTestServer(t, c)
	a := newAPI(t, s)
	for vmid := 100; vmid <= 103; vmid++ {
		a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {fmt.Sprintf("vm:%d", vmid)}}))
	}
	a.get("/cluster/ha/status/current") // a CRM round: all picked up
	return s, a
}

func spread() map[int]string {
	return map[int]string{100: "pve1", 101: "pve2", 102: "pve3", 103: "pve4", 104: "pve1", 105: "pve2"}
}

func rule(vals ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(vals); i += 2 {
		v.Set(vals[i], vals[i+1])
	}
	return v
}

// wantError asserts a failed call: its status code and a part of its message.
func wantError(t *testing.T, r reply, code int, want string) {
	t.Helper()
	if r.code != code || !strings.Contains(string(r.body)+r.status, strings.ReplaceAll(want, "\n", `\n`)) {
		t.Errorf("got %q %s, want %d with %q", r.status, r.body, code, want)
	}
}

// TestHARulesAPI: create, read, list with filters, update with digest and delete, remove, as
// API2/HA/Rules.pm answers them.
func TestHARulesAPI(t *testing.T) {
	_, a := haCluster(t, spread())
	a.ok(a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "apart", "type", "resource-affinity", "affinity", "negative", "resources", "vm:101,vm:100", "comment", "web")))
	a.ok(a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "pin", "type", "node-affinity", "nodes", "pve1,pve2:2", "strict", "1", "resources", "vm:103")))
	wantError(t, a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "APART", "type", "resource-affinity", "affinity", "negative", "resources", "vm:102,vm:103")),
		500, "create ha rule failed: HA rule 'APART' already defined")
	wantError(t, a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "x1", "type", "resource-affinity", "affinity", "negative", "resources", "vm:104,vm:103")),
		500, "cannot use unmanaged resource(s) vm:104.")
	wantError(t, a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "x1", "type", "node-affinity", "nodes", "pve9", "resources", "vm:103")),
		500, "cannot use non-existent node(s) pve9.")
	wantError(t, a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "x1", "type", "resource-affinity", "affinity", "negative", "resources", "")),
		500, "create ha rule failed: no resources were specified")
	wantError(t, a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "x1", "type", "node-affinity", "nodes", "", "resources", "vm:103")),
		500, "create ha rule failed: no nodes were specified")
	wantError(t, a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "1x", "type", "node-affinity", "nodes", "pve1", "resources", "vm:103")),
		400, "Parameter verification failed")
	wantError(t, a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "x1", "type", "resource-affinity", "resources", "vm:103,vm:102")),
		400, "Parameter verification failed")
	wantError(t, a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "x1", "type", "resource-affinity", "affinity", "negative", "strict", "1", "resources", "vm:103,vm:102")),
		400, "Parameter verification failed")

	rows := a.ok(a.get("/cluster/ha/rules")).list()
	if len(rows) != 2 || rows[0]["resources"] != "vm:100,vm:101" || rows[1]["nodes"] != "pve1,pve2:2" || rows[0]["comment"] != "web" {
		t.Fatalf("rules %v", rows)
	}
	digest := rows[0]["digest"].(string)
	if rows := a.ok(a.get("/cluster/ha/rules?resource=vm:103")).list(); len(rows) != 1 || rows[0]["rule"] != "pin" {
		t.Errorf("resource filter: %v", rows)
	}
	if rows := a.ok(a.get("/cluster/ha/rules?type=node-affinity")).list(); len(rows) != 1 || rows[0]["rule"] != "pin" {
		t.Errorf("type filter: %v", rows)
	}
	wantError(t, a.get("/cluster/ha/rules?type=group"), 400, "Parameter verification failed")
	if r := a.ok(a.get("/cluster/ha/rules/pin")).obj(); r["strict"] != float64(1) || r["order"] != float64(2) {
		t.Errorf("read pin: %v", r)
	}
	wantError(t, a.get("/cluster/ha/rules/nope"), 500, "no such ha rule 'nope'")

	// Updates: type is sent again; a digest must be the file's; delete drops options.
	wantError(t, a.form(http.MethodPut, "/cluster/ha/rules/apart", rule("resources", "vm:100,vm:101,vm:102")), 400, "Parameter verification failed")
	a.ok(a.form(http.MethodPut, "/cluster/ha/rules/apart", rule("type", "resource-affinity", "resources", "vm:100,vm:101,vm:102", "digest", digest, "delete", "comment")))
	wantError(t, a.form(http.MethodPut, "/cluster/ha/rules/apart", rule("type", "resource-affinity", "resources", "vm:100,vm:101", "digest", digest)),
		500, "update HA rules failed: detected modified configuration - file changed by other user? Try again.")
	wantError(t, a.form(http.MethodPut, "/cluster/ha/rules/gone", rule("type", "resource-affinity", "resources", "vm:100,vm:101")),
		500, "update HA rules failed: HA rule 'gone' does not exist")
	wantError(t, a.form(http.MethodPut, "/cluster/ha/rules/apart", rule("type", "resource-affinity", "delete", "affinity")), 400, "Parameter verification failed")
	wantError(t, a.form(http.MethodPut, "/cluster/ha/rules/pin", rule("type", "node-affinity", "nodes", "")), 500, "update HA rules failed: no nodes were specified")
	if r := a.ok(a.get("/cluster/ha/rules/apart")).obj(); r["resources"] != "vm:100,vm:101,vm:102" || r["comment"] != nil || r["digest"] == digest {
		t.Errorf("after the update: %v", r)
	}
	// A delete takes the rule id alone: no digest (delete_rule's additionalProperties 0).
	wantError(t, a.form(http.MethodDelete, "/cluster/ha/rules/pin?digest="+digest, nil), 400, "Parameter verification failed")
	a.ok(a.form(http.MethodDelete, "/cluster/ha/rules/pin", nil))
	a.ok(a.form(http.MethodDelete, "/cluster/ha/rules/pin", nil)) // PVE deletes without asking
	if rows := a.ok(a.get("/cluster/ha/rules")).list(); len(rows) != 1 {
		t.Errorf("after the delete: %v", rows)
	}
}

// TestHARuleFeasibility refuses each infeasible rule as PVE's check_feasibility does: a 400
// "Rule '<id>' is invalid." inside the config lock, which answers 500.
func TestHARuleFeasibility(t *testing.T) {
	tests := []struct {
		name   string
		before []url.Values
		create url.Values
		want   string
	}{
		{"less than two", nil, rule("rule", "rr", "type", "resource-affinity", "affinity", "negative", "resources", "vm:100"),
			"resources: rule is ineffective as there are less than two resources"},
		{"in two node rules", []url.Values{rule("rule", "aa", "type", "node-affinity", "nodes", "pve1", "resources", "vm:100")},
			rule("rule", "rr", "type", "node-affinity", "nodes", "pve2", "resources", "vm:100"),
			"resources: resource 'vm:100' is already used in another node affinity rule"},
		{"positive and negative", []url.Values{rule("rule", "aa", "type", "resource-affinity", "affinity", "positive", "resources", "vm:100,vm:101")},
			rule("rule", "rr", "type", "resource-affinity", "affinity", "negative", "resources", "vm:101,vm:100,vm:102"),
			"resources: rule shares two or more resources with a positive resource affinity rule"},
		{"negative restricted", []url.Values{rule("rule", "aa", "type", "node-affinity", "nodes", "pve1", "strict", "1", "resources", "vm:100"),
			rule("rule", "bb", "type", "node-affinity", "nodes", "pve1", "strict", "1", "resources", "vm:101")},
			rule("rule", "rr", "type", "resource-affinity", "affinity", "negative", "resources", "vm:101,vm:100"),
			"resources: two or more resources are restricted to less nodes than available to the resources"},
		{"multiple priorities", []url.Values{rule("rule", "aa", "type", "node-affinity", "nodes", "pve1:2,pve2", "resources", "vm:100")},
			rule("rule", "rr", "type", "resource-affinity", "affinity", "positive", "resources", "vm:101,vm:100"),
			"resources: resources are in node affinity rules with multiple priorities"},
		{"positive in two node rules", []url.Values{rule("rule", "aa", "type", "node-affinity", "nodes", "pve1", "resources", "vm:100"),
			rule("rule", "bb", "type", "node-affinity", "nodes", "pve1", "resources", "vm:101")},
			rule("rule", "rr", "type", "resource-affinity", "affinity", "positive", "resources", "vm:101,vm:100"),
			"resources: resources are in multiple node affinity rules"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, a := haCluster(t, spread())
			for _, b := range tc.before {
				a.ok(a.form(http.MethodPost, "/cluster/ha/rules", b))
			}
			wantError(t, a.form(http.MethodPost, "/cluster/ha/rules", tc.create), 500, "create ha rule failed: 400 Rule 'rr' is invalid.\n"+tc.want)
			if rows := a.ok(a.get("/cluster/ha/rules")).list(); len(rows) != len(tc.before) {
				t.Errorf("the refused rule was written: %v", rows)
			}
		})
	}
	// A negative rule larger than the cluster: five resources on four nodes.
	_, a := haCluster(t, spread())
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:104"}}))
	wantError(t, a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "rr", "type", "resource-affinity", "affinity", "negative", "resources", "vm:100,vm:101,vm:102,vm:103,vm:104")),
		500, "resources: rule defines more resources than available nodes")
	// An update is checked the same way.
	a.ok(a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "rr", "type", "resource-affinity", "affinity", "negative", "resources", "vm:100,vm:101")))
	wantError(t, a.form(http.MethodPut, "/cluster/ha/rules/rr", rule("type", "resource-affinity", "resources", "vm:100")),
		500, "update HA rules failed: 400 Rule 'rr' is invalid.\nresources: rule is ineffective as there are less than two resources")
}

// TestHAResourceDeletePurgesRules: removing a resource takes it out of its rules (purge,
// the default), deleting the rules it was the only resource of; a rule left with one
// resource stays and is listed with its errors.
func TestHAResourceDeletePurgesRules(t *testing.T) {
	_, a := haCluster(t, spread())
	a.ok(a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "pair", "type", "resource-affinity", "affinity", "negative", "resources", "vm:100,vm:101")))
	a.ok(a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "pin", "type", "node-affinity", "nodes", "pve1", "resources", "vm:100")))
	a.ok(a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "keep", "type", "node-affinity", "nodes", "pve2", "resources", "vm:102")))
	a.ok(a.form(http.MethodDelete, "/cluster/ha/resources/vm:100", nil))
	a.ok(a.form(http.MethodDelete, "/cluster/ha/resources/vm:102", url.Values{"purge": {"0"}}))
	rows := a.ok(a.get("/cluster/ha/rules")).list()
	if len(rows) != 2 || rows[0]["rule"] != "pair" || rows[0]["resources"] != "vm:101" || rows[1]["resources"] != "vm:102" {
		t.Fatalf("rules after the deletes: %v", rows)
	}
	if errs, _ := rows[0]["errors"].(map[string]any); errs["resources"] != "rule is ineffective as there are less than two resources" {
		t.Errorf("the rule left with one resource: errors %v", rows[0]["errors"])
	}
}

// TestHARecovery recovers the services of a failed node where the HA rules allow, as the HA
// manager's select_service_node chooses.
func TestHARecovery(t *testing.T) {
	t.Run("least loaded without rules", func(t *testing.T) {
		s, _ := haCluster(t, map[int]string{100: "pve1", 101: "pve2", 102: "pve2", 103: "pve3"})
		got, err := s.FailNode("pve1")
		if err != nil || got[100] != "pve4" {
			t.Fatalf("recovered %v, %v; want vm 100 on pve4, which runs no HA service", got, err)
		}
		if g := s.MustGuest(t, 100); g.Status != "running" {
			t.Errorf("recovered VM is %s", g.Status)
		}
	})
	t.Run("not next to a negative peer", func(t *testing.T) {
		s, a := haCluster(t, map[int]string{100: "pve1", 101: "pve2", 102: "pve3", 103: "pve3"})
		a.ok(a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "apart", "type", "resource-affinity", "affinity", "negative", "resources", "vm:100,vm:101")))
		// pve4 runs nothing but a peer is being migrated there; pve3 is the only node left.
		a.ok(a.form(http.MethodPost, "/cluster/ha/resources/vm:101/migrate", url.Values{"node": {"pve4"}}))
		if got, err := s.FailNode("pve1"); err != nil || got[100] != "pve3" {
			t.Fatalf("recovered %v, %v; want vm 100 on pve3, the most loaded node (pve2 runs vm 101, which is being migrated to pve4)", got, err)
		}
	})
	t.Run("strict node affinity before load", func(t *testing.T) {
		s, a := haCluster(t, map[int]string{100: "pve1", 101: "pve3", 102: "pve3", 103: "pve3"})
		a.ok(a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "pin", "type", "node-affinity", "strict", "1", "nodes", "pve1,pve3", "resources", "vm:100")))
		if got, err := s.FailNode("pve1"); err != nil || got[100] != "pve3" {
			t.Fatalf("recovered %v, %v; want vm 100 on pve3, its only allowed node", got, err)
		}
	})
	t.Run("with positive peers", func(t *testing.T) {
		s, a := haCluster(t, map[int]string{100: "pve1", 101: "pve3", 102: "pve3", 103: "pve3"})
		a.ok(a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "together", "type", "resource-affinity", "affinity", "positive", "resources", "vm:100,vm:101")))
		if got, err := s.FailNode("pve1"); err != nil || got[100] != "pve3" {
			t.Fatalf("recovered %v, %v; want vm 100 on pve3 with vm 101", got, err)
		}
	})
	t.Run("stays in recovery when no node is allowed", func(t *testing.T) {
		s, a := haCluster(t, map[int]string{100: "pve1", 101: "pve2", 102: "pve3", 103: "pve4"})
		a.ok(a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "apart", "type", "resource-affinity", "affinity", "negative", "resources", "vm:100,vm:101,vm:102,vm:103")))
		got, err := s.FailNode("pve1")
		if err != nil || len(got) != 0 {
			t.Fatalf("recovered %v, %v; want none: every other node runs a negative peer", got, err)
		}
		if row := serviceRow(a, "vm:100"); row["state"] != "recovery" || row["node"] != "pve1" {
			t.Fatalf("vm:100 %v, want in recovery on pve1", row)
		}
		// The CRM tries every round: once pve1 is back, it recovers there.
		if err := s.SetNodeOnline("pve1", true); err != nil {
			t.Fatal(err)
		}
		a.get("/cluster/ha/status/current")
		if g := s.MustGuest(t, 100); g.Node != "pve1" || g.Status != "running" {
			t.Errorf("vm 100 %s on %s, want running on pve1", g.Status, g.Node)
		}
	})
	t.Run("an explicit recovery against the rules is refused", func(t *testing.T) {
		s, a := haCluster(t, spread())
		a.ok(a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "apart", "type", "resource-affinity", "affinity", "negative", "resources", "vm:100,vm:101")))
		if err := s.FailOver(100, "pve2"); err == nil || !strings.Contains(err.Error(), "HA rules") {
			t.Fatalf("FailOver next to a negative peer: %v", err)
		}
		if g := s.MustGuest(t, 100); g.Node != "pve1" {
			t.Errorf("the refused recovery moved vm 100 to %s", g.Node)
		}
	})
}

// TestHAMigrateNegativeRule: a migration next to a negative peer is answered with the
// blocking resources and refused by the CRM; an allowed one goes through.
func TestHAMigrateNegativeRule(t *testing.T) {
	s, a := haCluster(t, spread())
	a.ok(a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "apart", "type", "resource-affinity", "affinity", "negative", "resources", "vm:100,vm:101")))
	r := a.ok(a.form(http.MethodPost, "/cluster/ha/resources/vm:100/migrate", url.Values{"node": {"pve2"}})).obj()
	blocking, _ := r["blocking-resources"].([]any)
	if len(blocking) != 1 || blocking[0].(map[string]any)["sid"] != "vm:101" || blocking[0].(map[string]any)["cause"] != "resource-affinity" {
		t.Fatalf("answer %v, want vm:101 blocking", r)
	}
	// PVE queues the command all the same; the CRM refuses it in its rounds.
	a.rounds()
	if g := s.MustGuest(t, 100); g.Node != "pve1" || g.Status != "running" {
		t.Fatalf("vm 100 %s on %s after a migration next to its negative peer, want running on pve1", g.Status, g.Node)
	}
	a.ok(a.form(http.MethodPost, "/cluster/ha/resources/vm:100/migrate", url.Values{"node": {"pve3"}}))
	for i := 0; i < 3; i++ {
		a.get("/cluster/ha/status/current")
	}
	if g := s.MustGuest(t, 100); g.Node != "pve3" {
		t.Errorf("vm 100 on %s, want pve3", g.Node)
	}
}

// rounds runs the HA manager a few times (each read is a round).
func (a *api) rounds() {
	a.t.Helper()
	for i := 0; i < 4; i++ {
		a.get("/cluster/ha/status/current")
	}
}

// The HA manager's round for a started service (Manager.pm next_state_started,
// select_service_node without preference): with failback, on by default in PVE 9, a service
// outside the highest priority class of its node-affinity rule that it can use is migrated
// there, a manual move to a lower priority is undone, and a node coming back draws its
// services back; with failback off the service stays where it runs while the rules allow it
// there; a negative peer on the preferred node keeps it where it is.
func TestHAFailback(t *testing.T) {
	s, a := haCluster(t, spread()) // HA services 100..103 on pve1..pve4
	a.ok(a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "prefer", "type", "node-affinity", "nodes", "pve1:2,pve2:1", "resources", "vm:101")))
	a.rounds()
	wantOn(t, s, 101, "pve1") // from pve2, priority 1

	a.ok(a.form(http.MethodPost, "/cluster/ha/resources/vm:101/migrate", url.Values{"node": {"pve2"}}))
	a.rounds()
	wantOn(t, s, 101, "pve1") // moved to pve2, then back

	if _, err := s.FailNode("pve1"); err != nil {
		t.Fatal(err)
	}
	wantOn(t, s, 101, "pve2") // the highest class left
	if err := s.SetNodeOnline("pve1", true); err != nil {
		t.Fatal(err)
	}
	a.rounds()
	wantOn(t, s, 101, "pve1")

	a.ok(a.form(http.MethodPut, "/cluster/ha/resources/vm:101", url.Values{"failback": {"0"}}))
	if _, err := s.FailNode("pve1"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetNodeOnline("pve1", true); err != nil {
		t.Fatal(err)
	}
	a.rounds()
	wantOn(t, s, 101, "pve2") // failback off: it stays

	// A negative peer is only allowed with a single priority class (Rules.pm); a non-strict
	// rule's other nodes are its lower class.
	a.ok(a.form(http.MethodPut, "/cluster/ha/resources/vm:101", url.Values{"delete": {"failback"}}))
	a.ok(a.form(http.MethodPut, "/cluster/ha/rules/prefer", rule("type", "node-affinity", "nodes", "pve1")))
	a.ok(a.form(http.MethodPost, "/cluster/ha/rules", rule("rule", "apart", "type", "resource-affinity", "affinity", "negative", "resources", "vm:100,vm:101")))
	a.rounds()
	// vm:100, recovered next to vm:101 on pve2, moves away first (sid order), to pve1; vm:101
	// then has no node of its rule left and stays.
	wantOn(t, s, 100, "pve1")
	wantOn(t, s, 101, "pve2")
}

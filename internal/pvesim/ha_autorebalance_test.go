package pvesim_test

import (
	"net/http"
	"net/url"
	"testing"
)

// auto-rebalance came with PVE 9.2 (pve-manager 9.2, pve-ha-manager 5.2's automatic
// rebalancing): a boolean resource option, on when unset, that create, update, the index,
// the resource's read and status/current carry. PVE 8's schema does not know it, as it knows
// no other unknown property.
func TestHAResourceAutoRebalance(t *testing.T) {
	t.Run("PVE 8 refuses it", func(t *testing.T) {
		_, a := lab(t)
		const unknown = "property is not defined in schema and the schema does not allow additional properties"
		r := a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:102"}, "auto-rebalance": {"0"}})
		if r.code != 400 || r.env.Errors["auto-rebalance"] != unknown {
			t.Errorf("PVE 8 create: %s, errors %v; want 400, auto-rebalance: %q", r.status, r.env.Errors, unknown)
		}
		a.ok(a.form(http.MethodPost, "/cluster/ha/resources", url.Values{"sid": {"vm:102"}}))
		wantError(t, a.form(http.MethodPut, "/cluster/ha/resources/vm:102", url.Values{"auto-rebalance": {"1"}}), 400, unknown)
		wantError(t, a.form(http.MethodPut, "/cluster/ha/resources/vm:102", url.Values{"delete": {"auto-rebalance"}}), 400, "invalid option 'auto-rebalance'")
		if row := a.ok(a.get("/cluster/ha/resources/vm:102")).obj(); row["auto-rebalance"] != nil {
			t.Errorf("PVE 8 resource after the refused writes: %v", row)
		}
	})

	t.Run("PVE 9.2 stores, lists and reads it back", func(t *testing.T) {
		_, a := haCluster(t, spread())
		if row := a.ok(a.get("/cluster/ha/resources/vm:100")).obj(); row["auto-rebalance"] != nil {
			t.Errorf("auto-rebalance listed while unset (default on): %v", row)
		}
		// A JSON client's false is stored as 0, as PVE's parameter check normalises booleans.
		a.ok(a.json(http.MethodPost, "/cluster/ha/resources", map[string]any{"sid": "vm:104", "auto-rebalance": false}))
		a.ok(a.form(http.MethodPut, "/cluster/ha/resources/vm:100", url.Values{"auto-rebalance": {"off"}}))
		a.ok(a.form(http.MethodPut, "/cluster/ha/resources/vm:101", url.Values{"auto-rebalance": {"yes"}}))
		want := map[string]any{"vm:100": 0.0, "vm:101": 1.0, "vm:102": nil, "vm:103": nil, "vm:104": 0.0}
		for _, row := range a.ok(a.get("/cluster/ha/resources")).list() {
			sid, _ := row["sid"].(string)
			if row["auto-rebalance"] != want[sid] {
				t.Errorf("index: %s auto-rebalance = %v, want %v", sid, row["auto-rebalance"], want[sid])
			}
			if got := a.ok(a.get("/cluster/ha/resources/" + sid)).obj()["auto-rebalance"]; got != want[sid] {
				t.Errorf("read: %s auto-rebalance = %v, want %v", sid, got, want[sid])
			}
			if got := serviceRow(a, sid)["auto-rebalance"]; got != want[sid] {
				t.Errorf("status/current: %s auto-rebalance = %v, want %v", sid, got, want[sid])
			}
		}
		wantError(t, a.form(http.MethodPut, "/cluster/ha/resources/vm:100", url.Values{"auto-rebalance": {"maybe"}}), 400,
			"type check ('boolean') failed - got 'maybe'")
		a.ok(a.form(http.MethodPut, "/cluster/ha/resources/vm:100", url.Values{"delete": {"auto-rebalance"}}))
		if row := a.ok(a.get("/cluster/ha/resources/vm:100")).obj(); row["auto-rebalance"] != nil {
			t.Errorf("auto-rebalance after its delete: %v", row)
		}
	})
}

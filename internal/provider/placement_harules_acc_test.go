package provider

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// simAPI sends a form to the simulator's API as another provider (bpg) would, and returns the
// answer's status and data.
func simAPI(t *testing.T, sim *pvesim.Server, method, path string, form url.Values) (int, json.RawMessage, string) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(sim.CACertPEM()))
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, err := http.NewRequest(method, sim.URL()+"/api2/json"+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "PVEAPIToken="+sim.APIToken())
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var out struct {
		Data json.RawMessage `json:"data"`
	}
	_ = json.Unmarshal(body, &out)
	return res.StatusCode, out.Data, string(body)
}

const haRulesConfig = `
data "qemuscheduler_placement" "app" {
  names       = ["app-1", "app-2", "app-3"]
  memory      = 1024
  tags        = ["app"]
  annotations = { "vmid.qemu-scheduler/range" = "3000-3099" }
  ha_failover = "strict"
  vm_anti_affinity {
    tags = ["app"]
  }
}

output "ha_rules" {
  value = data.qemuscheduler_placement.app.ha_rules
}
`

// The placement's ha_rules, written as bpg's harule would write them, are rules PVE accepts
// and its HA manager honours: three anti-affine names get one negative resource-affinity rule
// over their VMIDs (known at plan); the VMs and their HA resources are created where the data
// source answered, the rules written through the API, and HA maintenance of one VM's node
// moves it to the one node without another app VM, not next to one, where the HA manager's
// basic scheduler would take it without the rule (that node holds two other HA services).
func TestAccPlacementHARules(t *testing.T) {
	c := appCluster()
	c.HARules = []pvesim.HARuleSpec{} // PVE 9: rules, no HA groups
	// Two HA-managed guests on pve4, the one node without an app VM: the HA manager's basic
	// scheduler (fewest HA services) would take the maintained VM next to another app VM
	// without the rule.
	c.Guests = append(c.Guests, pvesim.GuestSpec{VMID: 901, Node: "pve4", Name: "anchor-2", Status: "running", Cores: 1, MemoryMiB: 512})
	env, sim := simEnv(t, c)
	const ds = "data.qemuscheduler_placement.app"
	rule := knownvalue.ObjectExact(map[string]knownvalue.Check{
		"id": knownvalue.StringExact("qemuscheduler-apart-app"), "type": knownvalue.StringExact("resource-affinity"),
		"strict": knownvalue.Bool(false), "affinity": knownvalue.StringExact("negative"), "nodes": knownvalue.Null(),
		"resources": knownvalue.ListExact([]knownvalue.Check{
			knownvalue.StringExact("vm:3000"), knownvalue.StringExact("vm:3001"), knownvalue.StringExact("vm:3002")}),
	})
	written := func(s *terraform.State) error {
		ctx, api := context.Background(), simClient(t, sim)
		attrs := s.RootModule().Resources[ds].Primary.Attributes
		vmids, nodes := map[string]int{}, map[int]string{}
		for i := range 3 {
			name := attrs[fmt.Sprintf("placements.%d.name", i)]
			vmid, err := strconv.Atoi(attrs[fmt.Sprintf("placements.%d.vmid", i)])
			if err != nil {
				return err
			}
			vmids[name], nodes[vmid] = vmid, attrs[fmt.Sprintf("placements.%d.node", i)]
			env.createVM(t, nodes[vmid], vmid, map[string]string{"name": name, "memory": "1024", "tags": "app", "start": "1"})
			must(t, api.AddHAResource(ctx, vmid, proxmox.HASettings{State: "started", MaxRestart: 1, MaxRelocate: 1}))
		}
		// The rules, attribute by attribute, as bpg's harule sends them.
		n, _ := strconv.Atoi(attrs["ha_rules.#"])
		if n != 1 {
			return fmt.Errorf("%d rules, want the one negative rule of the group", n)
		}
		for i := range n {
			at := func(k string) string { return attrs[fmt.Sprintf("ha_rules.%d.%s", i, k)] }
			var resources []string
			for j := 0; at(fmt.Sprintf("resources.%d", j)) != ""; j++ {
				resources = append(resources, at(fmt.Sprintf("resources.%d", j)))
			}
			form := url.Values{"rule": {at("id")}, "type": {at("type")}, "resources": {strings.Join(resources, ",")}}
			if at("affinity") != "" {
				form.Set("affinity", at("affinity"))
			}
			if at("strict") == "true" && at("type") == "node-affinity" {
				form.Set("strict", "1")
			}
			if status, _, body := simAPI(t, sim, http.MethodPost, "/cluster/ha/rules", form); status != http.StatusOK {
				return fmt.Errorf("PVE refuses rule %s: %d %s", at("id"), status, body)
			}
		}
		// PVE's checks keep them: none disabled, none with errors (dropped at runtime).
		_, data, _ := simAPI(t, sim, http.MethodGet, "/cluster/ha/rules", nil)
		var rows []map[string]any
		if err := json.Unmarshal(data, &rows); err != nil || len(rows) != 1 {
			return fmt.Errorf("rules %s, want the one written (%v)", data, err)
		}
		if rows[0]["errors"] != nil || rows[0]["disable"] != nil {
			return fmt.Errorf("PVE does not keep the rule: %v", rows[0])
		}
		for _, vmid := range []int{900, 901} {
			must(t, api.AddHAResource(ctx, vmid, proxmox.HASettings{State: "started", MaxRestart: 1, MaxRelocate: 1}))
		}
		// HA maintenance of app-2's node: the manager moves it to the node without an app VM.
		maintained := nodes[vmids["app-2"]]
		must(t, sim.SetNodeHAState(maintained, "maintenance"))
		moved := ""
		for i := 0; i < 20 && moved == ""; i++ {
			sim.RunHARounds(1)
			if g := sim.MustGuest(t, vmids["app-2"]); g.Node != maintained && g.Lock == "" {
				moved = g.Node
			}
		}
		sim.RunHARounds(3)
		var at []string
		for _, vmid := range vmids {
			at = append(at, sim.MustGuest(t, vmid).Node)
		}
		sort.Strings(at)
		if moved == "" || at[0] == at[1] || at[1] == at[2] || strings.Contains(strings.Join(at, ","), maintained) {
			return fmt.Errorf("after HA maintenance of %s, app-2 went to %q and the apps run on %v: want three nodes, none %s", maintained, moved, at, maintained)
		}
		return nil
	}
	runCase(t, resource.TestCase{Steps: []resource.TestStep{{
		Config: env.providerBlock("") + haRulesConfig,
		ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plancheck.ExpectKnownOutputValue("ha_rules", knownvalue.ListExact([]knownvalue.Check{rule})),
		}},
		Check: written,
	}}})
}

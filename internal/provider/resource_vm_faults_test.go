package provider

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// simMatchesState checks that the cluster holds exactly the VMs the state records: no VM
// orphaned by a fault, none recorded that does not exist.
func simMatchesState(sim *pvesim.Server) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		inState := map[string]bool{}
		for _, rs := range s.RootModule().Resources {
			if rs.Type == "qemuscheduler_vm" {
				inState[rs.Primary.Attributes["vmid"]] = true
			}
		}
		return simHolds(sim, inState)
	}
}

// simHolds checks that the VMs named web-* in the cluster are exactly those vmids.
func simHolds(sim *pvesim.Server, vmids map[string]bool) error {
	var made []string
	for _, id := range sim.Guests() {
		if g, ok := sim.Guest(id); ok && strings.HasPrefix(g.Config["name"], "web-") {
			made = append(made, fmt.Sprint(id))
			if !vmids[fmt.Sprint(id)] {
				return fmt.Errorf("VM %d (%s) exists but is not in the state: orphaned", id, g.Config["name"])
			}
		}
	}
	if len(made) != len(vmids) {
		return fmt.Errorf("the state records %d VMs, the cluster has %v", len(vmids), made)
	}
	return nil
}

// Every fault after a create or clone request was sent: the apply either succeeds with one
// VM, or fails leaving none (or one it records as tainted); the VM count in PVE always equals
// the state's, and a second apply converges.
func TestAccVMFaultsLeaveNoOrphan(t *testing.T) {
	scratch := `resource "qemuscheduler_vm" "web" { name = "web-1" }`
	clone := `resource "qemuscheduler_vm" "web" {
  name = "web-1"
  clone {
    source_vmid = 9000
  }
}`
	const createReq, cloneReq = "POST /nodes/{node}/qemu", "POST /nodes/{node}/qemu/{vmid}/clone"
	cases := []struct {
		name   string
		hcl    string
		inject func(sim *pvesim.Server)
		// fails is the error the first apply ends with ("" = it succeeds).
		fails string
	}{
		{"create answered 500 after PVE acted", scratch, func(s *pvesim.Server) { s.ReplaceResponses(createReq, 1, 500, "Internal Server Error") }, ""},
		{"create answered 595 after PVE acted", scratch, func(s *pvesim.Server) { s.ReplaceResponses(createReq, 1, 595, "No route to host") }, ""},
		{"create answer lost", scratch, func(s *pvesim.Server) { s.LoseResponses(createReq, 1) }, ""},
		{"create refused with 500 three times", scratch, func(s *pvesim.Server) { s.FailRequests(createReq, 3, 500, "Internal Server Error") }, "Internal Server Error"},
		{"first create-task poll 500", scratch, func(s *pvesim.Server) { s.FailTaskPolls("qmcreate", 0, 1, 500, "Internal Server Error") }, ""},
		{"later create-task poll 595", scratch, func(s *pvesim.Server) { s.FailTaskPolls("qmcreate", 1, 2, 595, "No route to host") }, ""},
		{"create-task poll answer lost", scratch, func(s *pvesim.Server) { s.LoseTaskPolls("qmcreate", 1, 1) }, ""},
		{"clone answered 500 after PVE acted", clone, func(s *pvesim.Server) { s.ReplaceResponses(cloneReq, 1, 500, "Internal Server Error") }, ""},
		{"clone answered 595", clone, func(s *pvesim.Server) { s.ReplaceResponses(cloneReq, 1, 595, "No route to host") }, ""},
		{"clone answer lost", clone, func(s *pvesim.Server) { s.LoseResponses(cloneReq, 1) }, ""},
		{"clone-task poll 500", clone, func(s *pvesim.Server) { s.FailTaskPolls("qmclone", 0, 1, 500, "Internal Server Error") }, ""},
		{"later clone-task poll 595", clone, func(s *pvesim.Server) { s.FailTaskPolls("qmclone", 1, 2, 595, "No route to host") }, ""},
		{"clone-task poll answer lost", clone, func(s *pvesim.Server) { s.LoseTaskPolls("qmclone", 0, 1) }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newAccEnv(t, labCluster(), pvesim.WithTaskDuration(60*time.Millisecond))
			sim := env.needsSim(t)
			cfg := env.config(tc.hcl)
			first := resource.TestStep{PreConfig: func() { tc.inject(sim) }, Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(simMatchesState(sim), resource.TestCheckResourceAttr(vmAddr, "name", "web-1"))}
			second := resource.TestStep{Config: cfg, Check: simMatchesState(sim)}
			if tc.fails != "" {
				first.Check, first.ExpectError = nil, regexp.MustCompile(regexp.QuoteMeta(tc.fails))
				// The failed apply recorded nothing, so the cluster must hold nothing either.
				second.PreConfig = func() {
					if err := simHolds(sim, map[string]bool{}); err != nil {
						t.Error(err)
					}
				}
			}
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testProviders,
				Steps:                    []resource.TestStep{first, second, {Config: cfg, PlanOnly: true}},
				CheckDestroy: func(*terraform.State) error {
					return simHolds(sim, map[string]bool{})
				},
			})
		})
	}
}

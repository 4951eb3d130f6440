package provider

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// Teams generate profiles and node policies from variables: dynamic "node" and dynamic
// "profile" blocks (issue 34). Terraform validates the provider block with every variable
// unknown, so the blocks are unknown there; the plan and the apply see their values, and the
// placement follows them. A block whose value is unknown only at validate is not an error.
func TestAccProviderDynamicBlocks(t *testing.T) {
	env, _ := simEnv(t, labCluster())
	vars := `variable "zones" {
  default = { pve1 = "a", pve2 = "b", pve3 = "b" }
}
variable "teams" {
  type    = map(string)
  default = { web = "b", db = "a" }
}
`
	provider := `dynamic "node" {
    for_each = var.zones
    content {
      name   = node.key
      labels = { zone = node.value }
    }
  }
  dynamic "profile" {
    for_each = var.teams
    content {
      name          = profile.key
      node_selector = { zone = profile.value }
    }
  }`
	// Blocks generated from a resource not yet created are unknown when Configure runs: a
	// clear error on the block, not a conversion error.
	fromResource := `resource "terraform_data" "teams" {
  input = var.teams
}
` + env.providerBlock(strings.ReplaceAll(provider, "var.teams", "terraform_data.teams.output"))
	runParallel(t,
		resource.TestStep{Config: vars + fromResource + placement(`name = "db-1"`), PlanOnly: true,
			ExpectError: wrapped(`(?s)Unknown provider configuration.*The provider cannot place VMs before its profile blocks are known`)},
		resource.TestStep{Config: vars + env.providerBlock(provider) + placement(`name = "db-1"
  profile = "db"`) + `data "qemuscheduler_placement" "web" {
  name    = "web-1"
  profile = "web"
}
`,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(ds, "node", "pve1"),
				resource.TestMatchResourceAttr("data.qemuscheduler_placement.web", "node", regexp.MustCompile(`^pve[23]$`)),
			)},
	)
}

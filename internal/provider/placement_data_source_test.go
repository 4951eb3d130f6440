package provider

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

const ds = "data.qemuscheduler_placement.p"

// wrapped compiles an error pattern whose spaces also match the line breaks Terraform inserts
// when it wraps diagnostics.
func wrapped(pattern string) *regexp.Regexp {
	return regexp.MustCompile(strings.ReplaceAll(pattern, " ", `\s+`))
}

func placement(body string) string {
	return fmt.Sprintf("data \"qemuscheduler_placement\" \"p\" {\n%s\n}\n", body)
}

// TestAccPlacementPlugins drives every plugin through HCL on the lab cluster.
func TestAccPlacementPlugins(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		attrs map[string]string
	}{
		{"NodeResource picks the freest node", `name = "web"`,
			map[string]string{"node": "pve2", "vmid": "101", "storage": "ceph", "candidates.1.score": "186.56", "candidates.3.reasons.0": "NodeOnline: node is offline",
				"summary": "web: pve2 (score 186.56; 3/4 nodes feasible), vmid 101 (next free id), storage ceph"}},
		{"node regex matches whole names", `name = "web"
			annotations = { "node.qemu-scheduler/regex" = "pve[13]" }`, map[string]string{"node": "pve3", "candidates.1.reasons.0": `NodeRegex: "pve2" does not match "pve[13]"`}},
		{"cpu overcommit exactly at the ratio passes", `name = "web"
			cores = 8
			plugin_config {
			  filter {
			    name = "CPUOvercommit"
			    args = { ratio = "1" }
			  }
			}`, map[string]string{"node": "pve3", "candidates.1.reasons.0": "CPUOvercommit: (1+8)/8 = 1.125 > 1"}},
		{"memory overcommit exactly at the ratio passes", `name = "web"
			memory = 16384`, map[string]string{"node": "pve3", "candidates.0.reasons.0": "MemoryOvercommit: (4096+16384)/16384 MiB = 1.25 > 1"}},
		{"range", `name = "web"
			annotations = { "vmid.qemu-scheduler/range" = "150-160" }`, map[string]string{"vmid": "150"}},
		{"null annotation is absent", `name = "web"
			annotations = { "vmid.qemu-scheduler/range" = null }`, map[string]string{"vmid": "101"}},
		{"regex skips used ids", `name = "web"
			annotations = { "vmid.qemu-scheduler/regex" = "9[0-9]{3}" }`, map[string]string{"vmid": "9002"}},
		{"range beats regex", `name = "web"
			annotations = { "vmid.qemu-scheduler/range" = "300-310", "vmid.qemu-scheduler/regex" = "9[0-9]{3}" }`, map[string]string{"vmid": "300"}},
		{"pinned vmid beats annotations", `name = "web"
			vmid = 777
			annotations = { "vmid.qemu-scheduler/range" = "300-310" }`, map[string]string{"vmid": "777"}},
		{"pinned node", `name = "web"
			node = "pve1"
			storage = "local-lvm"`, map[string]string{"node": "pve1", "storage": "local-lvm", "candidates.1.reasons.0": `NodeName: pinned to "pve1"`}},
		{"reference deployed plugin-config.yaml, NodeResource enabled", `name = "web"
			memory = 20000
			plugin_config_yaml = <<-EOT
			  filters:
			    CPUOvercommit:
			      enable: false
			    MemoryOvercommit:
			      enable: false
			  scores:
			    NodeResource:
			      enable: true
			EOT`, map[string]string{"node": "pve2"}},
		{"reference plugin-config.yaml format example verbatim", `name = "web"
			cores = 40
			annotations = { "vmid.qemu-scheduler/regex" = "9[0-9]{3}" }
			plugin_config_yaml = <<-EOT
			  filters:            # map  plugin-name -> {enable, config}
			    CPUOvercommit:
			      enable: false
			    MemoryOvercommit:
			      enable: true
			  scores:
			    NodeResource:
			      enable: false
			  vmids:
			    Regex:
			      enable: false
			EOT`, map[string]string{"vmid": "101", "candidates.#": "4", "candidates.1.feasible": "true", "candidates.1.score": "100", "candidates.1.scores.%": "4", "candidates.1.scores.NodeAffinity": "0"}},
		{"block re-enables what YAML disabled", `name = "web"
			memory = 16384
			plugin_config_yaml = "filters: {MemoryOvercommit: {enable: false}}"
			plugin_config {
			  filter { name = "MemoryOvercommit" }
			}`, map[string]string{"node": "pve3"}},
		{"score weight", `name = "web"
			plugin_config {
			  score {
			    name   = "NodeResource"
			    weight = 2
			  }
			}`, map[string]string{"candidates.1.score": "273.13", "candidates.1.scores.NodeResource": "86.56"}},
	}
	env, _ := simEnv(t, labCluster()) // read-only cases share one cluster
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			placementChecks(t, env, "", tt.body, tt.attrs)
		})
	}
}

// The provider's plugin config is the bottom layer under each data source's own.
func TestAccPlacementProviderPluginConfig(t *testing.T) {
	tests := []struct {
		name, provider, body string
		attrs                map[string]string
	}{
		{name: "provider plugin config is the default", provider: `plugin_config {
			  filter {
			    name = "MemoryOvercommit"
			    args = { ratio = "2" }
			  }
			}`, body: `name = "web"
			memory = 20000`, attrs: map[string]string{"node": "pve2", "candidates.0.feasible": "true", "candidates.1.feasible": "true", "candidates.2.feasible": "true"}},
		{name: "data source config beats the provider's", provider: `plugin_config_yaml = "filters: {MemoryOvercommit: {config: {ratio: 2}}}"`, body: `name = "web"
			memory = 16384
			plugin_config {
			  filter {
			    name = "MemoryOvercommit"
			    args = { ratio = "1" }
			  }
			}`, attrs: map[string]string{"node": "pve3", "candidates.1.reasons.0": "MemoryOvercommit: (512+16384)/16384 MiB = 1.0313 > 1"}},
	}
	env, _ := simEnv(t, labCluster()) // read-only cases share one cluster
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			placementChecks(t, env, tt.provider, tt.body, tt.attrs)
		})
	}
}

func TestAccPlacementErrors(t *testing.T) {
	tests := []struct {
		name, provider, body string
		want                 string
	}{
		{"nothing fits", "", `name = "big"
			memory = 16385`, `0/4 nodes are available: 3 node\(s\) exceeded memory overcommit ratio 1, 1 node\(s\) were offline`},
		{"invalid node regex", "", `name = "a"
			annotations = { "node.qemu-scheduler/regex" = "pve[" }`, `invalid regex "pve\["`},
		{"annotation key typo", "", `name = "a"
			annotations = { "node.qemu-scheduler/regexp" = "pve1" }`, `unknown annotation "node.qemu-scheduler/regexp"; valid keys: node.qemu-scheduler/regex, vmid.qemu-scheduler/range, vmid.qemu-scheduler/regex`},
		{"range without dash", "", `name = "a"
			annotations = { "vmid.qemu-scheduler/range" = "150" }`, `invalid range "150": want START-END`},
		{"range below 100", "", `name = "a"
			annotations = { "vmid.qemu-scheduler/range" = "1-10" }`, `ids must lie within 100-999999999`},
		{"reversed range", "", `name = "a"
			annotations = { "vmid.qemu-scheduler/range" = "300-200" }`, `start 300 is greater than end 200`},
		{"range exhausted", "", `name = "a"
			annotations = { "vmid.qemu-scheduler/range" = "100-100" }`, `no free vmid in range 100-100: 1 of 1 in use`},
		{"unknown plugin in a block", "", `name = "a"
			plugin_config {
			  filter { name = "NodeNames" }
			}`, `unknown filter plugin "NodeNames"; valid filter plugins: NodeName, NodeOnline, NodeRegex, NodeSelector, TaintToleration, CPUOvercommit, MemoryOvercommit, StorageCapacity, VMAffinity, TopologySpread`},
		{"bad ratio", "", `name = "a"
			plugin_config {
			  filter {
			    name = "CPUOvercommit"
			    args = { ratio = "-2" }
			  }
			}`, `arg ratio must be a positive number, got "-2"`},
		{"malformed YAML", "", `name = "a"
			plugin_config_yaml = "filters: ["`, `invalid plugin config YAML`},
		{"name and names", "", `name = "a"
			names = ["b"]`, `Exactly one of these attributes must be configured: \[name,names\]`},
		{"neither name nor names", "", `cores = 2`, `Exactly one of these attributes must be configured: \[name,names\]`},
		{"cores below 1", "", `name = "a"
			cores = 0`, `Attribute cores value must be between 1 and 4096, got: 0`},
		{"pinned vmid in use", "", `name = "a"
			vmid = 100`, `VMID 100 is already in use`},
		{"pinned node unknown", "", `name = "a"
			node = "pve9"`, `node = "pve9": the cluster has no such node \(nodes: pve1, pve2, pve3, pve4\). Fix the name`},
		{"pinned node offline", "", `name = "a"
			node = "pve4"`, `0/4 nodes are available: 3 node\(s\) didn't match pinned node "pve4", 1 node\(s\) were offline`},
		{"pinned storage missing", "", `name = "a"
			storage = "nfs"`, `storage "nfs" does not exist on pve1`},
		{"provider: unknown plugin", `plugin_config_yaml = "scores: {Random: {}}"`, `name = "a"`, `unknown score plugin "Random"; valid score plugins: NodeResource, NodeAffinity, TaintToleration, VMAffinity, TopologySpread, LeastAllocated, MostAllocated, BalancedAllocation`},
	}
	env, _ := simEnv(t, labCluster()) // read-only cases share one cluster
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			placementFails(t, env, tt.provider, tt.body, wrapped(tt.want))
		})
	}
}

// A data source's names that do not all fit (three of the four, 10 GiB each on pve1 to pve3)
// end with what to reduce there, the names the data sources place, not a resource's count or
// for_each. A cluster of its own: the read is not decided together with other tests' reads.
func TestAccPlacementNamesDoNotAllFit(t *testing.T) {
	env, _ := simEnv(t, labCluster())
	placementFails(t, env, "", `names = ["w-1", "w-2", "w-3", "w-4"]
			memory = 10240`, wrapped(`Reduce the names the plan's qemuscheduler_placement data sources place \(their names, or their count\) or make room, then plan again\.`))
}

// placementChecks plans one placement data source on env's cluster, under the provider
// settings provider, and checks its attributes. Read-only, so the cases of one test share env.
func placementChecks(t *testing.T, env *accEnv, provider, body string, attrs map[string]string) {
	t.Helper()
	var checks []resource.TestCheckFunc
	for k, v := range attrs {
		checks = append(checks, resource.TestCheckResourceAttr(ds, k, v))
	}
	runParallel(t, resource.TestStep{Config: env.providerBlock(provider) + placement(body), Check: resource.ComposeAggregateTestCheckFunc(checks...)})
}

// placementFails is placementChecks for a placement that must fail with want.
func placementFails(t *testing.T, env *accEnv, provider, body string, want *regexp.Regexp) {
	t.Helper()
	runParallel(t, resource.TestStep{Config: env.providerBlock(provider) + placement(body), ExpectError: want})
}

func TestAccProviderConfigErrors(t *testing.T) {
	pem := "-----BEGIN CERTIFICATE-----\\nnope\\n-----END CERTIFICATE-----\\n"
	tests := []struct{ provider, want string }{
		{`endpoint = "pve:8006"
		  api_token = "a@pam!t=s"`, `endpoint "pve:8006" is not a URL`},
		{`endpoint = "https://pve:8006"
		  api_token = "root-token"`, `the API token must look like USER@REALM!TOKENID=SECRET`},
		{`endpoint = "https://pve:8006"
		  api_token = "a@pam!t=s"
		  password = "x"`, `Give either api_token or username and password, not both`},
		{`endpoint = "https://pve:8006"`, `Missing Proxmox VE credentials`},
		{`endpoint = "https://pve:8006"
		  api_token = "a@pam!t=s"
		  ca_cert = "` + pem + `"`, `ca_cert block 1 is not a valid certificate`},
		{`endpoint = "https://pve:8006"
		  api_token = "a@pam!t=s"
		  ca_cert = "/etc/pve/pve-root-ca.pem"`, `ca_cert is "/etc/pve/pve-root-ca.pem", a file name: write ca_cert = file("/etc/pve/pve-root-ca.pem")`},
		{`endpoint = "https://pve:8006"
		  api_token = "a@pam!t=s"
		  plugin_config_yaml = "filterz: {}"`, `unknown section "filterz"`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if strings.Contains(tt.want, "Missing") {
				t.Setenv("PROXMOX_VE_API_TOKEN", "")
				t.Setenv("PROXMOX_VE_USERNAME", "")
				t.Setenv("PROXMOX_VE_PASSWORD", "")
			}
			skipUnlessAcc(t) // the provider never reaches a cluster
			runSteps(t, resource.TestStep{
				Config:      "provider \"qemuscheduler\" {\n" + tt.provider + "\n}\n" + placement(`name = "a"`),
				ExpectError: wrapped(regexp.QuoteMeta(tt.want)),
			})
		})
	}
}

func TestAccPlacementMultiSpreadsTwoTwoTwo(t *testing.T) {
	env, _ := simEnv(t, equalCluster())
	runParallel(t, resource.TestStep{
		Config: env.config(placement(`names = ["w0", "w1", "w2", "w3", "w4", "w5"]
				memory = 4096`)),
		Check: func(s *terraform.State) error {
			attrs := s.RootModule().Resources[ds].Primary.Attributes
			perNode, ids := map[string]int{}, map[string]bool{}
			for i := 0; i < 6; i++ {
				perNode[attrs[fmt.Sprintf("placements.%d.node", i)]]++
				ids[attrs[fmt.Sprintf("placements.%d.vmid", i)]] = true
			}
			if perNode["pve1"] != 2 || perNode["pve2"] != 2 || perNode["pve3"] != 2 || len(ids) != 6 {
				return fmt.Errorf("placements per node %v, distinct ids %d; want 2-2-2 and 6", perNode, len(ids))
			}
			if attrs["placements.0.name"] != "w0" || attrs["node"] != attrs["placements.0.node"] {
				return fmt.Errorf("first placement = %s on %s; node = %s", attrs["placements.0.name"], attrs["placements.0.node"], attrs["node"])
			}
			return nil
		},
	})
}

// A VM that appears with the requested name is returned where it is, and the plan that
// feeds it to another resource stays empty.
func TestAccPlacementStickyFeedsOtherResources(t *testing.T) {
	env, _ := simEnv(t, labCluster())
	cfg := env.config(placement(`name = "web"`), `resource "terraform_data" "vm" {
  input = "${data.qemuscheduler_placement.p.node}/${data.qemuscheduler_placement.p.vmid}"
}`)
	createWeb := func() { env.createVM(t, "pve2", 101, map[string]string{"name": "web", "memory": "512", "start": "1"}) }
	runParallel(t,
		resource.TestStep{Config: cfg, Check: resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttr("terraform_data.vm", "output", "pve2/101"),
			resource.TestMatchResourceAttr(ds, "summary", regexp.MustCompile(`^web: pve2 \(score`)))},
		resource.TestStep{PreConfig: createWeb, Config: cfg, Check: resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttr(ds, "summary", "web: existing VM 101 stays on pve2, storage ceph"),
			resource.TestCheckResourceAttr(ds, "vmid", "101"),
			resource.TestCheckResourceAttr(ds, "node", "pve2"),
			resource.TestCheckResourceAttr("terraform_data.vm", "output", "pve2/101"))},
		resource.TestStep{Config: cfg, PlanOnly: true},
	)
}

// Data sources of one plan share a short-lived snapshot instead of each reading the cluster.
func TestAccPlacementSharesSnapshots(t *testing.T) {
	env := newAccEnv(t, labCluster())
	sim := env.needsSim(t)
	var hcl []string
	for i := 0; i < 8; i++ {
		hcl = append(hcl, fmt.Sprintf("data \"qemuscheduler_placement\" \"p%d\" {\n  name = \"vm-%d\"\n}\n", i, i))
	}
	runParallel(t, resource.TestStep{
		Config: env.config(hcl...),
		Check: func(*terraform.State) error {
			if n := sim.Requests("GET /cluster/resources"); n >= 8 {
				return fmt.Errorf("8 data sources read the cluster %d times; they should share snapshots", n)
			}
			return nil
		},
	})
}

// An endpoint that is only known after apply cannot configure the provider at plan time.
func TestAccProviderUnknownEndpoint(t *testing.T) {
	skipUnlessAcc(t) // the provider never reaches a cluster
	runSteps(t, resource.TestStep{
		Config: `resource "terraform_data" "endpoint" {
  input = "https://pve.example.com:8006"
}
provider "qemuscheduler" {
  endpoint  = terraform_data.endpoint.output
  api_token = "a@pam!t=s"
}
` + placement(`name = "a"`),
		ExpectError: wrapped(`The provider cannot connect before endpoint is known`),
	})
}

// Every way of connecting: token with a private CA, ticket login without TLS verification,
// and the bpg-compatible environment variables; plus the mistakes a user meets first.
func TestAccProviderConnections(t *testing.T) {
	tests := []struct {
		name     string
		provider func(sim *pvesim.Server) string
		env      func(sim *pvesim.Server) map[string]string
		want     string // error pattern; empty = the data source reads the cluster
	}{
		{name: "api token and ca_cert", provider: func(sim *pvesim.Server) string {
			return fmt.Sprintf("endpoint = %q\napi_token = %q\nca_cert = <<EOT\n%sEOT", sim.URL(), sim.APIToken(), sim.CACertPEM())
		}},
		{name: "username, password and insecure", provider: func(sim *pvesim.Server) string {
			user, pass := sim.Credentials()
			return fmt.Sprintf("endpoint = %q\nusername = %q\npassword = %q\ninsecure = true", sim.URL()+"/api2/json", user, pass)
		}},
		{name: "environment variables", env: func(sim *pvesim.Server) map[string]string {
			return map[string]string{"PROXMOX_VE_ENDPOINT": sim.URL(), "PROXMOX_VE_API_TOKEN": sim.APIToken(), "PROXMOX_VE_INSECURE": "true"}
		}},
		{name: "malformed PROXMOX_VE_INSECURE", env: func(sim *pvesim.Server) map[string]string {
			return map[string]string{"PROXMOX_VE_ENDPOINT": sim.URL(), "PROXMOX_VE_API_TOKEN": sim.APIToken(), "PROXMOX_VE_INSECURE": "yes"}
		}, want: `PROXMOX_VE_INSECURE is "yes", not a boolean: set it to true or false`},
		// A malformed value from the environment names its variable: the provider block the
		// error points at does not hold it.
		{name: "malformed PROXMOX_VE_API_TOKEN", env: func(sim *pvesim.Server) map[string]string {
			return map[string]string{"PROXMOX_VE_ENDPOINT": sim.URL(), "PROXMOX_VE_API_TOKEN": "terraform@pve", "PROXMOX_VE_INSECURE": "true"}
		}, want: `PROXMOX_VE_API_TOKEN: the API token must look like USER@REALM!TOKENID=SECRET`},
		{name: "malformed PROXMOX_VE_ENDPOINT", env: func(sim *pvesim.Server) map[string]string {
			return map[string]string{"PROXMOX_VE_ENDPOINT": strings.TrimPrefix(sim.URL(), "https://"), "PROXMOX_VE_API_TOKEN": sim.APIToken(), "PROXMOX_VE_INSECURE": "true"}
		}, want: `PROXMOX_VE_ENDPOINT: endpoint "127.0.0.1:\d+" is not a URL like https://pve.example.com:8006`},
		{name: "wrong token secret", provider: func(sim *pvesim.Server) string {
			id, _, _ := strings.Cut(sim.APIToken(), "=")
			return fmt.Sprintf("endpoint = %q\napi_token = %q\ninsecure = true", sim.URL(), id+"=wrong")
		}, want: `authentication failure: check api_token, or username and password \(HTTP 401\)`},
		{name: "certificate not trusted", provider: func(sim *pvesim.Server) string {
			return fmt.Sprintf("endpoint = %q\napi_token = %q", sim.URL(), sim.APIToken())
		}, want: `(?s)certificate signed by unknown authority.*Set ca_cert to the PEM of the CA`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := newAccEnv(t, labCluster()).needsSim(t)
			for _, k := range []string{config.EnvEndpoint, config.EnvToken, config.EnvUsername, config.EnvPassword, config.EnvInsecure} {
				t.Setenv(k, "")
			}
			block := ""
			if tt.provider != nil {
				block = tt.provider(sim)
			}
			if tt.env != nil {
				for k, v := range tt.env(sim) {
					t.Setenv(k, v)
				}
			}
			step := resource.TestStep{Config: "provider \"qemuscheduler\" {\n" + block + "\n}\n" + placement(`name = "web"`)}
			if tt.want == "" {
				step.Check = resource.TestCheckResourceAttr(ds, "node", "pve2")
			} else {
				step.ExpectError = wrapped(tt.want)
			}
			runSteps(t, step)
		})
	}
}

// Runs on the simulator and on a real cluster alike (read-only): the answer agrees with its
// own explanation and honours the range; on the simulator, a resource fed the decision has an
// empty second plan. A real cluster's loads move between two plans, and the decision with
// them, so there the data source alone is read twice (a plan after the apply would otherwise
// show the resource's change).
func TestAccPlacementConsistentOnAnyCluster(t *testing.T) {
	env := newAccEnv(t, labCluster())
	cfg := env.config(placement(`name = "qemuscheduler-acc-probe"
  annotations = { "vmid.qemu-scheduler/range" = ` + strconv.Quote(labRange) + ` }`))
	consistent := func(s *terraform.State) error {
		attrs := s.RootModule().Resources[ds].Primary.Attributes
		if vmid := attrs["vmid"]; len(vmid) != 6 || !strings.HasPrefix(vmid, "990") {
			return fmt.Errorf("vmid %s outside the range 990000-990999", vmid)
		}
		best, chosen := -1.0, -1.0
		n, err := strconv.Atoi(attrs["candidates.#"])
		if err != nil {
			return fmt.Errorf("candidates.#: %w", err)
		}
		for i := 0; i < n; i++ {
			c := func(k string) string { return attrs[fmt.Sprintf("candidates.%d.%s", i, k)] }
			if c("feasible") != "true" {
				continue
			}
			score, err := strconv.ParseFloat(c("score"), 64)
			if err != nil {
				return err
			}
			best = max(best, score)
			if c("node") == attrs["node"] {
				chosen = score
			}
		}
		if chosen < 0 || chosen != best {
			return fmt.Errorf("chose %s (score %v) but the best feasible score is %v", attrs["node"], chosen, best)
		}
		return nil
	}
	if env.sim == nil {
		runParallel(t, resource.TestStep{Config: cfg, Check: consistent}, resource.TestStep{Config: cfg, Check: consistent})
		return
	}
	fed := cfg + `resource "terraform_data" "vm" {
  input = data.qemuscheduler_placement.p.id
}`
	runParallel(t, resource.TestStep{Config: fed, Check: consistent}, resource.TestStep{Config: fed, PlanOnly: true})
}

// An annotation known only after apply defers the read to apply instead of failing the plan.
func TestAccPlacementAnnotationKnownAfterApply(t *testing.T) {
	env, _ := simEnv(t, labCluster())
	runParallel(t, resource.TestStep{
		Config: env.config(`resource "terraform_data" "regex" {
  input = "pve[13]"
}
`, placement(`name = "web"
  annotations = { "node.qemu-scheduler/regex" = terraform_data.regex.output }`)),
		Check: resource.TestCheckResourceAttr(ds, "node", "pve3"),
	})
}

// A placement read after the apply that created its VM (depends_on) sees the VM: it is kept
// where it is, even when the process read the cluster a moment before creating it.
func TestAccPlacementAfterApplySeesTheNewVM(t *testing.T) {
	env, _ := simEnv(t, equalCluster())
	runSteps(t, resource.TestStep{
		Config: env.config(`
data "qemuscheduler_placement" "before" {
  name = "probe"
}
resource "qemuscheduler_vm" "web" {
  name = "web-1"
}
data "qemuscheduler_placement" "p" {
  name       = qemuscheduler_vm.web.name
  depends_on = [qemuscheduler_vm.web]
}`),
		Check: resource.ComposeAggregateTestCheckFunc(
			resource.TestMatchResourceAttr(ds, "summary", regexp.MustCompile(`^web-1: existing VM \d+ stays on `)),
			resource.TestCheckResourceAttrPair(ds, "vmid", vmAddr, "vmid"),
			resource.TestCheckResourceAttrPair(ds, "node", vmAddr, "node"),
		),
	})
}

// A VM placed earlier in the same plan (another data source's pick) is named in a reason as
// planned, not as a create in flight: nothing is being created during a plan.
func TestAccPlacementReasonNamesPlannedVMs(t *testing.T) {
	env, _ := simEnv(t, equalCluster())
	web := func(name, extra string) string {
		return fmt.Sprintf(`data "qemuscheduler_placement" %q {
  name = %q
  vmid = %d
  tags = ["web"]
  vm_anti_affinity {
    tags         = ["web"]
    topology_key = "node"
  }
  %s
}
`, name, name, map[string]int{"p0": 500, "p": 501}[name], extra)
	}
	runParallel(t, resource.TestStep{
		Config: env.config(web("p0", ""), web("p", "depends_on = [data.qemuscheduler_placement.p0]")),
		Check: func(s *terraform.State) error {
			first := s.RootModule().Resources["data.qemuscheduler_placement.p0"].Primary.Attributes["node"]
			attrs := s.RootModule().Resources[ds].Primary.Attributes
			for i := 0; attrs[fmt.Sprintf("candidates.%d.node", i)] != ""; i++ {
				if attrs[fmt.Sprintf("candidates.%d.node", i)] != first {
					continue
				}
				want := fmt.Sprintf("VMAntiAffinity: %s already runs 1 guest tagged [web]: 500 (planned)", first)
				if got := attrs[fmt.Sprintf("candidates.%d.reasons.0", i)]; got != want {
					return fmt.Errorf("reason on %s = %q, want %q", first, got, want)
				}
				return nil
			}
			return fmt.Errorf("no candidate %s in %v", first, attrs)
		},
	})
}

// Two guests sharing the requested name cannot be told apart, so neither keeps its place: the
// name is placed as a new VM, and the plan says why, naming both guests;
// silently, a bpg VM fed the new node and VMID would be replaced.
func TestAccPlacementNameSharedByGuests(t *testing.T) {
	cluster := labCluster()
	cluster.Guests = append(cluster.Guests,
		pvesim.GuestSpec{VMID: 150, Node: "pve2", Name: "web", Cores: 1, MemoryMiB: 512},
		pvesim.GuestSpec{VMID: 151, Node: "pve3", Name: "web", Cores: 1, MemoryMiB: 512})
	env := newAccEnv(t, cluster)
	env.needsSim(t)
	log := &warningLog{}
	runLoggingWarnings(t, log, resource.TestStep{Config: env.config(placement(`name = "web"`)), Check: resource.ComposeAggregateTestCheckFunc(
		resource.TestMatchResourceAttr(ds, "summary", regexp.MustCompile(`^web: pve\d \(score`)),
		log.has(`Several guests are named "web"`, "150 (pve2), 151 (pve3)", "placed as a new VM"),
	)})
}

// An annotation the plugin config leaves no plugin to read is ignored by the decision, and
// both the data source and a new VM's plan warn on it, naming the disabled plugin.
func TestAccAnnotationOfADisabledPlugin(t *testing.T) {
	env := newAccEnv(t, labCluster())
	env.needsSim(t)
	provider := env.providerBlock(`plugin_config {
  filter {
    name   = "NodeRegex"
    enable = false
  }
}`)
	log := &warningLog{}
	runLoggingWarnings(t, log, resource.TestStep{
		Config: provider + placement(`name = "a"
  annotations = { "node.qemu-scheduler/regex" = "pve3" }`) + `resource "qemuscheduler_vm" "web" {
  name        = "web-1"
  annotations = { "node.qemu-scheduler/regex" = "pve2" }
}`,
		PlanOnly: true, ExpectNonEmptyPlan: true,
	})
	for _, node := range []string{"pve3", "pve2"} { // the data source's, the VM's
		if err := log.has(`Annotation ignored: node.qemu-scheduler/regex = "` + node + `" is ignored: the plugin config disables NodeRegex`)(nil); err != nil {
			t.Error(err)
		}
	}
}

package provider

import (
	"context"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/nodelabels"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/plugins"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// policyCluster is the lab cluster with node facts: Notes on pve1 (one malformed line) and on
// the offline pve4, pve2 in HA maintenance, pve1 reporting its arch.
func policyCluster() pvesim.Cluster {
	c := labCluster()
	c.Nodes[0].Notes = "Rack 4\nqemu-scheduler/labels: zone=a, disk=nvme\n- qemu-scheduler/labels: Bad Key=x\nqemu-scheduler/taints: old-hw:PreferNoSchedule\nqemu-scheduler/taint: gpu:NoSchedule"
	c.Nodes[0].Arch = "x86_64"
	c.Nodes[1].HAState = "maintenance"
	c.Nodes[1].Notes = "  - qemu-scheduler/labels: zone=b"
	c.Nodes[3].Notes = "qemu-scheduler/labels: zone=c"
	return c
}

const policyProvider = `
  read_node_notes = true
  node {
    name   = "pve1"
    labels = { zone = "z1" }
  }
  node {
    name   = "pve3"
    labels = { gpu = "a100", zone = "z3" }
    taints = ["gpu=a100:NoSchedule"]
  }`

// TestAccNodesDataSource: labels from Notes only (pve2), from blocks only (pve3), both with
// the block winning (pve1); built-ins; maintenance; an offline node without Notes labels;
// names_regex; a second plan is empty.
func TestAccNodesDataSource(t *testing.T) {
	env, _ := simEnv(t, policyCluster())
	all, some := "data.qemuscheduler_nodes.all", "data.qemuscheduler_nodes.some"
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders,
		Steps: []resource.TestStep{{
			Config: env.providerBlock(policyProvider) + `
data "qemuscheduler_nodes" "all" {}
data "qemuscheduler_nodes" "some" { names_regex = "pve[12]" }
output "zones" { value = jsonencode({ for n in data.qemuscheduler_nodes.all.nodes : n.name => lookup(n.labels, "zone", "") }) }
`,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(all, "nodes.#", "4"),
				resource.TestCheckResourceAttr(all, "nodes.0.name", "pve1"),
				resource.TestCheckResourceAttr(all, "nodes.0.labels.%", "4"),
				resource.TestCheckResourceAttr(all, "nodes.0.labels.zone", "z1"),
				resource.TestCheckResourceAttr(all, "nodes.0.labels.disk", "nvme"),
				resource.TestCheckResourceAttr(all, "nodes.0.labels."+nodelabels.LabelName, "pve1"),
				resource.TestCheckResourceAttr(all, "nodes.0.labels."+nodelabels.LabelArch, "x86_64"),
				resource.TestCheckResourceAttr(all, "nodes.0.taints.#", "1"),
				resource.TestCheckResourceAttr(all, "nodes.0.taints.0", "old-hw:PreferNoSchedule"),
				resource.TestCheckResourceAttr(all, "nodes.0.maintenance", "false"),
				resource.TestCheckResourceAttr(all, "nodes.0.cpus", "8"),
				resource.TestCheckResourceAttr(all, "nodes.0.memory_mib", "16384"),
				resource.TestCheckResourceAttr(all, "nodes.0.allocated_vcpus", "4"),
				resource.TestCheckResourceAttr(all, "nodes.0.allocated_memory_mib", "4096"),
				resource.TestCheckResourceAttr(all, "nodes.0.running_guests", "1"),
				resource.TestCheckResourceAttr(all, "nodes.0.guests", "1"),
				resource.TestCheckResourceAttr(all, "nodes.0.storages.#", "2"),
				resource.TestCheckResourceAttr(all, "nodes.0.storages.0.name", "ceph"),
				resource.TestCheckResourceAttr(all, "nodes.0.storages.0.shared", "true"),
				resource.TestCheckResourceAttr(all, "nodes.0.storages.0.free_gib", "1000"),
				resource.TestCheckResourceAttr(all, "nodes.0.storages.1.total_gib", "500"),
				resource.TestCheckResourceAttr(all, "nodes.1.maintenance", "true"),
				resource.TestCheckResourceAttr(all, "nodes.1.labels.zone", "b"),
				resource.TestCheckResourceAttr(all, "nodes.1.taints.0", "node.qemu-scheduler/maintenance:NoSchedule"),
				resource.TestCheckResourceAttr(all, "nodes.1.running_guests", "1"),
				resource.TestCheckResourceAttr(all, "nodes.2.labels.gpu", "a100"),
				resource.TestCheckResourceAttr(all, "nodes.2.labels.zone", "z3"),
				resource.TestCheckResourceAttr(all, "nodes.2.taints.0", "gpu=a100:NoSchedule"),
				resource.TestCheckResourceAttr(all, "nodes.3.online", "false"),
				resource.TestCheckResourceAttr(all, "nodes.3.labels.%", "1"),
				resource.TestCheckResourceAttr(all, "nodes.3.taints.#", "0"),
				resource.TestCheckResourceAttr(some, "nodes.#", "2"),
				resource.TestCheckResourceAttr(some, "nodes.1.name", "pve2"),
				resource.TestCheckOutput("zones", `{"pve1":"z1","pve2":"b","pve3":"z3","pve4":""}`),
			),
		}, {
			Config: env.providerBlock(policyProvider) + `
data "qemuscheduler_nodes" "all" {}
data "qemuscheduler_nodes" "some" { names_regex = "pve[12]" }
output "zones" { value = jsonencode({ for n in data.qemuscheduler_nodes.all.nodes : n.name => lookup(n.labels, "zone", "") }) }
`,
			PlanOnly: true,
		}},
	})
}

// A token without Sys.Audit: the Notes give nothing, the rest still works.
func TestAccNodesNotesForbidden(t *testing.T) {
	env := newAccEnv(t, policyCluster())
	env.needsSim(t).Forbid("GET /nodes/{node}/config", "/", "Sys.Audit")
	all := "data.qemuscheduler_nodes.all"
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders,
		Steps: []resource.TestStep{{
			Config: env.providerBlock(policyProvider) + `data "qemuscheduler_nodes" "all" {}`,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(all, "nodes.0.labels.zone", "z1"),
				resource.TestCheckNoResourceAttr(all, "nodes.0.labels.disk"),
				resource.TestCheckNoResourceAttr(all, "nodes.1.labels.zone"),
				resource.TestCheckResourceAttr(all, "nodes.1.taints.0", "node.qemu-scheduler/maintenance:NoSchedule"),
			),
		}},
	})
}

func TestAccNodeBlockErrors(t *testing.T) {
	tests := []struct {
		name, block string
		want        string
	}{
		{"label key", `labels = { "bad key" = "x" }`, `Invalid label key[\s\S]*labels = \{ "bad key"[\s\S]*may hold only`},
		{"label value", `labels = { zone = "a b" }`, `Invalid label value[\s\S]*labels = \{ zone = "a b" \}[\s\S]*value "a b" may hold only`},
		{"reserved key", `labels = { "node.qemu-scheduler/name" = "x" }`, `Invalid label key[\s\S]*reserved for the built-in labels`},
		{"taint effect", `taints = ["gpu:Never"]`, `Invalid taint[\s\S]*taints = \["gpu:Never"\][\s\S]*has effect "Never"; use one of NoSchedule`},
		{"taint without effect", `taints = ["gpu"]`, `Invalid taint[\s\S]*has no effect`},
		{"duplicate taint", `taints = ["gpu=a:NoSchedule", "gpu=b:NoSchedule"]`, `Duplicate taint[\s\S]*taints 0 and 1 both have key "gpu"`},
	}
	env, _ := simEnv(t, labCluster()) // read-only cases share one cluster
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			placementFails(t, env, "node {\n  name = \"pve1\"\n  "+tt.block+"\n}", `name = "web"`, regexp.MustCompile(tt.want))
		})
	}
	t.Run("duplicate block", func(t *testing.T) {
		placementFails(t, env, "node {\n name = \"pve1\"\n}\nnode {\n name = \"pve1\"\n}", `name = "web"`,
			regexp.MustCompile(`Duplicate node block[\s\S]*node "pve1" has two blocks \(0 and 1\)`))
	})
}

// newTestPolicy builds a node policy reading Notes from a simulated cluster.
func newTestPolicy(t *testing.T, sim *pvesim.Server, blocks map[string]nodelabels.Set) (*config.NodePolicy, *proxmox.Client) {
	t.Helper()
	client := simClient(t, sim)
	return config.NewNodePolicy(blocks, proxmox.NewNotesCache(client)), client
}

func policySnapshot(t *testing.T, np *config.NodePolicy, client *proxmox.Client) scheduler.Snapshot {
	t.Helper()
	snap, err := client.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	np.Apply(context.Background(), &snap)
	return snap
}

// Warnings about node facts are shown once per process: a malformed Notes entry (naming node
// and line), a qemu-scheduler/ line with a typo in its key (naming the known keys) and a block for a node the cluster does not have; the rest of the Notes applies.
func TestNodePolicyWarnsOnce(t *testing.T) {
	sim := pvesim.NewTestServer(t, policyCluster())
	np, client := newTestPolicy(t, sim, map[string]nodelabels.Set{"pve9": {Labels: map[string]string{"zone": "x"}}})
	snap := policySnapshot(t, np, client)
	var texts []string
	for _, d := range np.Warnings() {
		texts = append(texts, d.Summary()+": "+d.Detail())
	}
	if len(texts) != 3 ||
		!strings.Contains(texts[0], `Malformed node Notes entry: node pve1, Notes line 3 "- qemu-scheduler/labels: Bad Key=x": label key "Bad Key"`) ||
		!strings.Contains(texts[1], `Malformed node Notes entry: node pve1, Notes line 5 "qemu-scheduler/taint: gpu:NoSchedule": unknown key qemu-scheduler/taint; `+
			`the known keys are qemu-scheduler/labels and qemu-scheduler/taints (each followed by a colon); the line is ignored. Fix the node's Notes`) ||
		!strings.Contains(texts[2], `node block "pve9" names no node of the cluster (nodes: pve1, pve2, pve3, pve4)`) {
		t.Errorf("warnings = %q", texts)
	}
	if want := map[string]string{"zone": "a", "disk": "nvme", nodelabels.LabelName: "pve1", nodelabels.LabelArch: "x86_64"}; !reflect.DeepEqual(snap.Nodes[0].Labels, want) {
		t.Errorf("pve1 labels = %v, want %v", snap.Nodes[0].Labels, want)
	}
	reads := sim.Requests("GET /nodes/{node}/config")
	policySnapshot(t, np, client)
	if w := np.Warnings(); len(w) != 0 || sim.Requests("GET /nodes/{node}/config") != reads {
		t.Errorf("second snapshot: warnings %v, %d more Notes reads", w, sim.Requests("GET /nodes/{node}/config")-reads)
	}
	if reads != 3 {
		t.Errorf("%d Notes reads, want 3 (one per online node)", reads)
	}
}

func TestNodePolicyForbiddenNotes(t *testing.T) {
	sim := pvesim.NewTestServer(t, policyCluster())
	sim.Forbid("GET /nodes/{node}/config", "/", "Sys.Audit")
	np, client := newTestPolicy(t, sim, nil)
	snap := policySnapshot(t, np, client)
	w := np.Warnings()
	if len(w) != 1 || !strings.Contains(w[0].Detail(), "Sys.Audit") || !strings.Contains(w[0].Detail(), "read_node_notes = false") {
		t.Errorf("warnings = %v, want one naming Sys.Audit and the switch", w)
	}
	if _, has := snap.Nodes[0].Labels["zone"]; has {
		t.Errorf("pve1 has Notes labels although they could not be read: %v", snap.Nodes[0].Labels)
	}
	policySnapshot(t, np, client)
	if w := np.Warnings(); len(w) != 0 {
		t.Errorf("warned again: %v", w)
	}
}

// With read_node_notes off a decision costs the snapshot's requests only (at most 2).
func TestNodePolicyNotesOffRequests(t *testing.T) {
	sim := pvesim.NewTestServer(t, policyCluster())
	client := simClient(t, sim)
	data := &config.Data{Client: client, Nodes: config.NewNodePolicy(map[string]nodelabels.Set{"pve3": {Taints: []scheduler.Taint{{Key: "gpu", Effect: "NoSchedule"}}}}, nil)}
	snap, err := data.SnapshotSince(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	req := scheduler.Request{Name: "web", Cores: 1, Sockets: 1, MemoryMiB: 512, NodeSelector: map[string]string{nodelabels.LabelName: "pve3"},
		Tolerations: []scheduler.Toleration{{Key: "gpu", Operator: "Exists"}}}
	p, err := plugins.NewProfile(scheduler.PluginConfig{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Schedule(snap, []scheduler.Request{req}, scheduler.Options{})
	if err != nil || d.Placements[0].Node != "pve3" {
		t.Fatalf("decision %+v, %v", d, err)
	}
	if n := sim.TotalRequests(); n > 2 {
		t.Errorf("a decision cost %d requests, want at most 2", n)
	}
}

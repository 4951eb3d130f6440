package config

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	providerschema "github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/nodelabels"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// NodeBlockModel is one provider `node` block: the labels and taints of one PVE node, which
// has none of its own. Terraform blocks cannot carry labels, so the node name is an attribute.
type NodeBlockModel struct {
	Name   types.String `tfsdk:"name"`
	Labels types.Map    `tfsdk:"labels"`
	Taints types.List   `tfsdk:"taints"`
}

const nodeBlockDescription = "Labels and taints of one Proxmox VE node (PVE nodes have none of their own), for `node_selector`, " +
	"`node_affinity` and `toleration` in data sources and resources. Repeatable, one block per node; the source of truth: " +
	"with `read_node_notes`, a block's labels and taints win per key over the node's Notes. A name that is not a node of the " +
	"cluster is a warning. Every node also carries the built-in labels `" + nodelabels.LabelName + "` and `" + nodelabels.LabelArch +
	"` (PVE's `host-arch`, when reported), and the built-in taints `" + nodelabels.TaintMaintenance + ":NoSchedule` (HA " +
	"maintenance, `ha-manager crm-command node-maintenance enable`) and `" + nodelabels.TaintHAFenced + ":NoSchedule` (HA " +
	"state `fence` or `gone`)."

const ReadNodeNotesDescription = "Also read labels and taints from each node's Notes (PVE UI: Node > Notes), lines " +
	"`qemu-scheduler/labels: zone=a, disk=nvme` and `qemu-scheduler/taints: dedicated=db:NoSchedule, old-hw:PreferNoSchedule` " +
	"(leading spaces and `- ` allowed). Read once per provider process, one small request per node; needs `Sys.Audit` on `/` " +
	"(without it: one warning, no Notes labels). A malformed entry is skipped with a warning. An offline node's Notes cannot " +
	"be read: nothing is placed on it, and it keeps its place in the HA rules it is in (a rule is not rewritten because a " +
	"node is down). Default false."

func ProviderNodeBlock() providerschema.Block {
	return providerschema.ListNestedBlock{
		Description: nodeBlockDescription,
		NestedObject: providerschema.NestedBlockObject{
			Attributes: map[string]providerschema.Attribute{
				"name": providerschema.StringAttribute{Required: true, Description: "The PVE node name, e.g. `pve1`."},
				"labels": providerschema.MapAttribute{Optional: true, ElementType: types.StringType,
					Description: "Labels in Kubernetes syntax: keys `[prefix/]name` (name at most 63 characters `[A-Za-z0-9._-]`, " +
						"starting and ending alphanumeric; prefix a lowercase DNS subdomain), values the same or empty. " +
						"The prefix `" + nodelabels.ReservedPrefix + "` is reserved for the built-ins."},
				"taints": providerschema.ListAttribute{Optional: true, ElementType: types.StringType,
					Description: "Taints `key[=value]:Effect`, Effect `NoSchedule` (only VMs that tolerate it), `PreferNoSchedule` " +
						"(avoided when possible) or `NoExecute` (treated as `NoSchedule` at placement), e.g. `dedicated=db:NoSchedule`."},
			},
		},
	}
}

// NodeBlocks checks every node block, each error on the attribute that holds it, and returns
// the labels and taints per node name. Values still unknown at plan time are skipped.
func NodeBlocks(ctx context.Context, blocks []NodeBlockModel) (map[string]nodelabels.Set, diag.Diagnostics) {
	var diags diag.Diagnostics
	out := make(map[string]nodelabels.Set, len(blocks))
	first := map[string]int{}
	for i, b := range blocks {
		at := path.Root("node").AtListIndex(i)
		set := nodelabels.Set{Labels: map[string]string{}}
		if !b.Labels.IsUnknown() {
			var labels map[string]types.String
			diags.Append(b.Labels.ElementsAs(ctx, &labels, false)...)
			for k, v := range labels {
				switch err := nodelabels.ValidateUserKey(k); {
				case err != nil:
					diags.AddAttributeError(at.AtName("labels").AtMapKey(k), "Invalid label key", err.Error())
				case v.IsUnknown() || v.IsNull():
				default:
					if err := nodelabels.ValidateValue(v.ValueString()); err != nil {
						diags.AddAttributeError(at.AtName("labels").AtMapKey(k), "Invalid label value", err.Error())
					}
					set.Labels[k] = v.ValueString()
				}
			}
		}
		if !b.Taints.IsUnknown() {
			var taints []types.String
			diags.Append(b.Taints.ElementsAs(ctx, &taints, false)...)
			seen := map[[2]string]int{}
			for j, s := range taints {
				if !kit.Known(s) {
					continue
				}
				t, err := nodelabels.ParseUserTaint(s.ValueString())
				if err != nil {
					diags.AddAttributeError(at.AtName("taints").AtListIndex(j), "Invalid taint", err.Error())
					continue
				}
				if k, dup := seen[[2]string{t.Key, t.Effect}]; dup {
					diags.AddAttributeError(at.AtName("taints").AtListIndex(j), "Duplicate taint",
						fmt.Sprintf("taints %d and %d both have key %q and effect %s; keep one", k, j, t.Key, t.Effect))
					continue
				}
				seen[[2]string{t.Key, t.Effect}] = j
				set.Taints = append(set.Taints, t)
			}
		}
		if !kit.Known(b.Name) {
			continue
		}
		name := b.Name.ValueString()
		if j, dup := first[name]; dup {
			diags.AddAttributeError(at.AtName("name"), "Duplicate node block",
				fmt.Sprintf("node %q has two blocks (%d and %d); put all its labels and taints in one.", name, j, i))
			continue
		}
		first[name] = i
		out[name] = set
	}
	return out, diags
}

// NodePolicy gives the nodes of every snapshot their labels and taints: the provider's node
// blocks, the Notes (when read_node_notes is on) and the built-ins. Warnings about them
// (Notes problems, blocks naming no node) are process-wide facts: they are queued once and
// shown by the next data source or resource that reads the cluster.
type NodePolicy struct {
	blocks map[string]nodelabels.Set
	notes  *proxmox.NotesCache // nil when read_node_notes is off

	mu     sync.Mutex
	parsed map[string]nodelabels.Set // each node's Notes, parsed once
	// problems are the warnings about each node's Notes lines, for an error a label it lacks
	// causes (NotesProblems).
	problems map[string][]string
	checked  bool // block names compared with the cluster's nodes
	pending  diag.Diagnostics
}

func NewNodePolicy(blocks map[string]nodelabels.Set, notes *proxmox.NotesCache) *NodePolicy {
	return &NodePolicy{blocks: blocks, notes: notes, parsed: map[string]nodelabels.Set{}, problems: map[string][]string{}}
}

// Apply sets Labels and Taints on every node of snap. A nil policy (no node blocks, no
// Notes) still gives the built-ins.
func (np *NodePolicy) Apply(ctx context.Context, snap *scheduler.Snapshot) {
	if np == nil {
		composeNodes(snap, nil, nil)
		return
	}
	names := make([]string, len(snap.Nodes))
	var online []string // an offline node's config cannot be read (PVE answers 595)
	for i, n := range snap.Nodes {
		names[i] = n.Name
		if n.Online {
			online = append(online, n.Name)
		}
	}
	np.mu.Lock()
	defer np.mu.Unlock()
	if np.notes != nil {
		read := np.notes.Read(ctx, online)
		for _, w := range read.Warnings {
			np.pending.AddWarning("Node Notes not read", w)
		}
		for _, name := range read.Fresh {
			set, warnings := nodelabels.ParseNotes(name, read.Notes[name])
			np.parsed[name], np.problems[name] = set, warnings
			for _, w := range warnings {
				np.pending.AddWarning("Malformed node Notes entry", w+". Fix the node's Notes in the PVE UI (Node > Notes).")
			}
		}
	}
	if !np.checked {
		np.checked = true
		np.warnUnknownBlocks(names)
	}
	composeNodes(snap, np.blocks, np.parsed)
}

func composeNodes(snap *scheduler.Snapshot, blocks, notes map[string]nodelabels.Set) {
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		set := nodelabels.Compose(nodelabels.Facts{Name: n.Name, Arch: n.Arch, HAState: n.HAState}, blocks[n.Name], notes[n.Name])
		n.Labels, n.Taints = set.Labels, set.Taints
	}
}

func (np *NodePolicy) warnUnknownBlocks(nodes []string) {
	present := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		present[n] = true
	}
	var unknown []string
	for name := range np.blocks {
		if !present[name] {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	sorted := append([]string(nil), nodes...)
	sort.Strings(sorted)
	for _, name := range unknown {
		np.pending.AddWarning("Unknown node in a provider node block",
			fmt.Sprintf("The provider's node block %q names no node of the cluster (nodes: %s); its labels and taints apply to nothing. "+
				"Fix the name or remove the block.", name, strings.Join(sorted, ", ")))
	}
}

// NotesProblems are the warnings about node's Notes lines that were ignored or skipped (a
// typo of the key, a malformed entry), in the order of its Notes; none for a nil policy.
func (np *NodePolicy) NotesProblems(node string) []string {
	if np == nil {
		return nil
	}
	np.mu.Lock()
	defer np.mu.Unlock()
	return slices.Clone(np.problems[node])
}

// warnings returns the queued warnings and forgets them, so each is shown once per process.
// queue adds a process-wide warning about the cluster (a node's or a guest's Notes) for the
// next reader.
func (np *NodePolicy) Queue(summary, detail string) {
	np.mu.Lock()
	defer np.mu.Unlock()
	np.pending.AddWarning(summary, detail)
}

func (np *NodePolicy) Warnings() diag.Diagnostics {
	if np == nil {
		return nil
	}
	np.mu.Lock()
	defer np.mu.Unlock()
	out := np.pending
	np.pending = nil
	return out
}

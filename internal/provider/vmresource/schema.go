package vmresource

import (
	"context"
	"maps"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/setplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/scheduling"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/cloudinit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/disk"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/firmware"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/network"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

func keepString() []planmodifier.String {
	return []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
}

func keepInt64() []planmodifier.Int64 {
	return []planmodifier.Int64{int64planmodifier.UseStateForUnknown()}
}

func keepBool() []planmodifier.Bool {
	return []planmodifier.Bool{boolplanmodifier.UseStateForUnknown()}
}

func (r *Resource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Version: vmSchemaVersion,
		Description: "A QEMU VM placed by the scheduler and created there, by clone or from scratch. The plan checks that " +
			"the plan's new VMs fit together, all or nothing; the final, race-free decision (node and VMID) is taken at apply. After creation the placement " +
			"is sticky: later changes to annotations or plugin config do not move the VM (the plan warns when its node no " +
			"longer passes a hard filter). Changing a pinned `node` migrates the VM; changing `vmid` or `clone` replaces it.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, PlanModifiers: keepString(),
				Description: "The VMID, which is cluster-unique and survives migration."},
			"node": schema.StringAttribute{Optional: true, Computed: true, PlanModifiers: keepString(),
				Validators: []validator.String{stringvalidator.RegexMatches(kit.NodeName, "must be a node name: letters, digits and '-'")},
				Description: "Pin the node (the NodeName filter; the other filters still apply), or read where the VM runs. " +
					"Unpinned, a move by HA or by hand is not drift; pinned, changing it migrates the VM (online when running). " +
					"A pinned VM that the HA manager moves (see `ha`) keeps the pin here, so its failover is not drift either; " +
					"changing the pin migrates it through the HA manager, and removing it makes this the node where the VM runs."},
			"vmid": schema.Int64Attribute{Optional: true, Computed: true,
				PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown(), int64planmodifier.RequiresReplace()},
				Validators:    []validator.Int64{int64validator.Between(scheduler.MinVMID, scheduler.MaxVMID)},
				Description:   "Pin the VMID (must be free; beats the vmid annotations), or read the one chosen. Changing it replaces the VM."},
			"storage": schema.StringAttribute{Computed: true, PlanModifiers: keepString(),
				Description: "The storage chosen for disks without their own `storage` (and for full clones without `clone.storage`)."},
			"placement_summary": schema.StringAttribute{Computed: true, PlanModifiers: keepString(),
				Description: "Why the VM went where it did, as decided at create; after a migration it names the node the VM runs on and where it was placed (`web-1: pve3 (migrated; placed on pve2 with score ...)`)."},
			"name": schema.StringAttribute{Required: true,
				Validators:  []validator.String{kit.DNSNameCheck},
				Description: "VM name: a DNS name (letters, digits and '-', dot-separated labels of at most 63 characters that neither start nor end with '-'), as PVE and DNS require; also the scheduler's tie-break seed. The new VMs of a plan need distinct names (with count, e.g. `web-${count.index}`): the plan tells them apart by name."},
			"description": schema.StringAttribute{Optional: true, Computed: true, PlanModifiers: keepString(),
				Validators: []validator.String{stringvalidator.LengthAtMost(kit.MaxDescription), kit.UserNotesCheck{}}, Description: "VM notes (at most 8 KiB). The provider keeps the VM's placement record below them in PVE's Notes; it is not part of this attribute."},
			"tags": schema.SetAttribute{Optional: true, Computed: true, ElementType: types.StringType,
				PlanModifiers: []planmodifier.Set{setplanmodifier.UseStateForUnknown()},
				Validators: []validator.Set{setvalidator.ValueStringsAre(stringvalidator.RegexMatches(kit.TagFormat,
					"must be lowercase letters, digits and _ - + . (PVE lowercases tags; writing them lowercase avoids a perpetual diff)"), kit.UserTagCheck{})},
				Description: "Tags. PVE stores them lowercased and sorted; a set of lowercase tags reads back unchanged."},
			"pool": schema.StringAttribute{Optional: true, PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:  []validator.String{stringvalidator.RegexMatches(kit.PoolID, "must be a pool name: letters, digits, '_', '-' and '.'")},
				Description: "Resource pool to create the VM in; the plan fails on a pool the cluster does not list (create it first, e.g. in an earlier apply). Changing it replaces the VM."},
			"cores": schema.Int64Attribute{Optional: true, Computed: true, PlanModifiers: keepInt64(),
				Validators: []validator.Int64{int64validator.Between(1, proxmox.MaxVCPUs)}, Description: "Cores per socket (1-4096; cores x sockets at most 4096, and at most the CPUs of the VM's node, as PVE starts no VM with more vCPUs than its node has: such nodes are filtered out, and growing past the node's CPUs is a plan error). Default: the clone source's, else 1." + disk.RunningNote},
			"sockets": schema.Int64Attribute{Optional: true, Computed: true, PlanModifiers: keepInt64(),
				Validators: []validator.Int64{int64validator.Between(1, proxmox.MaxVCPUs)}, Description: "Sockets (1-4096). Default: the clone source's, else 1." + disk.RunningNote},
			"cpu_type": schema.StringAttribute{Optional: true, Computed: true, PlanModifiers: keepString(),
				Validators:  []validator.String{stringvalidator.RegexMatches(kit.CPUType, "must be a PVE CPU type such as host, x86-64-v2-AES or custom-<name>")},
				Description: "CPU type, e.g. `x86-64-v2-AES` or `host`; `\"\"` (what a VM without one reads as) is PVE's default." + disk.RunningNote},
			"memory": schema.Int64Attribute{Optional: true, Computed: true, PlanModifiers: keepInt64(),
				Validators: []validator.Int64{kit.MemoryMiB{}}, Description: "Memory in MiB (16 to 4194304, PVE's 4 TiB; under 64 warns, as a value meant in GiB). Default: the clone source's, else 512. Changed on a running VM, it takes effect at the next start (PVE keeps it pending) unless the VM's `hotplug` option includes `memory` and NUMA is on."},
			"balloon": schema.Int64Attribute{Optional: true, Computed: true, PlanModifiers: []planmodifier.Int64{keptEvenNull{}},
				Validators: []validator.Int64{kit.MemoryMiB{Balloon: true}}, Description: "Minimum memory in MiB for ballooning; 0 disables the balloon device. Must not exceed `memory`. Unset, the VM keeps what it has; null (no `balloon` key, PVE's default) is the device on, at the VM's memory."},
			"agent":   schema.BoolAttribute{Optional: true, Computed: true, PlanModifiers: keepBool(), Description: "Enable the QEMU guest agent."},
			"on_boot": schema.BoolAttribute{Optional: true, Computed: true, PlanModifiers: keepBool(), Description: "Start the VM when its node boots."},
			"started": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				Description: "Whether the VM runs. Default true."},
		},
		Blocks: map[string]schema.Block{
			"clone":      cloneBlock(),
			"disk":       disk.Block(),
			"network":    network.Block(),
			"cloud_init": cloudinit.Block(),
			"ha":         haBlock(),
			"timeouts":   timeoutsBlock(ctx),
		},
	}
	maps.Copy(resp.Schema.Attributes, firmware.Attributes())
	maps.Copy(resp.Schema.Blocks, firmware.Blocks())
	maps.Copy(resp.Schema.Attributes, agentAttributes())
	scheduling.ResourceScheduling(&resp.Schema)
	kit.MarkWholeNumbers(resp.Schema.Attributes, resp.Schema.Blocks)
}

// keptEvenNull plans an unset computed attribute of an existing VM (and block) as the prior
// state's value, null included: UseStateForUnknown leaves a null state unknown, which every
// update would then show, and the apply could not keep. The balloon's null is PVE's default
// (no key: the device on, at the VM's memory), which 0 (no device) is not; ha.auto_rebalance's
// is a release without the flag.
type keptEvenNull struct{}

func (keptEvenNull) Description(context.Context) string {
	return "Kept from the prior state once the VM exists, PVE's default (null) included."
}

func (m keptEvenNull) MarkdownDescription(ctx context.Context) string { return m.Description(ctx) }

func (keptEvenNull) PlanModifyInt64(ctx context.Context, req planmodifier.Int64Request, resp *planmodifier.Int64Response) {
	if req.PlanValue.IsUnknown() && req.ConfigValue.IsNull() && priorHolds(ctx, req.State, req.Path) {
		resp.PlanValue = req.StateValue
	}
}

func (keptEvenNull) PlanModifyBool(ctx context.Context, req planmodifier.BoolRequest, resp *planmodifier.BoolResponse) {
	if req.PlanValue.IsUnknown() && req.ConfigValue.IsNull() && priorHolds(ctx, req.State, req.Path) {
		resp.PlanValue = req.StateValue
	}
}

// priorHolds tells whether the prior state has the object that the attribute at p is in: the
// VM exists, and so does the block (a block this plan adds has no value to keep).
func priorHolds(ctx context.Context, state tfsdk.State, p path.Path) bool {
	if state.Raw.IsNull() {
		return false
	}
	parent := p.ParentPath()
	if len(parent.Steps()) == 0 {
		return true
	}
	var obj types.Object
	return !state.GetAttribute(ctx, parent, &obj).HasError() && !obj.IsNull()
}

// timeoutsBlock is the framework's timeouts block with our defaults in its descriptions.
func timeoutsBlock(ctx context.Context) schema.Block {
	const duration = ` A Go duration such as "30s" or "2h45m".`
	b := timeouts.Block(ctx, timeouts.Opts{
		Create: true, Update: true, Delete: true,
		CreateDescription: "How long a create may take, from the placement to the running VM (clone or create, resize, start, guest agent and HA registration included). Default 30m." + duration,
		UpdateDescription: "How long an update may take (configuration, resize, migration, start or stop). Default 30m." + duration,
		DeleteDescription: "How long a destroy may take. A running VM is shut down for at most half of it, then stopped. Default 10m." + duration,
	}).(schema.SingleNestedBlock)
	b.Description = "Time limits of the VM's create, update and destroy."
	return b
}

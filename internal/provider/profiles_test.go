package provider

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/disk"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// ratioYAML and ratioBlock set MemoryOvercommit's ratio in one layer, as YAML or as a block.
func ratioYAML(r string) string {
	return `plugin_config_yaml = "filters: {MemoryOvercommit: {config: {ratio: ` + r + `}}}"`
}

func ratioBlock(r string) string {
	return `plugin_config {
	  filter {
	    name = "MemoryOvercommit"
	    args = { ratio = "` + r + `" }
	  }
	}`
}

// Each layer sets MemoryOvercommit's ratio to its rank; a VM of 7x a node's memory fails
// everywhere, and the error's group phrase names the ratio in force: the latest layer's.
func TestAccProfileLayering(t *testing.T) {
	profile := func(yaml, block bool) string {
		out := "profile {\n  name = \"layers\"\n"
		if yaml {
			out += ratioYAML("3") + "\n"
		}
		if block {
			out += ratioBlock("4") + "\n"
		}
		return out + "}\n"
	}
	provider := ratioYAML("1") + "\n" + ratioBlock("2") + "\n"
	tests := []struct {
		name, provider, body string
		ratio                string
	}{
		{"object blocks win", provider + profile(true, true), `profile = "layers"` + "\n" + ratioYAML("5") + "\n" + ratioBlock("6"), "6"},
		{"object YAML beats the profile", provider + profile(true, true), `profile = "layers"` + "\n" + ratioYAML("5"), "5"},
		{"profile blocks beat profile YAML", provider + profile(true, true), `profile = "layers"`, "4"},
		{"profile YAML beats the provider", provider + profile(true, false), `profile = "layers"`, "3"},
		{"no profile named: provider blocks", provider + profile(true, true), ``, "2"},
		{"profile default: provider blocks", provider + profile(true, true), `profile = "default"`, "2"},
		{"provider YAML alone", ratioYAML("1") + "\n" + profile(false, true), ``, "1"},
	}
	env, _ := simEnv(t, labCluster()) // read-only cases share one cluster
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			placementFails(t, env, tt.provider, "name = \"big\"\nmemory = 114688\n"+tt.body,
				wrapped(`0/4 nodes are available: 3 node\(s\) exceeded memory overcommit ratio `+tt.ratio+`, 1 node\(s\) were offline`))
		})
	}
}

// A CAPPX user's plugin-config.yaml, verbatim, is a whole profile; the summary says which
// profile decided, and objects without a profile keep the provider's behaviour.
func TestAccProfileFromReferenceYAML(t *testing.T) {
	env, _ := simEnv(t, labCluster())
	provider := `profile {
	  name = "cappx"
	  plugin_config_yaml = <<-EOT
	    filters:
	      CPUOvercommit:
	        enable: false
	      MemoryOvercommit:
	        enable: false
	  EOT
	}`
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders,
		Steps: []resource.TestStep{{
			Config: env.providerBlock(provider) + placement(`name = "web"
				memory = 20000
				profile = "cappx"`) + `data "qemuscheduler_placement" "plain" {
				  name = "small"
				}`,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(ds, "node", "pve2"),
				resource.TestCheckResourceAttr(ds, "candidates.0.feasible", "true"),
				// The two data sources of one plan are decided together in name order: "small"
				// first, then "web" beside it (its id and pve2's room taken).
				resource.TestCheckResourceAttr(ds, "summary", "web: pve2 (score 178.75; 3/4 nodes feasible), vmid 102 (next free id), storage ceph, profile cappx"),
				resource.TestCheckResourceAttr("data.qemuscheduler_placement.plain", "summary", "small: pve2 (score 186.56; 3/4 nodes feasible), vmid 101 (next free id), storage ceph"),
			),
		}},
	})
}

func TestAccProfileErrors(t *testing.T) {
	tests := []struct {
		name, provider, body string
		want                 string
	}{
		{"unknown profile, none defined", "", `profile = "packing"`,
			`profile "packing" is not defined in the provider; defined profiles: default.`},
		{"unknown profile lists the defined ones", "profile {\n name = \"spread\"\n}\nprofile {\n name = \"pack\"\n}", `profile = "packing"`,
			`profile "packing" is not defined in the provider; defined profiles: default, pack, spread.`},
		{"default is reserved", "profile {\n name = \"default\"\n}", ``, `"default" is reserved: it means no profile`},
		{"name syntax", "profile {\n name = \"Packing\"\n}", ``, `profile name "Packing" must match [a-z0-9-]+`},
		{"duplicate name", "profile {\n name = \"pack\"\n}\nprofile {\n name = \"pack\"\n}", ``, `profile "pack" is defined twice (profile blocks 0 and 1)`},
		{"profile YAML mistake", "profile {\n name = \"pack\"\n plugin_config_yaml = \"scores: {MostAlocated: {}}\"\n}", ``,
			`unknown score plugin "MostAlocated"`},
		{"no node under a profile says which", "profile {\n name = \"tight\"\n}", "profile = \"tight\"\nmemory = 114688",
			`0/4 nodes are available: 3 node(s) exceeded memory overcommit ratio 1, 1 node(s) were offline (profile tight)`},
		{"profile block mistake", "profile {\n name = \"pack\"\n" + ratioBlock("-1") + "\n}", ``,
			`arg ratio must be a positive number, got "-1"`},
		{"profile default node selector mistake", "profile {\n name = \"pack\"\n node_selector = { \"bad key\" = \"a\" }\n}", ``,
			`key "bad key"`},
		{"profile default annotation typo", "profile {\n name = \"pack\"\n annotations = { \"vmid.qemu-scheduler/rnage\" = \"1-2\" }\n}", ``,
			`unknown annotation "vmid.qemu-scheduler/rnage"`},
		{"profile default VMID range checked on the profile", "profile {\n name = \"tenant\"\n annotations = { \"vmid.qemu-scheduler/range\" = \"1-2\" }\n}", ``,
			`invalid range "1-2": ids must lie within 100-999999999`},
		{"profile default annotation with a trailing space", "profile {\n name = \"tenant\"\n annotations = { \"node.qemu-scheduler/regex\" = \"pve[12] \" }\n}", ``,
			`the value "pve[12] " has a space at an end`},
	}
	env, _ := simEnv(t, labCluster()) // read-only cases share one cluster
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			placementFails(t, env, tt.provider, "name = \"web\"\n"+tt.body, wrapped(regexp.QuoteMeta(tt.want)))
		})
	}
}

// packingAndSpreading are the README's recipes: bin packing given as the reference's YAML,
// spreading as blocks; both switch off NodeResource's live signal.
const packingAndSpreading = `profile {
	  name = "packing"
	  plugin_config_yaml = <<-EOT
	    scores:
	      NodeResource:
	        enable: false
	      MostAllocated: {}
	  EOT
	}
	profile {
	  name = "spreading"
	  plugin_config {
	    score {
	      name   = "NodeResource"
	      enable = false
	    }
	    score { name = "LeastAllocated" }
	  }
	}`

// The same request under two profiles: packing joins the busiest node by configured size
// (pve1 runs db, 4 vCPUs and 4 GiB), spreading takes the emptiest (pve3); each summary says
// which profile decided. Configured figures: pve1 4 vCPUs/4096 MiB, pve2 1/512, pve3 none.
func TestAccProfilesPackVersusSpread(t *testing.T) {
	env, _ := simEnv(t, labCluster())
	const spread = "data.qemuscheduler_placement.spread"
	config := env.providerBlock(packingAndSpreading) + placement(`name = "web"
				profile = "packing"`) + `data "qemuscheduler_placement" "spread" {
				  name    = "web"
				  profile = "spreading"
				}`
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders,
		Steps: []resource.TestStep{{
			Config: config,
			Check: resource.ComposeAggregateTestCheckFunc(
				// MostAllocated on pve1, in integers as kube: cpu (4+1)*100/8 = 62, memory (4096+512)*100/16384 = 28, mean 90/2 = 45
				resource.TestCheckResourceAttr(ds, "node", "pve1"),
				resource.TestCheckResourceAttr(ds, "candidates.0.scores.MostAllocated", "45"),
				resource.TestCheckNoResourceAttr(ds, "candidates.0.scores.NodeResource"),
				resource.TestCheckResourceAttr(ds, "summary", "web: pve1 (score 145; 3/4 nodes feasible), vmid 101 (next free id), storage ceph, profile packing"),
				// LeastAllocated on pve3: cpu (8-1)*100/8 = 87, memory (16384-512)*100/16384 = 96, mean 183/2 = 91
				resource.TestCheckResourceAttr(spread, "node", "pve3"),
				resource.TestCheckResourceAttr(spread, "candidates.2.scores.LeastAllocated", "91"),
				resource.TestCheckResourceAttr(spread, "summary", "web: pve3 (score 191; 3/4 nodes feasible), vmid 101 (next free id), storage ceph, profile spreading"),
			),
		}, {
			Config:   config,
			PlanOnly: true, // the second plan is empty
		}},
	})
}

// storageCluster: pve1 has local-lvm with 12 GiB free, pve2 local-zfs with 400 GiB free, and
// both share nfs with 350 GiB free.
func storageCluster() pvesim.Cluster {
	return pvesim.Cluster{
		Nodes: []pvesim.NodeSpec{{Name: "pve1", CPUs: 8, MemoryGiB: 16}, {Name: "pve2", CPUs: 8, MemoryGiB: 16}},
		Storages: []pvesim.StorageSpec{
			{Name: "local-lvm", Content: []string{"images"}, Nodes: []string{"pve1"}, SizeGiB: 100, UsedGiB: 88},
			{Name: "local-zfs", Content: []string{"images"}, Nodes: []string{"pve2"}, SizeGiB: 500, UsedGiB: 100},
			{Name: "nfs", Content: []string{"images"}, Shared: true, SizeGiB: 1000, UsedGiB: 650},
		},
	}
}

func TestAccStorageCapacityPlacement(t *testing.T) {
	tests := []struct {
		name, body string
		attrs      map[string]string
	}{
		{"a full storage rejects its node", `name = "big"
			disk_gib = 380`, map[string]string{"node": "pve2", "storage": "local-zfs", "candidates.0.reasons.0": "StorageCapacity: nfs has 350 GiB free, needs 380"}},
		{"one decision debits the storage it chose", `names = ["a", "b"]
			node = "pve2"
			disk_gib = 300`, map[string]string{"placements.0.storage": "local-zfs", "placements.1.storage": "nfs"}},
		{"unknown disk size is not checked", `name = "any"
			node = "pve1"`, map[string]string{"storage": "nfs"}},
	}
	env, _ := simEnv(t, storageCluster()) // read-only cases share one cluster
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			placementChecks(t, env, "", tt.body, tt.attrs)
		})
	}
}

func TestAccStorageCapacityErrors(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"the pinned storage is too full", `name = "a"
			storage = "local-lvm"
			disk_gib = 40`, `0/2 nodes are available: 1 node(s) had no usable storage "local-lvm", 1 node(s) had too little free storage for 40 GiB of disks`},
		{"a shared storage is debited once for the cluster", `names = ["a", "b"]
			node = "pve1"
			disk_gib = 200`, `pve1: StorageCapacity: nfs has 150 GiB free, needs 200`},
	}
	env, _ := simEnv(t, storageCluster()) // read-only cases share one cluster
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			placementFails(t, env, "", tt.body, wrapped(regexp.QuoteMeta(tt.want)))
		})
	}
}

// The resource counts its disks: 380 GiB fit only pve2's local-zfs, and the summary names the
// profile; an unknown profile fails the plan.
func TestAccVMStorageCapacityAndProfile(t *testing.T) {
	env := newAccEnv(t, storageCluster())
	sim := env.needsSim(t)
	vm := func(profile string) string {
		return env.providerBlock(packingAndSpreading) + `resource "qemuscheduler_vm" "web" {
  name    = "big"
  profile = "` + profile + `"
  disk {
    slot = "scsi0"
    size = 380
  }
}`
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders,
		Steps: []resource.TestStep{
			{Config: vm("packed"), ExpectError: wrapped(regexp.QuoteMeta(`profile "packed" is not defined in the provider; defined profiles: default, packing, spreading.`))},
			{Config: vm("packing"), Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(vmAddr, "node", "pve2"),
				resource.TestCheckResourceAttr(vmAddr, "disk.0.storage", "local-zfs"),
				resource.TestMatchResourceAttr(vmAddr, "placement_summary", regexp.MustCompile(`storage local-zfs, profile packing$`)),
				guestCheck(sim, expectConfig(map[string]string{"scsi0": "local-zfs:vm-100-disk-0,size=380G"})),
			)},
		},
	})
}

// count = 5 with the packing profile: each create sees the reservations of the others, so
// one node fills up (4 x 16 GiB = its 64 GiB) before the next gets the fifth.
func TestAccVMCountBinPacks(t *testing.T) {
	env := newAccEnv(t, equalCluster())
	sim := env.needsSim(t)
	config := env.providerBlock(packingAndSpreading) + `resource "qemuscheduler_vm" "web" {
  count   = 5
  name    = "web-${count.index}"
  profile = "packing"
  cores   = 4
  memory  = 16384
}`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders,
		Steps: []resource.TestStep{{
			Config: config,
			Check: func(*terraform.State) error {
				perNode := map[string]int{}
				for _, g := range guests(sim) {
					perNode[g.Node]++
				}
				counts := []int{}
				for _, n := range perNode {
					counts = append(counts, n)
				}
				sort.Ints(counts)
				if fmt.Sprint(counts) != "[1 4]" {
					return fmt.Errorf("placements per node %v, want 4 on one node and 1 on another", perNode)
				}
				return nil
			},
		}, {
			Config:   config,
			PlanOnly: true, // the second plan is empty
		}},
	})
}

// What a VM to create puts on the scheduler's storage: disks without their own storage, and a
// full clone's source disks (grown to the planned size).
func TestNewDiskBytes(t *testing.T) {
	diskOf := func(slot string, size int64, storage string) disk.Model {
		d := disk.Model{Slot: types.StringValue(slot), Size: types.Int64Value(size), Storage: types.StringNull()}
		if storage != "" {
			d.Storage = types.StringValue(storage)
		}
		return d
	}
	clone := func(full bool, storage string) *vmresource.CloneModel {
		c := &vmresource.CloneModel{SourceVMID: types.Int64Value(9000), Full: types.BoolValue(full), Storage: types.StringNull()}
		if storage != "" {
			c.Storage = types.StringValue(storage)
		}
		return c
	}
	src := &proxmox.VM{VMID: 9000, Config: map[string]string{
		"scsi0": "ceph:base-9000-disk-0,size=8G", "scsi1": "ceph:base-9000-disk-1,size=512M",
		"ide2": "ceph:vm-9000-cloudinit,media=cdrom", "ide0": "local:iso/x.iso,media=cdrom", "net0": "virtio,bridge=vmbr0",
	}}
	for _, tt := range []struct {
		name string
		m    vmresource.Model
		src  *proxmox.VM
		want int64
	}{
		{"from scratch", vmresource.Model{Disks: []disk.Model{diskOf("scsi0", 10, ""), diskOf("scsi1", 20, ""), diskOf("scsi2", 5, "nfs")}}, nil, 30},
		{"full clone: source disks, the first grown to 32", vmresource.Model{Clone: clone(true, ""), Disks: []disk.Model{diskOf("scsi0", 32, ""), diskOf("scsi2", 4, "")}}, src, 32 + 1 + 4},
		// clone.storage is then the scheduler's storage, where the new disk goes too.
		{"full clone onto clone.storage: the same", vmresource.Model{Clone: clone(true, "nfs"), Disks: []disk.Model{diskOf("scsi0", 32, ""), diskOf("scsi2", 4, "")}}, src, 32 + 1 + 4},
		{"linked clone: only new disks", vmresource.Model{Clone: clone(false, ""), Disks: []disk.Model{diskOf("scsi0", 32, ""), diskOf("scsi2", 4, "")}}, src, 4},
	} {
		if got := vmresource.NewDiskBytes(tt.m.Disks, tt.m.Clone, tt.src); got != uint64(tt.want)*scheduler.GiB {
			t.Errorf("%s: %d GiB, want %d", tt.name, got/scheduler.GiB, tt.want)
		}
	}
}

// A full clone onto another node than its template's goes to a shared storage, even where a
// local one has more room (PVE refuses to clone onto another node's local storage), and
// StorageCapacity counts it there.
func TestAccVMCloneToAnotherNodeUsesSharedStorage(t *testing.T) {
	c := storageCluster()
	c.Guests = []pvesim.GuestSpec{{VMID: 9000, Node: "pve1", Name: "tmpl", Template: true, Cores: 1, MemoryMiB: 512,
		Config: map[string]string{"scsi0": "nfs:base-9000-disk-0,size=8G"}}}
	env, sim := simEnv(t, c)
	vm := func(name, node string, size int) string {
		return fmt.Sprintf(`resource "qemuscheduler_vm" %q {
  name = %q
  node = %q
  clone {
    source_vmid = 9000
  }
  disk {
    slot = "scsi0"
    size = %d
  }
}
`, name, name, node, size)
	}
	runSteps(t,
		resource.TestStep{Config: env.config(vm("away", "pve2", 8)), Check: resource.ComposeTestCheckFunc(
			resource.TestCheckResourceAttr("qemuscheduler_vm.away", "storage", "nfs"),
			guestExists(sim, 100, func(g pvesim.GuestState) error {
				if g.Node != "pve2" || !strings.HasPrefix(g.Config["scsi0"], "nfs:") {
					return fmt.Errorf("clone on %s with scsi0 %q, want nfs on pve2", g.Node, g.Config["scsi0"])
				}
				return nil
			}),
		)},
		// 380 GiB fits pve2's local-zfs (400 free) but not nfs (350 free): from pve1's template
		// pve2 cannot take it, and the plan says why.
		resource.TestStep{Config: env.config(vm("away", "pve2", 8) + vm("big", "pve2", 380)),
			ExpectError: regexp.MustCompile(`StorageCapacity: nfs has 342 GiB free, needs 380`)},
	)
}

// A placement record naming a profile the provider lacks is said of the record (the
// rebalance's warning), not as an error on a profile attribute of the data source.
func TestRecordProfilesUndefined(t *testing.T) {
	p := &config.Data{Profiles: map[string]scheduler.PluginConfig{"web": {}}}
	_, err := p.RecordProfiles()("gone")
	want := "not defined in the provider (defined: default, web); add it to the provider or correct the record"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	if _, err := p.RecordProfiles()("web"); err != nil {
		t.Errorf("a defined profile: %v", err)
	}
}

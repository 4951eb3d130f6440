package plugins

import (
	"errors"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

func TestFilters(t *testing.T) {
	ratio := func(name, r string) scheduler.PluginConfig {
		return scheduler.PluginConfig{Filters: map[string]scheduler.PluginSetting{name: {Args: map[string]string{"ratio": r}}}}
	}
	tests := []struct {
		name    string
		cfg     scheduler.PluginConfig
		nodes   []scheduler.Node
		guests  []scheduler.Guest
		req     func(r *scheduler.Request)
		want    string // chosen node, "" = unschedulable
		reasons []string
	}{
		{
			name:    "pinned node is exact and case-sensitive",
			nodes:   []scheduler.Node{node("pve1", 8, 32), node("pve2", 8, 32)},
			req:     func(r *scheduler.Request) { r.Node = "PVE2" },
			reasons: []string{`NodeName: pinned to "PVE2"`},
		},
		{
			name:  "pinned node wins over a better node",
			nodes: []scheduler.Node{node("pve1", 64, 256), node("pve2", 8, 32)},
			req:   func(r *scheduler.Request) { r.Node = "pve2" },
			want:  "pve2",
		},
		{
			name:  "regex matches the whole name",
			nodes: []scheduler.Node{node("pve1", 8, 32), node("pve10", 64, 256)},
			req:   func(r *scheduler.Request) { r.Annotations[scheduler.AnnotationNodeRegex] = "pve[0-9]" },
			want:  "pve1",
		},
		{
			name:    "regex rejects every node",
			nodes:   []scheduler.Node{node("pve3", 8, 32)},
			req:     func(r *scheduler.Request) { r.Annotations[scheduler.AnnotationNodeRegex] = "^pve[12]$" },
			reasons: []string{`NodeRegex: "pve3" does not match "^pve[12]$"`},
		},
		{
			name:   "cpu exactly at ratio 4 passes",
			nodes:  []scheduler.Node{node("pve1", 8, 64)},
			guests: []scheduler.Guest{running(100, "pve1", 30, 1)},
			req:    func(r *scheduler.Request) { r.Cores = 2 },
			want:   "pve1",
		},
		{
			name:    "cpu above ratio 4 fails with numbers",
			nodes:   []scheduler.Node{node("pve1", 8, 64)},
			guests:  []scheduler.Guest{running(100, "pve1", 30, 1)},
			req:     func(r *scheduler.Request) { r.Cores = 2; r.Sockets = 2 },
			reasons: []string{"CPUOvercommit: (30+4)/8 = 4.25 > 4"},
		},
		{
			name:   "stopped guests and templates do not count",
			nodes:  []scheduler.Node{node("pve1", 8, 8)},
			guests: []scheduler.Guest{{VMID: 100, Node: "pve1", Status: "stopped", CPUs: 64, MaxMem: 64 * gib}, {VMID: 9000, Node: "pve1", Status: "running", Template: true, CPUs: 64, MaxMem: 64 * gib}},
			want:   "pve1",
		},
		{
			name:    "lxc guests count",
			nodes:   []scheduler.Node{node("pve1", 8, 8)},
			guests:  []scheduler.Guest{{VMID: 200, Node: "pve1", Type: scheduler.GuestLXC, Status: "running", CPUs: 0.5, MaxMem: 8 * gib}},
			reasons: []string{"MemoryOvercommit: (8192+512)/8192 MiB = 1.0625 > 1"},
		},
		{
			name:   "memory exactly at ratio 1 passes",
			nodes:  []scheduler.Node{node("pve1", 8, 8)},
			guests: []scheduler.Guest{running(100, "pve1", 1, 4)},
			req:    func(r *scheduler.Request) { r.MemoryMiB = 4096 },
			want:   "pve1",
		},
		{
			name:    "memory above ratio fails",
			nodes:   []scheduler.Node{node("pve1", 8, 8)},
			guests:  []scheduler.Guest{running(100, "pve1", 1, 4)},
			req:     func(r *scheduler.Request) { r.MemoryMiB = 4097 },
			reasons: []string{"MemoryOvercommit: (4096+4097)/8192 MiB = 1.0001 > 1"},
		},
		{
			name:    "a hair above the ratio still shows above it",
			nodes:   []scheduler.Node{node("pve1", 8, 1024)},
			guests:  []scheduler.Guest{running(100, "pve1", 1, 1023)},
			req:     func(r *scheduler.Request) { r.MemoryMiB = 1025 },
			reasons: []string{"MemoryOvercommit: (1047552+1025)/1048576 MiB = 1.00001 > 1"},
		},
		{
			name:   "memory ratio arg",
			cfg:    ratio("MemoryOvercommit", "1.5"),
			nodes:  []scheduler.Node{node("pve1", 8, 8)},
			guests: []scheduler.Guest{running(100, "pve1", 1, 8)},
			req:    func(r *scheduler.Request) { r.MemoryMiB = 4096 },
			want:   "pve1",
		},
		{
			// qemu-server's config_to_command: "MAX 16 vcpus allowed per VM on this node", whatever
			// the overcommit ratio.
			name:    "more vCPUs than the node's CPUs never start there",
			cfg:     ratio("CPUOvercommit", "8"),
			nodes:   []scheduler.Node{node("pve1", 16, 64)},
			req:     func(r *scheduler.Request) { r.Cores = 32; r.Sockets = 2 },
			reasons: []string{"CPUOvercommit: the VM's 64 vCPUs exceed the node's 16 CPUs; PVE does not start a VM with more vCPUs than its node has CPUs"},
		},
		{
			name:    "cpu ratio arg",
			cfg:     ratio("CPUOvercommit", "1"),
			nodes:   []scheduler.Node{node("pve1", 8, 64)},
			guests:  []scheduler.Guest{running(100, "pve1", 8, 1)},
			reasons: []string{"CPUOvercommit: (8+1)/8 = 1.125 > 1"},
		},
		{
			name:    "offline node is rejected",
			nodes:   []scheduler.Node{{Name: "pve1", MaxCPU: 8, MaxMem: 8 * gib}},
			reasons: []string{"NodeOnline: node is offline"},
		},
		{
			name: "disabled filter does not run",
			cfg: scheduler.PluginConfig{Filters: map[string]scheduler.PluginSetting{
				"MemoryOvercommit": {Enable: new(bool)},
			}},
			nodes:  []scheduler.Node{node("pve1", 8, 8)},
			guests: []scheduler.Guest{running(100, "pve1", 1, 8)},
			want:   "pve1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request("web")
			if tt.req != nil {
				tt.req(&req)
			}
			snap := scheduler.Snapshot{Nodes: tt.nodes, Guests: tt.guests}
			d, err := mustProfile(tt.cfg).Schedule(snap, []scheduler.Request{req}, scheduler.Options{})
			if tt.want != "" {
				if err != nil {
					t.Fatalf("Schedule: %v", err)
				}
				if got := d.Placements[0].Node; got != tt.want {
					t.Fatalf("node = %s, want %s", got, tt.want)
				}
				return
			}
			var ue *scheduler.UnschedulableError
			if !errors.As(err, &ue) {
				t.Fatalf("want UnschedulableError, got %v", err)
			}
			got := ue.Candidates[len(ue.Candidates)-1].Reasons
			if strings.Join(got, "|") != strings.Join(tt.reasons, "|") {
				t.Fatalf("reasons = %q, want %q", got, tt.reasons)
			}
		})
	}
}

func TestUnschedulableMessageGroupsReasons(t *testing.T) {
	nodes := []scheduler.Node{node("pve1", 8, 8), node("pve2", 8, 8), node("pve3", 8, 8), node("pve4", 8, 8), node("pve5", 8, 8)}
	nodes[4].Online = false
	guests := []scheduler.Guest{running(100, "pve1", 1, 8), running(101, "pve2", 1, 8)}
	req := request("db")
	req.Annotations[scheduler.AnnotationNodeRegex] = "^pve[12]$"
	_, err := mustProfile(scheduler.PluginConfig{}).Schedule(scheduler.Snapshot{Nodes: nodes, Guests: guests}, []scheduler.Request{req}, scheduler.Options{})
	want := `cannot place "db": 0/5 nodes are available: 2 node(s) didn't match node regex "^pve[12]$", 2 node(s) exceeded memory overcommit ratio 1, 1 node(s) were offline`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v\nwant    %s", err, want)
	}
}

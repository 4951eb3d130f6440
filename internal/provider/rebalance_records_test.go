package provider

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// handRecorded is a running guest with a hand-written placement record and its mark.
func handRecorded(vmid int, node, name, record string, tags ...string) pvesim.GuestSpec {
	g := runningGuest(vmid, node, name, append(tags, "qemuscheduler-record")...)
	g.Config = map[string]string{"description": "Written by hand.\n\nqemu-scheduler/record: v1\n" + record}
	return g
}

// The platform team's case (issue 24): three control-plane VMs created apart by
// qemuscheduler_vm; pve3 gets a taint, so cp-3 violates; a rebalance over the opt-in tag alone,
// with no rule of its own, keeps cp-3 in place with the reason instead of moving it next to
// another control-plane VM, because it reads each VM's own record.
func TestAccRebalanceRecordKeepsControlPlaneInPlace(t *testing.T) {
	env, _ := simEnv(t, rebalanceCluster())
	cps := `
resource "qemuscheduler_vm" "cp" {
  count = 3
  name  = "cp-${count.index + 1}"
  tags  = ["cp", "rebalance"]
  vm_anti_affinity {
    tags = ["cp"]
  }
}
`
	tainted := env.providerBlock(`
node {
  name   = "pve3"
  taints = ["dedicated=storage:NoSchedule"]
}`)
	rebalance := `
data "qemuscheduler_rebalance" "r" {
  tags = ["rebalance"]
}
`
	runSteps(t,
		resource.TestStep{Config: env.config(cps)},
		resource.TestStep{Config: tainted + cps + rebalance, Check: resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttr(rb, "moves.#", "0"),
			resource.TestCheckResourceAttr(rb, "kept.#", "1"),
			resource.TestCheckResourceAttr(rb, "kept.0.node", "pve3"),
			resource.TestMatchResourceAttr(rb, "kept.0.reason", wrapped(`policy violation on pve3: TaintToleration: .*dedicated=storage:NoSchedule.*; `+
				`no node passes: pve1: VMAntiAffinity: pve1 already runs 1 guest tagged \[cp\].*pve2: VMAntiAffinity: pve2 already runs 1 guest tagged \[cp\]`)),
		)},
	)
}

// Hand-written records are honoured like written ones, and the disruption budget holds: two
// control-plane VMs on tainted nodes, one moves per plan unless the budget allows two. A record
// without a profile line is checked under the default profile, with no warning.
func TestAccRebalanceRecordBudget(t *testing.T) {
	c := rebalanceCluster()
	for i := 4; i <= 5; i++ {
		c.Nodes = append(c.Nodes, pvesim.NodeSpec{Name: fmt.Sprintf("pve%d", i), CPUs: 16, MemoryGiB: 64})
	}
	apart := "qemu-scheduler/vm-anti-affinity: tags=cp\n"
	unmarked := runningGuest(104, "pve3", "unmarked", "db")
	unmarked.Config = map[string]string{"description": "qemu-scheduler/record: v1\n" + apart}
	c.Guests = []pvesim.GuestSpec{
		handRecorded(101, "pve1", "cp-1", apart, "cp", "rebal"),
		handRecorded(102, "pve2", "cp-2", apart, "cp", "rebal"),
		handRecorded(103, "pve3", "cp-3", apart, "cp", "rebal"),
		unmarked,
	}
	reads := &configReads{byPath: map[string]int{}}
	env, _ := simEnv(t, c, pvesim.WithRequestHook(reads.log))
	config := func(budget string) string {
		return env.providerBlock(`
node {
  name   = "pve1"
  taints = ["old-hw:NoSchedule"]
}
node {
  name   = "pve2"
  taints = ["old-hw:NoSchedule"]
}`) + fmt.Sprintf(`
data "qemuscheduler_rebalance" "r" {
  tags = ["rebal"]
  %s
}
`, budget)
	}
	// The records name no profile: they are checked under the default one, without a warning.
	log := &warningLog{}
	runLoggingWarnings(t, log,
		resource.TestStep{Config: config(""), Check: resource.ComposeAggregateTestCheckFunc(
			log.lacks("names profile"),
			resource.TestCheckResourceAttr(rb, "moves.#", "1"),
			resource.TestCheckResourceAttr(rb, "moves.0.vmid", "101"),
			resource.TestCheckResourceAttr(rb, "moves.0.to", "pve4"),
			resource.TestCheckResourceAttr(rb, "kept.#", "1"),
			resource.TestCheckResourceAttr(rb, "kept.0.vmid", "102"),
			resource.TestMatchResourceAttr(rb, "kept.0.reason", wrapped(`max_moves_per_group \(1\) reached for the group tagged \[cp\]: this plan already moves 1 of its members`)),
		)},
		resource.TestStep{Config: config("max_moves_per_group = 2"), Check: resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttr(rb, "moves.#", "2"),
			resource.TestCheckResourceAttr(rb, "moves.1.vmid", "102"),
			resource.TestCheckResourceAttr(rb, "moves.1.to", "pve5"),
			reads.check,
		)},
	)
}

// configReads counts the simulator's reads of VM configs and of the cluster view.
type configReads struct {
	mu      sync.Mutex
	byPath  map[string]int
	cluster int
}

func (c *configReads) log(r pvesim.LoggedRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case r.Method == "GET" && r.Path == "/cluster/resources":
		c.cluster++
	case r.Method == "GET" && strings.HasSuffix(r.Path, "/config") && strings.Contains(r.Path, "/qemu/"):
		c.byPath[r.Path]++
	}
}

// check: only the marked guests' configs are read; cp-3, which does not move, at most once
// per provider process (every process reads the cluster view at least once; the guests that
// move also have their disks' storages read).
func (c *configReads) check(*terraform.State) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, n := range c.byPath {
		switch {
		case strings.Contains(p, "/qemu/104/"):
			return fmt.Errorf("the unmarked guest's config was read (%s, %d times)", p, n)
		case strings.Contains(p, "/qemu/103/") && n > c.cluster:
			return fmt.Errorf("%s read %d times in %d cluster reads", p, n, c.cluster)
		}
	}
	if len(c.byPath) != 3 {
		return fmt.Errorf("configs read: %v, want the three marked guests'", c.byPath)
	}
	return nil
}

// HighNodeUtilization empties the least-used node onto the fullest node that takes each guest.
func TestAccRebalanceHighNodeUtilizationEmptiesANode(t *testing.T) {
	c := rebalanceCluster()
	big := func(vmid int, node string, cores int) pvesim.GuestSpec {
		g := runningGuest(vmid, node, fmt.Sprintf("vm-%d", vmid), "rebal")
		g.Cores, g.MemoryMiB = cores, 8192
		return g
	}
	c.Guests = []pvesim.GuestSpec{runningGuest(100, "pve1", "small-1", "rebal"), runningGuest(101, "pve1", "small-2", "rebal"),
		big(200, "pve2", 8), big(300, "pve3", 6)}
	env, _ := simEnv(t, c)
	runSteps(t, resource.TestStep{Config: env.config(`
data "qemuscheduler_rebalance" "r" {
  tags                     = ["rebal"]
  remove_policy_violations = false
  high_node_utilization {
    cpu_threshold    = 20
    memory_threshold = 20
  }
}
`), Check: resource.ComposeAggregateTestCheckFunc(
		resource.TestCheckResourceAttr(rb, "moves.#", "2"),
		resource.TestCheckResourceAttr(rb, "moves.0.vmid", "100"),
		resource.TestCheckResourceAttr(rb, "moves.0.to", "pve2"),
		resource.TestCheckResourceAttr(rb, "moves.1.vmid", "101"),
		resource.TestCheckResourceAttr(rb, "moves.1.to", "pve2"),
		resource.TestCheckResourceAttr(rb, "moves.0.reason", "HighNodeUtilization: pve1 is under the thresholds (cpu 12.5%, memory 1.56%) and is emptied"),
		resource.TestCheckResourceAttr(rb, "nodes_after.0.running_guests", "0"),
		resource.TestCheckResourceAttr(rb, "kept.#", "0"),
	)})
}

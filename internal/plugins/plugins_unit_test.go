package plugins

import (
	"errors"
	"reflect"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Each plugin on its own, as kube-scheduler's plugin tests do: a request, some nodes, the
// verdict per node.

func TestNodeNameFilter(t *testing.T) {
	f := newPlugin[scheduler.FilterPlugin](t, newNodeName, nil)
	nodes := infos([]scheduler.Node{node("pve1", 8, 32), node("pve2", 8, 32)})
	req := request("a")
	got, err := filterVerdicts(f, &req, nodes)
	if err != nil || got["pve1"] != "" || got["pve2"] != "" {
		t.Fatalf("unpinned: %v %v, want every node", got, err)
	}
	req.Node = "pve2"
	got, err = filterVerdicts(f, &req, nodes)
	want := map[string]string{"pve1": `NodeName: pinned to "pve2"`, "pve2": ""}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("pinned: %v %v, want %v", got, err, want)
	}
}

func TestNodeOnlineFilter(t *testing.T) {
	f := newPlugin[scheduler.FilterPlugin](t, newNodeOnline, nil)
	off := node("pve2", 8, 32)
	off.Online = false
	req := request("a")
	got, err := filterVerdicts(f, &req, infos([]scheduler.Node{node("pve1", 8, 32), off}))
	want := map[string]string{"pve1": "", "pve2": "NodeOnline: node is offline"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v %v, want %v", got, err, want)
	}
}

func TestNodeRegexFilter(t *testing.T) {
	f := newPlugin[scheduler.FilterPlugin](t, newNodeRegex, nil)
	nodes := infos([]scheduler.Node{node("pve1", 8, 32), node("pve10", 8, 32)})
	req := request("a")
	req.Annotations[scheduler.AnnotationNodeRegex] = "pve[0-9]"
	got, err := filterVerdicts(f, &req, nodes)
	want := map[string]string{"pve1": "", "pve10": `NodeRegex: "pve10" does not match "pve[0-9]"`}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v %v, want %v", got, err, want)
	}
	req.Annotations[scheduler.AnnotationNodeRegex] = "pve["
	_, err = filterVerdicts(f, &req, nodes)
	var ie *scheduler.InputError
	if !errors.As(err, &ie) || ie.Key != scheduler.AnnotationNodeRegex {
		t.Fatalf("invalid regex: err = %v, want an InputError from PreFilter", err)
	}
}

// The overcommit filters count running and pending guests and earlier placements, never
// stopped guests or templates.
func TestOvercommitFiltersCountWhatTakesCapacity(t *testing.T) {
	cpu := newPlugin[scheduler.FilterPlugin](t, newCPUOvercommit, nil)
	mem := newPlugin[scheduler.FilterPlugin](t, newMemoryOvercommit, nil)
	stopped := running(101, "pve1", 30, 30)
	stopped.Status = "stopped"
	pending := running(102, "pve1", 30, 0)
	pending.Status, pending.Pending = "stopped", true
	template := running(103, "pve1", 30, 30)
	template.Template = true
	req := request("a")
	req.Cores = 4

	got, err := filterVerdicts(cpu, &req, infos([]scheduler.Node{node("pve1", 8, 32)}, stopped, template))
	if err != nil || got["pve1"] != "" {
		t.Fatalf("stopped guest and template: %v %v, want passing", got, err)
	}
	got, err = filterVerdicts(cpu, &req, infos([]scheduler.Node{node("pve1", 8, 32)}, pending))
	if want := "CPUOvercommit: (30+4)/8 = 4.25 > 4"; err != nil || got["pve1"] != want {
		t.Fatalf("pending guest: %v %v, want %q", got, err, want)
	}
	req.MemoryMiB = 3 * 1024
	got, err = filterVerdicts(mem, &req, infos([]scheduler.Node{node("pve1", 8, 32)}, running(104, "pve1", 1, 30)))
	if want := "MemoryOvercommit: (30720+3072)/32768 MiB = 1.0313 > 1"; err != nil || got["pve1"] != want {
		t.Fatalf("memory: %v %v, want %q", got, err, want)
	}
}

func TestNodeResourceScore(t *testing.T) {
	s := newPlugin[scheduler.ScorePlugin](t, newNodeResource, nil)
	idle, busy := node("idle", 8, 32), node("busy", 8, 32)
	busy.CPU, busy.Mem = 0.5, 16*gib
	req := request("a")
	got := scoreNodes(s, &req, infos([]scheduler.Node{idle, busy}))
	if want := map[string]float64{"idle": 100, "busy": 50}; !reflect.DeepEqual(got, want) {
		t.Fatalf("scores %v, want %v", got, want)
	}
}

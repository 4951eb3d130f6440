package kit

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/plugins"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Where several new VMs report a set's refusal (at apply, each create refused fails on its
// own), the first is reported in full, the others point at it, so a count far past what fits
// does not repeat 40 lines per VM.
func TestChangeSetRefusalReportedOnce(t *testing.T) {
	snap := scheduler.Snapshot{Nodes: []scheduler.Node{{Name: "n1", Online: true, MaxCPU: 16, MaxMem: 8 << 30,
		Storages: []scheduler.Storage{{Name: "local-lvm", Content: []string{"images"}, Active: true, Total: 100 << 30}}}}}
	profile, err := scheduler.NewProfile(plugins.Registry, scheduler.PluginConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c := changeset.New(nil, nil)
	c.QuietFor = time.Millisecond
	err = nil
	for _, n := range []string{"a", "b", "c"} {
		if e := c.Plan(context.Background(), snap, changeset.Member{Profile: profile, Req: scheduler.Request{Name: n, Cores: 1, Sockets: 1, MemoryMiB: 4096}}); e != nil {
			err = e
		}
	}
	if err == nil {
		t.Fatal("three 4 GiB VMs on one 8 GiB node were not refused")
	}
	var full, short diag.Diagnostics
	AddSetError(&full, c, err, "b", changeset.ReduceNewVMs)
	AddSetError(&short, c, err, "c", changeset.ReduceNewVMs)
	if len(full) != 1 || !strings.Contains(full[0].Detail(), "Per node:") || !strings.Contains(full[0].Detail(), changeset.DestroyAnyway) {
		t.Fatalf("the first refusal: %v, want the full explanation", full)
	}
	// Each header names the VM of its own address.
	if full[0].Summary() != `No placement for "b"` || len(short) != 1 || short[0].Summary() != `No placement for "c"` || strings.Contains(short[0].Detail(), "Per node:") ||
		!strings.Contains(short[0].Detail(), `"c" is placed together with the plan's other new VMs`) || !strings.Contains(short[0].Detail(), "another error of this plan") {
		t.Errorf("the same refusal again: %v, want a short error on c pointing at the first", short)
	}
}

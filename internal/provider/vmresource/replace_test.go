package vmresource

import (
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Every hint that tells how to destroy anyway names the command of both CLIs: the provider
// cannot tell whether Terraform or OpenTofu runs it, and tofu users were told
// "terraform destroy -refresh=false" alone.
func TestDestroyHintsNameBothCLIs(t *testing.T) {
	refused := &scheduler.UnschedulableError{Request: "web", Message: "0/1 nodes are available"}
	snap := scheduler.Snapshot{Guests: []scheduler.Guest{{VMID: 100, Node: "pve1", Name: "web", Type: scheduler.GuestQEMU}}}
	namesake := WithNamesake(refused, snap, scheduler.Request{Name: "web", VMID: 0}, 0)
	hints := map[string]string{
		"destroyHint":   changeset.DestroyHint(changeset.ReduceNewVMs),
		"aloneHint":     changeset.AloneHint,
		"applyHint":     changeset.ApplyHint(changeset.ReduceNewVMs),
		"noPlanHint":    changeset.NoPlanHint(changeset.ReduceNewVMs),
		"destroyAnyway": changeset.DestroyAnyway,
		"withNamesake":  namesake.Error(),
	}
	for name, hint := range hints {
		for _, cmd := range []string{"terraform destroy -refresh=false", "tofu destroy -refresh=false"} {
			if !strings.Contains(hint, cmd) {
				t.Errorf("%s does not name %q: %s", name, cmd, hint)
			}
		}
	}
}

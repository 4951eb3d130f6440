package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// cliDir is a working directory of the CLI of TF_ACC_TERRAFORM_PATH (Terraform or OpenTofu)
// with this provider in-process, for what terraform-plugin-testing cannot run: a destroy with
// its options (-refresh=false).
type cliDir struct {
	t          *testing.T
	bin, dir   string
	providerID string // the provider's address under the CLI's registry host
	required   string // required_providers entries besides this provider's
}

// newCLIDir writes config, with required_providers naming this provider, into a fresh
// directory and runs init there.
func newCLIDir(t *testing.T, config string) *cliDir {
	t.Helper()
	return newCLIDirRequiring(t, "", config)
}

// newCLIDirRequiring is newCLIDir with more required_providers entries (lines of HCL), for
// configurations that use other providers too: a module has one required_providers block.
func newCLIDirRequiring(t *testing.T, required, config string) *cliDir {
	t.Helper()
	bin := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("terraform"); err != nil {
			t.Skip("needs the CLI: TF_ACC_TERRAFORM_PATH, or terraform in PATH")
		}
	}
	host := os.Getenv(resource.EnvTfAccProviderHost)
	if host == "" {
		host = "registry.terraform.io"
	}
	c := &cliDir{t: t, bin: bin, dir: t.TempDir(), providerID: host + "/qemuscheduler/qemuscheduler", required: required}
	c.write(config)
	c.mustRun("init", "-input=false")
	return c
}

// write replaces the directory's configuration.
func (c *cliDir) write(config string) {
	c.t.Helper()
	hcl := "terraform {\n  required_providers {\n    qemuscheduler = { source = \"qemuscheduler/qemuscheduler\" }\n" + c.required + "\n  }\n}\n" + config
	if err := os.WriteFile(filepath.Join(c.dir, "main.tf"), []byte(hcl), 0o600); err != nil {
		c.t.Fatal(err)
	}
}

// run runs the CLI with args against a provider served for this command alone, as Terraform
// starts one per command: nothing the provider keeps in memory outlives the command.
func (c *cliDir) run(args ...string) (string, error) {
	c.t.Helper()
	reattach, stop := c.serve()
	defer stop()
	cmd := exec.Command(c.bin, append(args, "-no-color")...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "TF_REATTACH_PROVIDERS="+reattach, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (c *cliDir) mustRun(args ...string) string {
	c.t.Helper()
	out, err := c.run(args...)
	if err != nil {
		c.t.Fatalf("%s %s: %v\n%s", filepath.Base(c.bin), strings.Join(args, " "), err, out)
	}
	return out
}

// serve serves a new instance of the provider in debug mode and returns its reattach
// configuration (TF_REATTACH_PROVIDERS) and the function that stops it.
func (c *cliDir) serve() (string, func()) {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	config, closed := make(chan *plugin.ReattachConfig, 1), make(chan struct{})
	served := make(chan error, 1)
	factory := providerserver.NewProtocol6(New("test")())
	go func() {
		served <- tf6server.Serve(c.providerID, factory, tf6server.WithDebug(ctx, config, closed),
			tf6server.WithGoPluginLogger(hclog.NewNullLogger()), tf6server.WithLoggingSink(c.t), tf6server.WithoutLogStderrOverride())
	}()
	var rc *plugin.ReattachConfig
	select {
	case rc = <-config:
	case err := <-served:
		cancel()
		c.t.Fatalf("serving the provider: %v", err)
	}
	type addr struct{ Network, String string }
	raw, err := json.Marshal(map[string]any{c.providerID: map[string]any{
		"Protocol": rc.Protocol, "ProtocolVersion": rc.ProtocolVersion, "Pid": rc.Pid, "Test": rc.Test,
		"Addr": addr{rc.Addr.Network(), rc.Addr.String()},
	}})
	if err != nil {
		cancel()
		c.t.Fatal(err)
	}
	return string(raw), func() {
		cancel()
		<-closed
	}
}

// The "destroy never needs a placement", through the real CLI: once the set no longer
// fits (count raised past what required anti-affinity allows), the configuration's plan is
// refused with the destroy hint, so is terraform destroy (it plans the configuration first),
// and terraform destroy -refresh=false removes every VM of the state.
func TestAccDestroyAfterRefusedPlan(t *testing.T) {
	env, sim := simEnv(t, bigNodeCluster(3))
	t.Parallel()
	cli := newCLIDir(t, env.providerBlock("")+webVMs("web", 3, webAntiAffinity))
	cli.mustRun("apply", "-auto-approve", "-input=false")
	if got, ids := guestsPerNode(sim, "web-"); len(ids) != 3 || len(got) != 3 {
		t.Fatalf("after the apply of count = 3: web VMs per node %v (%v), want one on each of 3 nodes", got, ids)
	}
	// One more than the required anti-affinity allows on 3 nodes.
	cli.write(env.providerBlock("") + webVMs("web", 4, webAntiAffinity))
	cli.refused(sim, 3, "apply", "-auto-approve", "-input=false")
	cli.destroyWithoutPlacement(sim, 3)
}

// The half-failed apply, through the real CLI: a plan of count = 3 passes, a node
// fails before its apply, which creates the 2 VMs that still fit; terraform destroy, planning
// the missing third, is refused with the destroy hint, and terraform destroy -refresh=false
// removes the 2 VMs of the state.
func TestAccDestroyAfterHalfFailedApply(t *testing.T) {
	env, sim := simEnv(t, bigNodeCluster(3))
	t.Parallel()
	cli := newCLIDir(t, env.providerBlock("")+webVMs("web", 3, webAntiAffinity))
	cli.mustRun("plan", "-input=false", "-out=tfplan")
	must(t, sim.SetNodeOnline("pve3", false))
	out, err := cli.run("apply", "-input=false", "tfplan")
	if err == nil || !strings.Contains(out, "No placement for") {
		t.Fatalf("apply of the plan after pve3 failed: error %v, want a VM refused; output:\n%s", err, out)
	}
	// The refusal comes from the plan Terraform makes of the create just before it, while the
	// creates of the VMs that still fit go on (or are done): it must say what holds at apply,
	// never that nothing is created.
	flat := strings.Join(strings.Fields(out), " ")
	if strings.Contains(flat, "before anything is created") || !strings.Contains(flat, changeset.Replanned) && !strings.Contains(flat, changeset.ApplyHint(changeset.ReduceNewVMs)) {
		t.Errorf("the apply's refusal, beside 2 VMs created, says nothing is created or not what holds at apply; output:\n%s", out)
	}
	if got, ids := guestsPerNode(sim, "web-"); len(ids) != 2 || got["pve3"] != 0 {
		t.Fatalf("after the half-failed apply: web VMs per node %v (%v), want 2, none on the failed pve3", got, ids)
	}
	cli.destroyWithoutPlacement(sim, 2)
}

// destroyHintRE is a placement refusal at plan ending with how to destroy anyway, in the CLI's
// output with its line wrapping undone.
var destroyHintRE = regexp.MustCompile(`No placement for "web-\d".*VMAntiAffinity.*` + regexp.QuoteMeta(changeset.DestroyAnyway))

// refused runs the CLI with args and fails the test unless the plan is refused with the destroy
// hint and the cluster still holds the vms web VMs it held.
func (c *cliDir) refused(sim *pvesim.Server, vms int, args ...string) {
	c.t.Helper()
	out, err := c.run(args...)
	if err == nil || !destroyHintRE.MatchString(strings.Join(strings.Fields(out), " ")) {
		c.t.Fatalf("%s: error %v, want the refusal with the destroy hint (%s); output:\n%s", strings.Join(args, " "), err, destroyHintRE, out)
	}
	if _, ids := guestsPerNode(sim, "web-"); len(ids) != vms {
		c.t.Fatalf("after the refused %s: web VMs %v, want the %d of the state", strings.Join(args, " "), ids, vms)
	}
}

// destroyWithoutPlacement checks that terraform destroy, whose first step plans the
// configuration, is refused with the hint, and that the hint's terraform destroy
// -refresh=false removes the state's vms VMs: no guest left (no orphan), an empty state.
func (c *cliDir) destroyWithoutPlacement(sim *pvesim.Server, vms int) {
	c.t.Helper()
	c.refused(sim, vms, "destroy", "-auto-approve", "-input=false")
	c.mustRun("destroy", "-auto-approve", "-input=false", "-refresh=false")
	if ids := sim.Guests(); len(ids) != 0 {
		c.t.Errorf("after terraform destroy -refresh=false the cluster holds guests %v, want none", ids)
	}
	if state := strings.TrimSpace(c.mustRun("state", "list")); state != "" {
		c.t.Errorf("after terraform destroy -refresh=false the state lists:\n%s", state)
	}
}

// A create refused at its decision, after its plan passed (the only node fails as the create
// reaches it, and the retry finds none), says what holds at apply, as a refusal of the create's
// plan does; the VM is not created, and terraform destroy -refresh=false leaves nothing behind.
func TestAccDestroyAfterCreateRefusedAtDecision(t *testing.T) {
	env, sim := interceptedEnv(t, sizedCluster(1, 4, 16), onFirst(isCreate, func(sim *pvesim.Server, _ http.ResponseWriter, _ *http.Request) bool {
		if err := sim.SetNodeOnline("pve1", false); err != nil {
			t.Error(err)
		}
		return false
	}))
	t.Parallel()
	cli := newCLIDir(t, env.providerBlock("")+`resource "qemuscheduler_vm" "web" { name = "web-1" }`)
	out, err := cli.run("apply", "-auto-approve", "-input=false")
	flat := strings.Join(strings.Fields(out), " ")
	if err == nil || !strings.Contains(flat, `No placement for "web-1"`) || !strings.Contains(flat, changeset.ApplyHint(changeset.ReduceNewVMs)) {
		t.Fatalf("apply with the only node failing at the create: error %v, want the refusal with what holds at apply (%q); output:\n%s", err, changeset.ApplyHint(changeset.ReduceNewVMs), out)
	}
	cli.mustRun("destroy", "-auto-approve", "-input=false", "-refresh=false")
	if ids := sim.Guests(); len(ids) != 0 {
		t.Errorf("after terraform destroy -refresh=false the cluster holds guests %v, want none", ids)
	}
}

package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-testing/config"
	tfresource "github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/scheduling"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// examplesDir holds the examples the docs render (tfplugindocs layout).
var examplesDir = filepath.Join("..", "..", "examples")

// TestAccExamples applies every example of examples/data-sources/*/ and examples/resources/*/
// as the docs show it, on the lab cluster of `make demo`, with the provider block of
// examples/provider/ pointed at the simulator: an example that does not work is a failing test.
// Each resource's import.sh lines are run against what the example created. Examples of
// data sources and resources added later are picked up without touching this test.
func TestAccExamples(t *testing.T) {
	cluster, err := pvesim.LoadCluster(filepath.Join(examplesDir, "lab", "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	types := registeredTypes(t)
	for _, kind := range []string{"data-sources", "resources"} {
		dirs, err := os.ReadDir(filepath.Join(examplesDir, kind))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, d := range dirs {
			if d.IsDir() {
				names = append(names, d.Name())
			}
		}
		if !slices.Equal(names, types[kind]) {
			t.Errorf("examples/%s has %v, the provider registers %v: every one needs an example directory named after it", kind, names, types[kind])
		}
		for _, name := range names {
			t.Run(kind+"/"+name, func(t *testing.T) {
				env := newAccEnv(t, cluster)
				sim := env.needsSim(t)
				dir := filepath.Join(examplesDir, kind, name)
				var state *terraform.State
				// Providers go in the steps (terraform-plugin-testing refuses them on the test
				// case when the configuration is a directory), and so every step names the
				// configuration, which the post-test destroy uses.
				cfg := config.StaticDirectory(exampleConfig(t, env, dir, true))
				steps := []tfresource.TestStep{{
					ProtoV6ProviderFactories: testProviders,
					ConfigDirectory:          cfg,
					Check: func(s *terraform.State) error {
						state = s
						return nil
					},
				}}
				if kind == "resources" {
					imports := importExamples(t, dir, importable(t, name))
					// An import starts from an empty state, where outputs of attributes
					// only an apply sets are null, which the test harness cannot read.
					importCfg := config.StaticDirectory(exampleConfig(t, env, dir, false))
					for _, imp := range imports {
						steps = append(steps, tfresource.TestStep{
							ProtoV6ProviderFactories: testProviders,
							ConfigDirectory:          importCfg,
							ResourceName:             imp.address,
							ImportState:              true,
							ImportStateId:            imp.id,
							ImportStateCheck:         func(is []*terraform.InstanceState) error { return sameAsApplied(state, name, imp, is) },
						})
					}
				}
				tfresource.Test(t, tfresource.TestCase{
					Steps: steps,
					CheckDestroy: func(*terraform.State) error {
						// Destroying the example leaves the cluster as it was: no orphaned VMs.
						if got, want := sim.Guests(), guestIDs(cluster); !slices.Equal(got, want) {
							return fmt.Errorf("guests after destroy: %v, want %v", got, want)
						}
						return nil
					},
				})
			})
		}
	}
}

// registeredTypes lists the provider's data source and resource type names, sorted, keyed
// like the examples directories.
func registeredTypes(t *testing.T) map[string][]string {
	t.Helper()
	ctx := context.Background()
	p := New("test")().(*qemuProvider)
	types := map[string][]string{}
	for _, f := range p.DataSources(ctx) {
		var resp datasource.MetadataResponse
		f().Metadata(ctx, datasource.MetadataRequest{ProviderTypeName: "qemuscheduler"}, &resp)
		types["data-sources"] = append(types["data-sources"], resp.TypeName)
	}
	for _, f := range p.Resources(ctx) {
		var resp resource.MetadataResponse
		f().Metadata(ctx, resource.MetadataRequest{ProviderTypeName: "qemuscheduler"}, &resp)
		types["resources"] = append(types["resources"], resp.TypeName)
	}
	for _, names := range types {
		sort.Strings(names)
	}
	return types
}

// importable reports whether the resource type supports terraform import.
func importable(t *testing.T, typeName string) bool {
	t.Helper()
	ctx := context.Background()
	for _, f := range New("test")().Resources(ctx) {
		r := f()
		var resp resource.MetadataResponse
		r.Metadata(ctx, resource.MetadataRequest{ProviderTypeName: "qemuscheduler"}, &resp)
		if resp.TypeName == typeName {
			_, ok := r.(resource.ResourceWithImportState)
			return ok
		}
	}
	t.Fatalf("resource %s is not registered", typeName)
	return false
}

// exampleConfig writes a runnable copy of an example directory and returns its path. The
// example's own provider block, or else examples/provider/'s, gets the simulator's endpoint
// and credentials in place of the documented ones; everything else in it (plugin config,
// profiles) is kept. terraform blocks go, because the test harness names the provider itself,
// outputs go unless asked for, and so do variables nothing uses any more.
func exampleConfig(t *testing.T, env *accEnv, dir string, outputs bool) string {
	t.Helper()
	out := t.TempDir()
	files := readExampleFiles(t, dir)
	if !hasProviderBlock(t, files) {
		for name, src := range readExampleFiles(t, filepath.Join(examplesDir, "provider")) {
			if strings.HasSuffix(name, ".tf") {
				name = "provider-" + name
			}
			files[name] = src
		}
	}
	rewritten := map[string]*hclwrite.File{}
	for name, src := range files {
		if !strings.HasSuffix(name, ".tf") {
			continue
		}
		f := parseHCL(t, name, src)
		for _, b := range f.Body().Blocks() {
			switch {
			case b.Type() == "terraform", b.Type() == "output" && !outputs:
				f.Body().RemoveBlock(b)
			case b.Type() == "provider" && slices.Equal(b.Labels(), []string{"qemuscheduler"}):
				for _, attr := range []string{"endpoint", "api_token", "username", "password", "insecure", "ca_cert"} {
					b.Body().RemoveAttribute(attr)
				}
				sim := parseHCL(t, name, []byte(env.providerBlock(string(b.Body().BuildTokens(nil).Bytes()))))
				f.Body().RemoveBlock(b)
				f.Body().AppendBlock(sim.Body().Blocks()[0])
			}
		}
		rewritten[name] = f
	}
	var all strings.Builder
	for _, f := range rewritten {
		all.Write(f.Bytes())
	}
	for name, f := range rewritten {
		for _, b := range f.Body().Blocks() {
			if b.Type() == "variable" && !regexp.MustCompile(`\bvar\.`+regexp.QuoteMeta(b.Labels()[0])+`\b`).MatchString(all.String()) {
				f.Body().RemoveBlock(b)
			}
		}
		files[name] = f.Bytes()
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(out, name), src, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// readExampleFiles reads the regular files of an example directory by name.
func readExampleFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if e.Type().IsRegular() {
			src, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			files[e.Name()] = src
		}
	}
	return files
}

func hasProviderBlock(t *testing.T, files map[string][]byte) bool {
	t.Helper()
	for name, src := range files {
		if strings.HasSuffix(name, ".tf") {
			for _, b := range parseHCL(t, name, src).Body().Blocks() {
				if b.Type() == "provider" {
					return true
				}
			}
		}
	}
	return false
}

func parseHCL(t *testing.T, name string, src []byte) *hclwrite.File {
	t.Helper()
	f, diags := hclwrite.ParseConfig(src, name, hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("%s: %s", name, diags.Error())
	}
	return f
}

// importExample is one `terraform import ADDRESS ID` line of an import.sh.
type importExample struct{ address, id string }

var importLine = regexp.MustCompile(`^terraform import '?([^' ]+)'? '?([^' ]+)'?$`)

// importExamples reads import.sh; a resource that supports import must document it there.
func importExamples(t *testing.T, dir string, required bool) []importExample {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(dir, "import.sh"))
	if os.IsNotExist(err) && !required {
		return nil
	}
	if err != nil {
		t.Fatalf("the resource supports import, so it needs an import example: %v", err)
	}
	var imports []importExample
	for i, line := range strings.Split(string(src), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := importLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("%s/import.sh line %d: want `terraform import ADDRESS ID`, got %q", dir, i+1, line)
		}
		imports = append(imports, importExample{address: m[1], id: m[2]})
	}
	if len(imports) == 0 {
		t.Fatalf("%s/import.sh has no `terraform import` line", dir)
	}
	return imports
}

// sameAsApplied checks that an import found the object the example created with that ID (the
// import ID's last path segment, "pve2/123" naming 123) and read back what it has in state.
// Attributes the import leaves unset are only in the configuration (a clone source,
// annotations, timeouts); placement_summary explains a decision the import did not make.
func sameAsApplied(state *terraform.State, typeName string, imp importExample, imported []*terraform.InstanceState) error {
	if len(imported) != 1 {
		return fmt.Errorf("import %s: %d objects, want 1", imp.id, len(imported))
	}
	got := imported[0]
	id := imp.id[strings.LastIndex(imp.id, "/")+1:]
	var applied *terraform.InstanceState
	for _, rs := range state.RootModule().Resources {
		if rs.Type == typeName && rs.Primary != nil && rs.Primary.ID == id {
			applied = rs.Primary
		}
	}
	if applied == nil {
		return fmt.Errorf("import %s: the example created no %s with id %s", imp.id, typeName, id)
	}
	if got.ID != applied.ID {
		return fmt.Errorf("import %s: imported id %s, want %s", imp.id, got.ID, applied.ID)
	}
	var diffs []string
	for k, want := range applied.Attributes {
		if v, ok := got.Attributes[k]; ok && v != want && !schedulingOnly(k) {
			diffs = append(diffs, fmt.Sprintf("%s = %q, the example applied %q", k, v, want))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		return fmt.Errorf("import %s:\n%s", imp.id, strings.Join(diffs, "\n"))
	}
	return nil
}

// schedulingOnly reports whether a state attribute is scheduling configuration, which lives
// in the configuration alone (PVE does not store it, so an import cannot read it back), or
// the placement's explanation.
func schedulingOnly(key string) bool {
	s := rschema.Schema{Attributes: map[string]rschema.Attribute{}}
	scheduling.ResourceScheduling(&s)
	root, _, _ := strings.Cut(key, ".")
	_, attr := s.Attributes[root]
	_, block := s.Blocks[root]
	return attr || block || root == "placement_summary"
}

// guestIDs lists a cluster file's guest VMIDs, sorted.
func guestIDs(c pvesim.Cluster) []int {
	ids := make([]int, 0, len(c.Guests))
	for _, g := range c.Guests {
		ids = append(ids, g.VMID)
	}
	sort.Ints(ids)
	return ids
}

package provider

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	tfresource "github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/scheduling"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// readmeSnippet is one fenced code block of README.md.
type readmeSnippet struct {
	line int // of the opening fence, for the subtest's name
	lang string
	src  string
}

var fence = regexp.MustCompile("^( *)```(\\w*)$")

// readmeSnippets reads README.md's fenced code blocks, indented ones (in a list) dedented.
func readmeSnippets(t *testing.T) []readmeSnippet {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var snippets []readmeSnippet
	var cur *readmeSnippet
	indent := ""
	for i, line := range strings.Split(string(src), "\n") {
		m := fence.FindStringSubmatch(line)
		switch {
		case cur == nil && m != nil:
			cur, indent = &readmeSnippet{line: i + 1, lang: m[2]}, m[1]
		case cur != nil && m != nil && m[1] == indent && m[2] == "":
			snippets = append(snippets, *cur)
			cur = nil
		case cur != nil:
			cur.src += strings.TrimPrefix(line, indent) + "\n"
		}
	}
	if cur != nil {
		t.Fatalf("README.md line %d: a code block is never closed", cur.line)
	}
	return snippets
}

// claim is a result the README states in a comment under a snippet, e.g.
// `# data.qemuscheduler_placement.web.summary = "web-1: pve3 (...) ..."`: the value is an HCL
// expression; a string ending in " ..." claims only its beginning.
var claim = regexp.MustCompile(`(?m)^# (data\.qemuscheduler_\w+\.\w+\.[\w.\[\]]+?)\s*= (.+)$`)

// TestAccReadmeSnippets runs every ```hcl snippet of README.md on the lab cluster of `make demo`,
// as a new user pastes it: the data sources are read and the claimed results compared, the
// resources planned. What a snippet leaves out is filled in as the reader would: a snippet
// without a provider block gets examples/provider's, a bare plugin_config or profile block goes
// into the provider block, plugin-config.yaml is the README's YAML, a resource a snippet refers
// to comes from the earlier snippet that declares it, and the blocks of other providers (bpg's,
// applied by TestAccBpgProviderFedByPlacement) are left out. A ```terraform snippet is shown,
// not run: resources of a bpg newer than the module proxy serves (TestReadmeHARulesRecipe).
func TestAccReadmeSnippets(t *testing.T) {
	cluster, err := pvesim.LoadCluster(filepath.Join(examplesDir, "lab", "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	snippets := readmeSnippets(t)
	var yaml []byte
	for _, s := range snippets {
		if s.lang == "yaml" && yaml == nil {
			yaml = []byte(s.src)
		}
	}
	// The complete example reads an SSH key from the home directory.
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	key := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl admin@example.com\n"
	if err := os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519.pub"), []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	ran := 0
	for i, s := range snippets {
		if s.lang != "hcl" {
			continue
		}
		ran++
		t.Run(fmt.Sprintf("line_%d", s.line), func(t *testing.T) {
			checkVariablesDeclared(t, s.src)
			env := newAccEnv(t, cluster)
			env.needsSim(t)
			dir := t.TempDir()
			src, claims := runnableSnippet(t, s, snippets[:i])
			files := map[string][]byte{"main.tf": []byte(src), "plugin-config.yaml": yaml}
			for name, b := range files {
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			step := tfresource.TestStep{
				ProtoV6ProviderFactories: testProviders,
				ConfigDirectory:          config.StaticDirectory(exampleConfig(t, env, dir, true)),
			}
			if strings.Contains(src, `resource "qemuscheduler_vm"`) {
				// Planned, not applied: creating the VMs is what the examples' test does.
				step.PlanOnly, step.ExpectNonEmptyPlan = true, true
			} else {
				step.Check = func(st *terraform.State) error { return checkClaims(st, claims) }
			}
			tfresource.Test(t, tfresource.TestCase{Steps: []tfresource.TestStep{step}})
		})
	}
	if ran == 0 {
		t.Fatal("README.md has no hcl snippet")
	}
}

// checkVariablesDeclared fails a snippet that uses a variable it does not declare: Terraform
// refuses it ("Reference to undeclared input variable").
func checkVariablesDeclared(t *testing.T, src string) {
	t.Helper()
	for _, m := range regexp.MustCompile(`\bvar\.(\w+)`).FindAllStringSubmatch(src, -1) {
		if !strings.Contains(src, fmt.Sprintf("variable %q", m[1])) {
			t.Errorf("the snippet uses var.%s without a variable %q block", m[1], m[1])
		}
	}
}

// snippetClaim is one claimed result: output "claim_N" holds jsonencode of the actual value,
// output "want_N" jsonencode of the claimed one.
type snippetClaim struct {
	expr, text string
	prefix     bool
}

// runnableSnippet completes a snippet into a configuration (see TestAccReadmeSnippets) with an
// output pair per claimed result.
func runnableSnippet(t *testing.T, s readmeSnippet, earlier []readmeSnippet) (string, []snippetClaim) {
	t.Helper()
	f := parseHCL(t, "snippet", []byte(s.src))
	body := f.Body()
	var provider, fragments []string
	for _, b := range body.Blocks() {
		text := string(b.BuildTokens(nil).Bytes())
		switch {
		case b.Type() == "provider" && b.Labels()[0] == "qemuscheduler":
			provider = append(provider, text)
			body.RemoveBlock(b)
		case slices.Contains([]string{"plugin_config", "profile", "node"}, b.Type()):
			fragments = append(fragments, text)
			body.RemoveBlock(b)
		case (b.Type() == "resource" || b.Type() == "data" || b.Type() == "provider") && !strings.HasPrefix(b.Labels()[0], "qemuscheduler"):
			body.RemoveBlock(b)
		}
	}
	out := string(f.Bytes())
	if len(provider) > 1 {
		t.Fatalf("README.md line %d: %d qemuscheduler provider blocks", s.line, len(provider))
	}
	if len(provider) == 1 || len(fragments) > 0 {
		p := `provider "qemuscheduler" {` + "\n}\n"
		if len(provider) == 1 {
			p = provider[0]
		}
		i := strings.LastIndex(p, "}")
		out = p[:i] + strings.Join(fragments, "\n") + p[i:] + "\n" + out
	}
	for _, m := range regexp.MustCompile(`\bqemuscheduler_vm\.(\w+)`).FindAllStringSubmatch(out, -1) {
		decl := fmt.Sprintf("resource %q %q", "qemuscheduler_vm", m[1])
		if strings.Contains(out, decl) {
			continue
		}
		found := false
		for _, e := range slices.Backward(earlier) {
			if e.lang != "hcl" || !strings.Contains(e.src, decl) {
				continue
			}
			for _, b := range parseHCL(t, "snippet", []byte(e.src)).Body().Blocks() {
				if b.Type() == "resource" && slices.Equal(b.Labels(), []string{"qemuscheduler_vm", m[1]}) {
					out += "\n" + string(b.BuildTokens(nil).Bytes())
					found = true
				}
			}
			break
		}
		if !found {
			t.Fatalf("README.md line %d refers to qemuscheduler_vm.%s, which no snippet before it declares", s.line, m[1])
		}
	}
	var claims []snippetClaim
	for i, m := range claim.FindAllStringSubmatch(s.src, -1) {
		c := snippetClaim{expr: m[1], text: strings.TrimSpace(m[2])}
		if strings.HasSuffix(c.text, ` ..."`) {
			c.text, c.prefix = strings.TrimSuffix(c.text, ` ..."`)+`"`, true
		}
		claims = append(claims, c)
		out += fmt.Sprintf("\noutput \"claim_%d\" {\n  value = jsonencode(%s)\n}\noutput \"want_%d\" {\n  value = jsonencode(%s)\n}\n", i, c.expr, i, c.text)
	}
	return out, claims
}

// checkClaims compares each claimed result with the value the data source read.
func checkClaims(st *terraform.State, claims []snippetClaim) error {
	outputs := st.RootModule().Outputs
	var errs []string
	for i, c := range claims {
		got, want := outputs[fmt.Sprintf("claim_%d", i)], outputs[fmt.Sprintf("want_%d", i)]
		if got == nil || want == nil {
			return fmt.Errorf("claim %s: no output", c.expr)
		}
		g, w := got.Value.(string), want.Value.(string)
		ok := g == w
		if c.prefix {
			var gs, ws string
			if json.Unmarshal([]byte(g), &gs) != nil || json.Unmarshal([]byte(w), &ws) != nil {
				return fmt.Errorf("claim %s: a value ending in \" ...\" claims the beginning of a string, got %s", c.expr, g)
			}
			ok = strings.HasPrefix(gs, ws)
		}
		if !ok {
			errs = append(errs, fmt.Sprintf("%s = %s, the README claims %s", c.expr, g, c.text))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// The README's bpg recipe is what TestAccBpgProviderFedByPlacement applies (with 2048 MiB),
// line by line; only the README's comments are its own.
func TestReadmeBpgRecipe(t *testing.T) {
	comment := regexp.MustCompile(`\s*#.*$`)
	lines := func(src string) []string {
		var out []string
		for _, l := range strings.Split(src, "\n") {
			if l = comment.ReplaceAllString(l, ""); strings.TrimSpace(l) != "" {
				out = append(out, l)
			}
		}
		return out
	}
	// The README shows the qemuscheduler provider block without the test's connection.
	want := lines((&accEnv{}).providerBlock(bpgProviderSettings) + fmt.Sprintf(bpgRecipe, 2048))
	for _, s := range readmeSnippets(t) {
		if s.lang != "hcl" || !strings.Contains(s.src, `resource "proxmox_virtual_environment_vm" "clone"`) {
			continue
		}
		got := lines(s.src)
		if !slices.Equal(got, want) {
			t.Errorf("README.md line %d, the bpg recipe, differs from bpgRecipe:\n%s\nwant:\n%s", s.line, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		return
	}
	t.Fatal(`README.md has no hcl snippet with resource "proxmox_virtual_environment_vm" "clone"`)
}

// The README's HA rules recipe (a ```terraform snippet: bpg v0.99's harule, which the module
// proxy does not serve, so it is not run) parses and reads only attributes ha_rules has;
// TestAccPlacementHARules writes those attributes into the simulator as bpg would.
func TestReadmeHARulesRecipe(t *testing.T) {
	each := regexp.MustCompile(`each\.value\.(\w+)`)
	for _, s := range readmeSnippets(t) {
		if s.lang != "terraform" || !strings.Contains(s.src, `resource "proxmox_virtual_environment_harule"`) {
			continue
		}
		parseHCL(t, "ha rules recipe", []byte(s.src))
		if !strings.Contains(s.src, ".ha_rules : r.id => r") {
			t.Errorf("README.md line %d: the recipe's for_each is not over ha_rules by id", s.line)
		}
		read := 0
		for _, block := range parseHCL(t, "ha rules recipe", []byte(s.src)).Body().Blocks() {
			if !slices.Equal(block.Labels(), []string{"proxmox_virtual_environment_harule", "clones"}) {
				continue
			}
			for _, m := range each.FindAllStringSubmatch(string(block.BuildTokens(nil).Bytes()), -1) {
				if _, ok := scheduling.HARuleType.AttrTypes[m[1]]; !ok {
					t.Errorf("README.md line %d reads ha_rules' %q, which it does not have", s.line, m[1])
				}
				read++
			}
		}
		if read < 6 {
			t.Errorf("README.md line %d: the harule reads %d attributes of a rule, want all six", s.line, read)
		}
		return
	}
	t.Fatal(`README.md has no terraform snippet with resource "proxmox_virtual_environment_harule"`)
}

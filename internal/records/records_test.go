package records

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

func full() Record {
	return Record{
		Profile:      "ha",
		Tags:         []string{"k8s", "control-plane"},
		Annotations:  map[string]string{"vmid.qemu-scheduler/range": "1000-1099", "node.qemu-scheduler/regex": "pve[1-3]"},
		NodeSelector: map[string]string{"zone": "a", "disk": "nvme"},
		NodeAffinity: []scheduler.NodeAffinityTerm{scheduler.Expression(50, "rack", "In", "r1", "r2"),
			scheduler.Expression(0, "gpu", "DoesNotExist"),
			{Terms: [][]scheduler.NodeExpression{{{Key: "zone", Operator: "In", Values: []string{"a"}}, {Key: "gpu", Operator: "Exists"}},
				{{Key: "zone", Operator: "In", Values: []string{"b"}}}}}},
		Tolerations: []scheduler.Toleration{{Key: "dedicated", Operator: "Equal", Value: "db", Effect: "NoSchedule"}, {Operator: "Exists"}},
		VMAffinity:  []scheduler.VMGroupTerm{{Tags: []string{"db"}, TopologyKey: "zone", Weight: 20}},
		VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: []string{"k8s", "control-plane"}, TopologyKey: "node"},
			{TagsAnyOf: []string{"web", "api"}, TagsNoneOf: []string{"canary"}, TopologyKey: "zone", Weight: 10}},
		TopologySpread: []scheduler.SpreadConstraint{{Tags: []string{"worker"}, TopologyKey: "rack", MaxSkew: 2, WhenUnsatisfiable: "ScheduleAnyway",
			NodeAffinityPolicy: "Honor", NodeTaintsPolicy: "Honor"},
			{Tags: []string{"worker"}, TagsNoneOf: []string{"canary"}, TopologyKey: "zone", MaxSkew: 1, WhenUnsatisfiable: "DoNotSchedule",
				MinDomains: 3, NodeAffinityPolicy: "Ignore", NodeTaintsPolicy: "Honor"}},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, user := range []string{"", "hello", "hello\n", "# Title\n\nsome *markdown*\n\n"} {
		want := full()
		notes := Join(user, &want)
		gotUser, got, warnings := Parse("101", notes)
		if len(warnings) > 0 {
			t.Fatalf("user %q: warnings %v in\n%s", user, warnings, notes)
		}
		if gotUser != user {
			t.Errorf("user text %q came back as %q", user, gotUser)
		}
		want.Tags = []string{"control-plane", "k8s"} // written sorted
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("user %q: record\n%+v\ncame back as\n%+v", user, want, *got)
		}
		// Formatting what was read gives the same text: no rewrite, no diff.
		if again := Join(gotUser, got); again != notes {
			t.Errorf("second format differs:\n%s\n---\n%s", notes, again)
		}
	}
}

func TestFormatIsStableAndDocumented(t *testing.T) {
	r := full()
	want := `qemu-scheduler/record: v1
qemu-scheduler/profile: ha
qemu-scheduler/tags: control-plane, k8s
qemu-scheduler/annotation: node.qemu-scheduler/regex=pve[1-3]
qemu-scheduler/annotation: vmid.qemu-scheduler/range=1000-1099
qemu-scheduler/node-selector: disk=nvme, zone=a
qemu-scheduler/node-affinity: key=rack operator=In values=r1,r2 weight=50
qemu-scheduler/node-affinity: key=gpu operator=DoesNotExist
qemu-scheduler/node-affinity: key=zone operator=In values=a & key=gpu operator=Exists | key=zone operator=In values=b
qemu-scheduler/toleration: key=dedicated value=db effect=NoSchedule
qemu-scheduler/toleration: operator=Exists
qemu-scheduler/vm-affinity: tags=db topology_key=zone weight=20
qemu-scheduler/vm-anti-affinity: tags=k8s,control-plane topology_key=node
qemu-scheduler/vm-anti-affinity: tags_any_of=web,api tags_none_of=canary topology_key=zone weight=10
qemu-scheduler/topology-spread: tags=worker topology_key=rack max_skew=2 when_unsatisfiable=ScheduleAnyway
qemu-scheduler/topology-spread: tags=worker tags_none_of=canary topology_key=zone max_skew=1 when_unsatisfiable=DoNotSchedule min_domains=3 node_affinity_policy=Ignore
`
	if got := Format(r); got != want {
		t.Errorf("Format:\n%s\nwant\n%s", got, want)
	}
}

func TestHandWritten(t *testing.T) {
	notes := "Database primary, owned by team X.\n" +
		"qemu-scheduler/record: v1\n" +
		"\n" +
		"  - qemu-scheduler/vm-anti-affinity: tags=db\n" +
		"qemu-scheduler/topology-spread:   tags=DB   topology_key=zone\n" +
		"qemu-scheduler/node-selector: zone=a,disk=ssd\n"
	user, r, warnings := Parse("db1", notes)
	if len(warnings) > 0 {
		t.Fatal(warnings)
	}
	if user != "Database primary, owned by team X." {
		t.Errorf("user text %q", user)
	}
	want := Record{
		NodeSelector:   map[string]string{"zone": "a", "disk": "ssd"},
		VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: []string{"db"}, TopologyKey: "node"}},
		TopologySpread: []scheduler.SpreadConstraint{{Tags: []string{"DB"}, TopologyKey: "zone", MaxSkew: 1, WhenUnsatisfiable: "DoNotSchedule",
			NodeAffinityPolicy: "Honor", NodeTaintsPolicy: "Honor"}},
	}
	if !reflect.DeepEqual(*r, want) {
		t.Errorf("got %+v, want %+v (defaults as the resource's blocks)", *r, want)
	}
}

func TestNoRecord(t *testing.T) {
	for _, notes := range []string{"", "plain notes", "qemu-scheduler/labels: zone=a", "see qemu-scheduler/record: v1 inline"} {
		user, r, warnings := Parse("5", notes)
		if r != nil || len(warnings) > 0 || user != notes {
			t.Errorf("%q: record %v, warnings %v, user %q", notes, r, warnings, user)
		}
	}
}

func TestVersions(t *testing.T) {
	_, r, warnings := Parse("web1", "qemu-scheduler/record: v2\nqemu-scheduler/vm-anti-affinity: tags=a\n")
	if r != nil || len(warnings) != 1 || !strings.Contains(warnings[0], `VM web1: placement record version "v2"`) {
		t.Errorf("a newer version must be ignored with one warning naming the VM: %v %v", r, warnings)
	}
	_, r, warnings = Parse("web1", "qemu-scheduler/record:\n")
	if r != nil || len(warnings) != 1 {
		t.Errorf("a missing version must be ignored with a warning: %v %v", r, warnings)
	}
}

func TestMalformedLinesAreSkippedWithWarnings(t *testing.T) {
	notes := "qemu-scheduler/record: v1\n" +
		"qemu-scheduler/vm-anti-affinity: tags=cp weight=500\n" + // skipped
		"qemu-scheduler/vm-anti-affinity: tags=cp\n" + // kept
		"qemu-scheduler/node-affinity: key=zone operator=Near values=a\n" +
		"qemu-scheduler/toleration: effect=NoSchedule\n" +
		"qemu-scheduler/topology-spread: topology_key=zone\n" +
		"qemu-scheduler/topology-spread: tags=a when_unsatisfiable=ScheduleAnyway min_domains=2\n" +
		"qemu-scheduler/topology-spred: tags=a\n" +
		"qemu-scheduler/vm-affinity: tags=a colour=red\n" +
		"qemu-scheduler/annotation: nokey\n" +
		"qemu-scheduler/annotation: vmid.qemu-scheduler/rnage=1000-1099\n" +
		"qemu-scheduler/annotation: node.qemu-scheduler/regex=(\n" +
		"qemu-scheduler/annotation: vmid.qemu-scheduler/range=abc\n" +
		"qemu-scheduler/annotation: vmid.qemu-scheduler/range=1000-1099\n" + // kept
		"qemu-scheduler/node-selector: zone\n" +
		"free text after the record\n"
	_, r, warnings := Parse("cp1", notes)
	if r == nil || len(r.VMAntiAffinity) != 1 || r.VMAntiAffinity[0].Weight != 0 || len(r.Annotations) != 1 || r.Annotations["vmid.qemu-scheduler/range"] != "1000-1099" {
		t.Fatalf("the good lines must count: %+v", r)
	}
	if len(warnings) != 13 {
		t.Fatalf("want 13 warnings, got %d: %s", len(warnings), strings.Join(warnings, "\n"))
	}
	for _, w := range warnings {
		if !strings.HasPrefix(w, "VM cp1, placement record line ") || !strings.HasSuffix(w, "the line is skipped") {
			t.Errorf("warning does not name the VM and the line: %s", w)
		}
	}
	for i, want := range []string{"weight must be 1..100", "operator", "", "tags is missing", "min_domains applies to when_unsatisfiable=DoNotSchedule only", `unknown key "topology-spred"`, `unknown field "colour"`, "key=value",
		`unknown annotation "vmid.qemu-scheduler/rnage"; valid keys: node.qemu-scheduler/regex, vmid.qemu-scheduler/range, vmid.qemu-scheduler/regex`,
		`node.qemu-scheduler/regex: invalid regex "("`, `vmid.qemu-scheduler/range: `, "no value", "not a qemu-scheduler"} {
		if !strings.Contains(warnings[i], want) {
			t.Errorf("warning %d %q does not say %q", i, warnings[i], want)
		}
	}
}

func TestEmpty(t *testing.T) {
	if !(&Record{Tags: []string{"a"}, Profile: "default"}).Empty() {
		t.Error("tags and the default profile are no policy")
	}
	if (&Record{Profile: "packing"}).Empty() {
		t.Error("a profile is a policy")
	}
}

// A node affinity's form comes back from the record where its terms alone do not tell it:
// one term written as node_selector_term or as match_expressions only; several terms are
// always node_selector_term blocks and write no form.
func TestNodeAffinityForms(t *testing.T) {
	twoTerms := scheduler.NodeAffinityTerm{Terms: [][]scheduler.NodeExpression{{{Key: "zone", Operator: "Exists"}}, {{Key: "gpu", Operator: "Exists"}}}}
	r := Record{NodeAffinity: []scheduler.NodeAffinityTerm{scheduler.Expression(0, "zone", "In", "a"), scheduler.Expression(0, "zone", "In", "b"),
		scheduler.Expression(5, "rack", "Exists"), twoTerms, scheduler.Expression(0, "disk", "Exists")},
		NodeAffinityForms: []NodeAffinityForm{FormOwn, FormSelectorTerms, FormMatchExpressions, FormSelectorTerms, FormOwn}}
	text := Format(r)
	for _, want := range []string{"node-affinity: key=zone operator=In values=a\n", "node-affinity: key=zone operator=In values=b form=node_selector_term\n",
		"node-affinity: key=rack operator=Exists form=match_expressions weight=5\n", "node-affinity: key=zone operator=Exists | key=gpu operator=Exists\n",
		"node-affinity: key=disk operator=Exists\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("record lacks %q:\n%s", want, text)
		}
	}
	_, got, warnings := Parse("1", text)
	if len(warnings) > 0 {
		t.Fatal(warnings)
	}
	for i := range r.NodeAffinity {
		if got.Form(i) != r.Form(i) {
			t.Errorf("affinity %d: form %q came back as %q", i, r.Form(i), got.Form(i))
		}
	}
	if !reflect.DeepEqual(got.NodeAffinity, r.NodeAffinity) || Format(*got) != text {
		t.Errorf("record changed on the way back:\n%s\n---\n%s", text, Format(*got))
	}
	for line, want := range map[string]string{
		"key=zone operator=Exists form=own": `form must be match_expressions or node_selector_term, got "own"`,
		"key=zone operator=Exists form=match_expressions & key=a operator=Exists form=node_selector_term": "form given twice",
	} {
		_, got, warnings := Parse("1", "qemu-scheduler/record: v1\nqemu-scheduler/node-affinity: "+line+"\n")
		if len(warnings) != 1 || !strings.Contains(warnings[0], want) || len(got.NodeAffinity) != 0 {
			t.Errorf("%q: warnings %v, want one saying %q and the line skipped", line, warnings, want)
		}
	}
}

// TestReadmeExample parses the hand-written record README.md shows: it must read without a
// warning, every one of its lines counting.
func TestReadmeExample(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(readme), "```text\n")
	notes, _, ok := strings.Cut(rest, "```")
	if !ok || !strings.Contains(notes, Header+": v1") {
		t.Fatal("README.md has no ```text block with a placement record")
	}
	user, r, warnings := Parse("payroll", notes)
	if len(warnings) > 0 {
		t.Fatalf("README's record warns: %v", warnings)
	}
	if r == nil {
		t.Fatal("README's record is not read as one")
	}
	if user != "Payroll database, owned by team finance." {
		t.Errorf("user text %q", user)
	}
	counts := map[string]int{"profile": len(r.Profile), "tags": len(r.Tags), "annotation": len(r.Annotations),
		"node-selector": len(r.NodeSelector), "node-affinity": len(r.NodeAffinity), "toleration": len(r.Tolerations),
		"vm-affinity": len(r.VMAffinity), "vm-anti-affinity": len(r.VMAntiAffinity), "topology-spread": len(r.TopologySpread)}
	for key, n := range counts {
		if strings.Contains(notes, prefix+key+":") && n == 0 {
			t.Errorf("README's %s line reads as nothing", key)
		}
	}
}

// A group's tags keep the case the configuration wrote them in (PVE and the scheduler compare
// tags case-insensitively): the record read back formats as written, so a VM whose
// vm_anti_affinity names "Web" is not planned to rewrite its record on every plan, and an
// import gives the configuration's blocks back.
func TestGroupTagsKeepTheirCase(t *testing.T) {
	r := Record{VMAntiAffinity: []scheduler.VMGroupTerm{{Tags: []string{"Web"}, TagsAnyOf: []string{"K8s"}, TagsNoneOf: []string{"Canary"}, TopologyKey: "node"}},
		VMAffinity: []scheduler.VMGroupTerm{{Tags: []string{"DB"}, TopologyKey: "node", Weight: 5}},
		TopologySpread: []scheduler.SpreadConstraint{{Tags: []string{"Worker"}, TopologyKey: "node", MaxSkew: 1, WhenUnsatisfiable: "DoNotSchedule",
			NodeAffinityPolicy: "Honor", NodeTaintsPolicy: "Honor"}}}
	text := Format(r)
	_, got, warnings := Parse("1", text)
	if len(warnings) > 0 {
		t.Fatal(warnings)
	}
	if !reflect.DeepEqual(*got, r) || Format(*got) != text {
		t.Errorf("record changed on the way back:\n%s\n---\n%s", text, Format(*got))
	}
	if !got.VMAntiAffinity[0].Group().Selects([]string{"web", "k8s"}) || got.VMAntiAffinity[0].Group().Selects([]string{"web", "k8s", "canary"}) {
		t.Error("a group written in capitals must still select the guests PVE tags in lowercase")
	}
}

// A default written out and one left out give the same record, and the record read back has
// it filled in, as the resource's blocks plan it: a toleration's operator Equal, a spread's
// Honor policies (kube's empty operator and the provider's policy defaults mean the same).
func TestDefaultsLeftOut(t *testing.T) {
	written := Record{Tolerations: []scheduler.Toleration{{Key: "gpu", Operator: "Equal", Value: "a"}},
		TopologySpread: []scheduler.SpreadConstraint{{Tags: []string{"web"}, TopologyKey: "node", MaxSkew: 1, WhenUnsatisfiable: "DoNotSchedule",
			NodeAffinityPolicy: "Honor", NodeTaintsPolicy: "Honor"}}}
	left := Record{Tolerations: []scheduler.Toleration{{Key: "gpu", Value: "a"}},
		TopologySpread: []scheduler.SpreadConstraint{{Tags: []string{"web"}, TopologyKey: "node", MaxSkew: 1, WhenUnsatisfiable: "DoNotSchedule"}}}
	text := Format(written)
	if Format(left) != text || strings.Contains(text, "operator=") || strings.Contains(text, "_policy=") {
		t.Fatalf("defaults written out:\n%s\nleft out:\n%s", text, Format(left))
	}
	_, got, warnings := Parse("1", text)
	if len(warnings) > 0 || !reflect.DeepEqual(*got, written) {
		t.Errorf("read back as %+v (%v), want the defaults filled in: %+v", *got, warnings, written)
	}
}

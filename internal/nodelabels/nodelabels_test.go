package nodelabels

import (
	"reflect"
	"strings"
	"testing"
)

func TestValidateKey(t *testing.T) {
	tests := []struct {
		key, wantErr string
	}{
		{"zone", ""},
		{"Zone_1.a-b", ""},
		{"example.com/zone", ""},
		{"a.b-c.d/x", ""},
		{strings.Repeat("a", 63), ""},
		{"", "key is empty"},
		{strings.Repeat("a", 64), "64 characters long, at most 63"},
		{"-zone", "must start and end with a letter or digit"},
		{"zone-", "must start and end with a letter or digit"},
		{"zo ne", "may hold only"},
		{"/zone", "empty prefix"},
		{"Example.com/zone", "lowercase DNS subdomain"},
		{"ex_ample.com/zone", "lowercase DNS subdomain"},
		{strings.Repeat("a", 254) + "/zone", "lowercase DNS subdomain"},
		{"a/b/c", "more than one /"},
		{"example.com/", "the name is empty"},
	}
	for _, tt := range tests {
		err := ValidateKey(tt.key)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("ValidateKey(%q) = %v, want %q", tt.key, err, tt.wantErr)
		}
	}
}

func TestValidateValue(t *testing.T) {
	for _, ok := range []string{"", "a", "nvme", "A-1_b.c", strings.Repeat("x", 63)} {
		if err := ValidateValue(ok); err != nil {
			t.Errorf("ValidateValue(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"a b", "-a", "a.", "a/b", strings.Repeat("x", 64)} {
		if err := ValidateValue(bad); err == nil {
			t.Errorf("ValidateValue(%q) accepted", bad)
		}
	}
}

func TestParseTaint(t *testing.T) {
	tests := []struct {
		in      string
		want    Taint
		wantErr string
	}{
		{"dedicated=db:NoSchedule", Taint{Key: "dedicated", Value: "db", Effect: NoSchedule}, ""},
		{"old-hw:PreferNoSchedule", Taint{Key: "old-hw", Value: "", Effect: PreferNoSchedule}, ""},
		{"example.com/gpu=a100:NoExecute", Taint{Key: "example.com/gpu", Value: "a100", Effect: NoExecute}, ""},
		{"gpu=:NoSchedule", Taint{Key: "gpu", Value: "", Effect: NoSchedule}, ""},
		{"gpu", Taint{}, `taint "gpu" has no effect; write key[=value]:Effect with Effect one of NoSchedule, PreferNoSchedule, NoExecute`},
		{"gpu:", Taint{}, "has no effect"},
		{"gpu:noschedule", Taint{}, `has effect "noschedule"; use one of NoSchedule`},
		{":NoSchedule", Taint{}, "key is empty"},
		{"g pu:NoSchedule", Taint{}, "may hold only"},
		{"gpu=a b:NoSchedule", Taint{}, `value "a b"`},
	}
	for _, tt := range tests {
		got, err := ParseTaint(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseTaint(%q) error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseTaint(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		if FormatTaint(got) != strings.Replace(tt.in, "=:", ":", 1) {
			t.Errorf("FormatTaint(%+v) = %q, want %q", got, FormatTaint(got), tt.in)
		}
	}
	if _, err := ParseUserTaint("node.qemu-scheduler/maintenance:NoSchedule"); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("reserved taint key: %v", err)
	}
}

func TestParseNotes(t *testing.T) {
	notes := "Rack 4, row 2\r\n" +
		"qemu-scheduler/labels: zone=a, disk=nvme,gpu=\n" +
		"  - qemu-scheduler/taints: dedicated=db:NoSchedule, old-hw:PreferNoSchedule\n" +
		"see qemu-scheduler/labels: ignored=yes\n" +
		"- qemu-scheduler/labels: Bad Key=x, rack = r4,, node.qemu-scheduler/name=fake, flag\n" +
		"qemu-scheduler/taints: gpu, ok:NoExecute\n" +
		"qemu-scheduler/taint: nvidia:NoSchedule\n" +
		"Qemu-Scheduler/Labels zone=c\n" +
		"qemu-scheduler/labels: room=eu west\n" +
		"qemu-scheduler/taints dedicated=gpu:NoSchedule\n"
	set, warnings := ParseNotes("pve1", notes)
	wantLabels := map[string]string{"zone": "a", "disk": "nvme", "gpu": "", "rack": "r4"}
	if !reflect.DeepEqual(set.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v", set.Labels, wantLabels)
	}
	wantTaints := []Taint{{Key: "dedicated", Value: "db", Effect: NoSchedule}, {Key: "old-hw", Value: "", Effect: PreferNoSchedule}, {Key: "ok", Value: "", Effect: NoExecute}}
	if !reflect.DeepEqual(set.Taints, wantTaints) {
		t.Errorf("taints = %v, want %v", set.Taints, wantTaints)
	}
	line5 := `node pve1, Notes line 5 "- qemu-scheduler/labels: Bad Key=x, rack = r4,, node.qemu-scheduler/name=fake, flag": `
	wantWarnings := []struct{ prefix, suffix string }{
		{line5 + `label key "Bad Key": the name may hold only`, "; the entry is skipped"},
		{line5 + `label key "node.qemu-scheduler/name" uses the prefix node.qemu-scheduler/, which is reserved`, "; the entry is skipped"},
		{line5 + `label "flag" has no value; write key=value`, "; the entry is skipped, so node pve1 has no label flag from its Notes"},
		{`node pve1, Notes line 6 "qemu-scheduler/taints: gpu, ok:NoExecute": taint "gpu" has no effect`,
			"; the entry is skipped, so node pve1 is not tainted gpu from its Notes: VMs that do not tolerate it may be placed there"},
		{`node pve1, Notes line 7 "qemu-scheduler/taint: nvidia:NoSchedule": unknown key qemu-scheduler/taint; ` +
			`the known keys are qemu-scheduler/labels and qemu-scheduler/taints (each followed by a colon); the line is ignored`, ""},
		{`node pve1, Notes line 8 "Qemu-Scheduler/Labels zone=c": write the key as qemu-scheduler/labels: (lowercase, followed by a colon); ` +
			`the line is ignored, so node pve1 has none of its labels`, ""},
		{`node pve1, Notes line 9 "qemu-scheduler/labels: room=eu west": label "room": `, "; the entry is skipped, so node pve1 has no label room from its Notes"},
		{`node pve1, Notes line 10 "qemu-scheduler/taints dedicated=gpu:NoSchedule": write the key as qemu-scheduler/taints: (lowercase, followed by a colon); ` +
			`the line is ignored, so node pve1 has none of its taints: VMs that do not tolerate them may be placed there`, ""},
	}
	if len(warnings) != len(wantWarnings) {
		t.Fatalf("warnings = %q", warnings)
	}
	for i, w := range wantWarnings {
		if !strings.HasPrefix(warnings[i], w.prefix) || !strings.HasSuffix(warnings[i], w.suffix) {
			t.Errorf("warning %d = %q\nwant prefix %q\nand suffix %q", i, warnings[i], w.prefix, w.suffix)
		}
	}
	if empty, w := ParseNotes("pve2", ""); len(empty.Labels) != 0 || empty.Taints != nil || w != nil {
		t.Errorf("empty notes: %v %v", empty, w)
	}
}

// A skipped entry whose key another entry of the Notes gives (on the same line or another)
// does not leave the node without it: the warning says what the node keeps, not that it goes
// without the label or taint.
func TestParseNotesSkippedEntryOfAKeyGivenElsewhere(t *testing.T) {
	notes := "qemu-scheduler/labels: zone=a, zone\n" +
		"qemu-scheduler/labels: rack=r 1\n" +
		"qemu-scheduler/labels: rack=r1\n" +
		"qemu-scheduler/taints: gpu=a b:NoSchedule, gpu:PreferNoSchedule\n"
	set, warnings := ParseNotes("pve2", notes)
	if want := map[string]string{"zone": "a", "rack": "r1"}; !reflect.DeepEqual(set.Labels, want) {
		t.Errorf("labels = %v, want %v", set.Labels, want)
	}
	for i, suffix := range []string{
		"; the entry is skipped, so node pve2 keeps the label zone=a of another entry of its Notes",
		"; the entry is skipped, so node pve2 keeps the label rack=r1 of another entry of its Notes",
		"; the entry is skipped, so node pve2 is tainted gpu only by another entry of its Notes (gpu:PreferNoSchedule)",
	} {
		if i >= len(warnings) || !strings.HasSuffix(warnings[i], suffix) {
			t.Errorf("warnings = %q\nwant warning %d ending %q", warnings, i, suffix)
		}
	}
	if len(warnings) != 3 {
		t.Errorf("%d warnings, want 3: %q", len(warnings), warnings)
	}
}

func TestCompose(t *testing.T) {
	notes := Set{Labels: map[string]string{"zone": "b", "disk": "ssd"},
		Taints: []Taint{{Key: "dedicated", Value: "ops", Effect: NoSchedule}, {Key: "old-hw", Value: "", Effect: PreferNoSchedule}}}
	block := Set{Labels: map[string]string{"zone": "a"}, Taints: []Taint{{Key: "dedicated", Value: "db", Effect: NoSchedule}}}
	got := Compose(Facts{Name: "pve1", Arch: "x86_64", HAState: "maintenance"}, block, notes)
	wantLabels := map[string]string{"zone": "a", "disk": "ssd", LabelName: "pve1", LabelArch: "x86_64"}
	if !reflect.DeepEqual(got.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v", got.Labels, wantLabels)
	}
	wantTaints := []Taint{{Key: "dedicated", Value: "db", Effect: NoSchedule}, {Key: TaintMaintenance, Value: "", Effect: NoSchedule}, {Key: "old-hw", Value: "", Effect: PreferNoSchedule}}
	if !reflect.DeepEqual(got.Taints, wantTaints) {
		t.Errorf("taints = %v, want %v", got.Taints, wantTaints)
	}

	for state, want := range map[string][]Taint{
		"":            nil,
		"online":      nil,
		"unknown":     nil,
		"fence":       {{Key: TaintHAFenced, Value: "", Effect: NoSchedule}},
		"gone":        {{Key: TaintHAFenced, Value: "", Effect: NoSchedule}},
		"maintenance": {{Key: TaintMaintenance, Value: "", Effect: NoSchedule}},
	} {
		got := Compose(Facts{Name: "pve2", HAState: state}, Set{}, Set{})
		if !reflect.DeepEqual(got.Taints, want) {
			t.Errorf("hastate %q: taints %v, want %v", state, got.Taints, want)
		}
		if _, hasArch := got.Labels[LabelArch]; hasArch || got.Labels[LabelName] != "pve2" {
			t.Errorf("hastate %q: labels %v", state, got.Labels)
		}
	}
}

package scheduling

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/plugins"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// An ignored annotation is warned about where the user wrote it: on the resource's own
// annotation, or, when it comes from the selected profile's defaults, on profile, saying so
// (the resource has no such annotation to remove).
func TestWarnIgnoredAnnotationsPointsWhereItWasWritten(t *testing.T) {
	off := false
	profile, err := plugins.NewProfile(scheduler.PluginConfig{Filters: map[string]scheduler.PluginSetting{plugins.NodeRegexName: {Enable: &off}}})
	if err != nil {
		t.Fatal(err)
	}
	req := &scheduler.Request{Annotations: map[string]string{scheduler.AnnotationNodeRegex: "pve3"}}
	own := types.MapValueMust(types.StringType, map[string]attr.Value{scheduler.AnnotationNodeRegex: types.StringValue("pve3")})
	for _, tt := range []struct {
		name  string
		m     SchedulingModel
		at    path.Path
		fixes string
	}{
		{"its own", SchedulingModel{Profile: types.StringNull(), Annotations: own}, path.Root("annotations").AtMapKey(scheduler.AnnotationNodeRegex), "remove the annotation"},
		{"the profile's", SchedulingModel{Profile: types.StringValue("tenant-a"), Annotations: types.MapNull(types.StringType)}, path.Root("profile"),
			`default annotations of profile "tenant-a"`},
	} {
		var diags diag.Diagnostics
		WarnIgnoredAnnotations(profile, req, &tt.m, &diags)
		if len(diags) != 1 {
			t.Fatalf("%s: %v, want one warning", tt.name, diags)
		}
		d, ok := diags[0].(diag.DiagnosticWithPath)
		if !ok || !d.Path().Equal(tt.at) || !strings.Contains(d.Detail(), tt.fixes) {
			t.Errorf("%s annotation: warning %v, want it on %s saying %q", tt.name, diags[0], tt.at, tt.fixes)
		}
	}
}

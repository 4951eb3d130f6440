package scheduling

import (
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
)

// DefaultProfile is the name that selects no profile layer: the provider's own plugin config.
const DefaultProfile = "default"

var ProfileNamePattern = regexp.MustCompile(`^[a-z0-9-]+$`)

const profileAttrDescription = "The provider `profile` (by name) whose plugin config applies under this object's own `plugin_config_yaml` " +
	"and `plugin_config`, kube-scheduler's `schedulerName`. Omitted or `\"default\"`: no profile layer. An unknown name is a plan error " +
	"listing the defined ones. The profile's name ends the summary and any \"no placement\" error."

func profileValidators() []validator.String {
	return []validator.String{stringvalidator.RegexMatches(ProfileNamePattern, `must be the name of a provider profile ([a-z0-9-]+), or "default"`)}
}

// ProfileName is the selected profile, "default" when none is named.
func ProfileName(profile types.String) string {
	if !kit.Known(profile) || profile.ValueString() == "" {
		return DefaultProfile
	}
	return profile.ValueString()
}

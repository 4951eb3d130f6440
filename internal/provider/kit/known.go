package kit

import (
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// Known tells whether a string attribute has a value: set, and known at plan time.
func Known(v types.String) bool { return !v.IsNull() && !v.IsUnknown() }

// LogSubsystem is the tflog subsystem that logs the scheduler's decisions.
const LogSubsystem = "scheduler"

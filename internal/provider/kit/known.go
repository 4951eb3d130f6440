package kit

import (
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func Known(v types.String) bool { return !v.IsNull() && !v.IsUnknown() }

const LogSubsystem = "scheduler"

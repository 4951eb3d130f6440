package kit

import (
	"context"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// propertyString splits a PVE property string into its keys; a value without key is stored
// under defaultKey.
func PropertyString(value, defaultKey string) map[string]string {
	out := map[string]string{}
	for _, part := range strings.Split(value, ",") {
		if part == "" {
			continue
		}
		if k, v, ok := strings.Cut(part, "="); ok {
			out[k] = v
		} else {
			out[defaultKey] = part
		}
	}
	return out
}

func Int64From(props map[string]string, key string) types.Int64 {
	if n, err := strconv.ParseInt(props[key], 10, 64); err == nil {
		return types.Int64Value(n)
	}
	return types.Int64Null()
}

func CmpOr(v, fallback string) string {
	if v == "" {
		return fallback
	}
	return v
}

// listStrings is a list attribute's strings; none while it is null or unknown.
func ListStrings(ctx context.Context, l types.List, diags *diag.Diagnostics) []string {
	if l.IsNull() || l.IsUnknown() {
		return nil
	}
	var out []string
	diags.Append(l.ElementsAs(ctx, &out, false)...)
	return out
}

// listOrNull is the list of items, or a null list when there are none and keep is false (an
// import of a VM without such a setting).
func ListOrNull(ctx context.Context, items []string, keep bool, diags *diag.Diagnostics) types.List {
	if len(items) == 0 && !keep {
		return types.ListNull(types.StringType)
	}
	l, d := types.ListValueFrom(ctx, types.StringType, NonNil(items))
	diags.Append(d...)
	return l
}

package kit

import (
	"context"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// SetString, setInt and setBool render an attribute into cfg when it is set.
func SetString(cfg map[string]string, key string, v types.String) {
	if Known(v) {
		cfg[key] = v.ValueString()
	}
}

func SetInt(cfg map[string]string, key string, v types.Int64) {
	if !v.IsNull() && !v.IsUnknown() {
		cfg[key] = strconv.FormatInt(v.ValueInt64(), 10)
	}
}

func SetBool(cfg map[string]string, key string, v types.Bool) {
	if !v.IsNull() && !v.IsUnknown() {
		cfg[key] = BoolString(v.ValueBool())
	}
}

func TagFields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' || r == ' ' })
}

func BoolString(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func NonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// PropertyString splits a PVE property string into its keys; a value without key is stored
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

// ListStrings is a list attribute's strings; none while it is null or unknown.
func ListStrings(ctx context.Context, l types.List, diags *diag.Diagnostics) []string {
	if l.IsNull() || l.IsUnknown() {
		return nil
	}
	var out []string
	diags.Append(l.ElementsAs(ctx, &out, false)...)
	return out
}

// ListOrNull is the list of items, or a null list when there are none and keep is false (an
// import of a VM without such a setting).
func ListOrNull(ctx context.Context, items []string, keep bool, diags *diag.Diagnostics) types.List {
	if len(items) == 0 && !keep {
		return types.ListNull(types.StringType)
	}
	l, d := types.ListValueFrom(ctx, types.StringType, NonNil(items))
	diags.Append(d...)
	return l
}

// StorageOr is the storage a user-set storage attribute names, else fallback (the scheduler's
// choice): for a new disk, and for the disks of a full clone.
func StorageOr(v types.String, fallback string) string {
	if Known(v) {
		return v.ValueString()
	}
	return fallback
}

// DiskStorage is the storage part of a disk value ("local-lvm:vm-100-disk-0,size=32G").
func DiskStorage(value string) string {
	s, _, _ := strings.Cut(value, ":")
	return s
}

func ListOrNone(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	return strings.Join(items, ", ")
}

// RestartHint says how a running VM takes what PVE keeps pending.
const RestartHint = "stop and start it, or reboot it from Proxmox VE; a reboot inside the guest is not enough"

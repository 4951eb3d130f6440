package kit

import (
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/types"
)

// setString, setInt and setBool render an attribute into cfg when it is set.
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

package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
)

// providerBlocks are the repeated blocks of the provider configuration, decoded.
type providerBlocks struct {
	profiles []config.ProfileModel
	nodes    []config.NodeBlockModel
	// unknown names a block of which a value is unknown (left out of the lists above).
	unknown string
}

// decodeBlocks decodes the profile and node blocks. Terraform validates the provider
// configuration with every variable unknown, so a dynamic block's list, or a nested block of
// one of its elements, may be unknown there; such elements are left out of the lists, which
// ValidateConfig checks as far as they go, and Configure, which needs them whole, refuses.
func decodeBlocks(ctx context.Context, m providerModel, diags *diag.Diagnostics) providerBlocks {
	var b providerBlocks
	b.profiles = knownElements[config.ProfileModel](ctx, m.Profiles, "profile", &b.unknown, diags)
	b.nodes = knownElements[config.NodeBlockModel](ctx, m.Nodes, "node", &b.unknown, diags)
	return b
}

// knownElements decodes the fully known elements of the block list l named name, and sets
// unknown to name when an element, or the list itself, is not fully known.
func knownElements[T any](ctx context.Context, l types.List, name string, unknown *string, diags *diag.Diagnostics) []T {
	if l.IsUnknown() {
		*unknown = name
		return nil
	}
	var out []T
	for i, e := range l.Elements() {
		v, err := e.ToTerraformValue(ctx)
		if err != nil {
			diags.AddAttributeError(path.Root(name).AtListIndex(i), "Invalid "+name+" block", err.Error())
			continue
		}
		obj, ok := e.(types.Object)
		if !v.IsFullyKnown() || !ok {
			*unknown = name
			continue
		}
		var m T
		diags.Append(obj.As(ctx, &m, basetypes.ObjectAsOptions{})...)
		out = append(out, m)
	}
	return out
}

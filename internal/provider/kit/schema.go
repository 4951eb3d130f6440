package kit

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func StorageValidators() []validator.String {
	return []validator.String{stringvalidator.RegexMatches(storageID, "must be a storage ID: lowercase letters, digits, '-', '_' and '.', starting with a letter")}
}

// FromSameSlot plans a computed device attribute (a NIC's MAC, a disk's storage) as the prior
// state's value for the device in the same slot. List positions shift when a device is added
// or removed; slots do not. A new device's value stays unknown until PVE assigns it.
type FromSameSlot struct{}

func (FromSameSlot) Description(context.Context) string {
	return "Kept from the device in the same slot once set."
}

func (m FromSameSlot) MarkdownDescription(ctx context.Context) string { return m.Description(ctx) }

func (FromSameSlot) PlanModifyString(ctx context.Context, req planmodifier.StringRequest, resp *planmodifier.StringResponse) {
	if req.State.Raw.IsNull() || !req.PlanValue.IsUnknown() || req.ConfigValue.IsUnknown() {
		return
	}
	steps := req.Path.Steps()
	name, ok := steps[len(steps)-1].(path.PathStepAttributeName)
	if !ok {
		return
	}
	device := req.Path.ParentPath()
	var slot types.String
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, device.AtName("slot"), &slot)...)
	var prior types.List
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, device.ParentPath(), &prior)...)
	if resp.Diagnostics.HasError() || !Known(slot) {
		return
	}
	for _, e := range prior.Elements() {
		attrs := e.(types.Object).Attributes()
		if s, _ := attrs["slot"].(types.String); s.Equal(slot) {
			if v, _ := attrs[string(name)].(types.String); !v.IsNull() {
				resp.PlanValue = v
			}
			return
		}
	}
}

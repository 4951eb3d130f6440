package kit

// Integer attributes a user sets: 2.5 where a whole number is expected is a plan error on the
// attribute, not the framework's "Configuration Read Error ... always an error in the
// provider".

import (
	"context"
	"fmt"
	"math/big"
	"reflect"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/attr/xattr"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// WholeNumberType is the framework's Int64 type, except for a number that is not a 64-bit
// integer: the framework fails to convert it, with an error that blames the provider and
// (in a block) names no attribute; this type converts it to a notWhole value, which fails
// validation on the attribute's path. Whole numbers convert to plain types.Int64 values, so
// models, state and plans are as with the framework's type, and the schema still says number.
type WholeNumberType struct{ basetypes.Int64Type }

// Equal accepts the framework's Int64 type too: whole numbers are values of that type, and
// objects check each attribute's value against the attribute's type.
func (WholeNumberType) Equal(o attr.Type) bool {
	switch o.(type) {
	case WholeNumberType, basetypes.Int64Type:
		return true
	}
	return false
}

func (WholeNumberType) String() string { return "wholeNumberType" }

func (t WholeNumberType) ValueFromTerraform(ctx context.Context, in tftypes.Value) (attr.Value, error) {
	v, err := t.Int64Type.ValueFromTerraform(ctx, in)
	if err == nil {
		return v, nil
	}
	var f *big.Float
	if in.As(&f) != nil || f == nil {
		return nil, err
	}
	return notWhole{f}, nil
}

// notWhole is a configured number that is not a 64-bit integer. The framework validates a
// value before any validator, plan modifier or model sees it, so none ever does.
type notWhole struct{ number *big.Float }

var _ xattr.ValidateableAttribute = notWhole{}

func (notWhole) Type(context.Context) attr.Type { return WholeNumberType{} }

func (v notWhole) ToTerraformValue(context.Context) (tftypes.Value, error) {
	return tftypes.NewValue(tftypes.Number, v.number), nil
}

func (v notWhole) Equal(o attr.Value) bool {
	w, ok := o.(notWhole)
	return ok && v.number.Cmp(w.number) == 0
}

func (notWhole) IsNull() bool     { return false }
func (notWhole) IsUnknown() bool  { return false }
func (v notWhole) String() string { return v.number.Text('g', -1) }

func (v notWhole) ValidateAttribute(_ context.Context, req xattr.ValidateAttributeRequest, resp *xattr.ValidateAttributeResponse) {
	if v.number.IsInt() {
		resp.Diagnostics.AddAttributeError(req.Path, "Number out of range",
			fmt.Sprintf("%s = %s does not fit a 64-bit integer; see the attribute's range in the documentation.", req.Path, v))
		return
	}
	below, _ := v.number.Int(nil) // truncated toward zero
	above := new(big.Int).Add(below, big.NewInt(1))
	if v.number.Sign() < 0 {
		below, above = new(big.Int).Sub(below, big.NewInt(1)), below
	}
	resp.Diagnostics.AddAttributeError(req.Path, "Not a whole number",
		fmt.Sprintf("%s = %s: must be a whole number, e.g. %s or %s.", req.Path, v, below, above))
}

// MarkWholeNumbers gives every settable Int64 attribute of a schema (its Attributes and
// Blocks maps), at any depth of blocks, the whole-number type. The schemas call it last, so
// that an attribute added anywhere is covered. The provider, resource and data source schema
// packages declare the same shapes (attribute and block maps, a NestedObject in list and set
// blocks, Int64Attribute with Optional, Required and CustomType), so one walk by reflection
// serves all three; TestEverySettableIntegerIsWhole checks every schema.
func MarkWholeNumbers(attrs, blocks any) {
	markWholeValues(reflect.ValueOf(attrs), reflect.ValueOf(blocks))
}

func markWholeValues(attrs, blocks reflect.Value) {
	if attrs.Kind() == reflect.Map {
		for _, name := range attrs.MapKeys() {
			a := attrs.MapIndex(name).Elem()
			if a.Type().Name() != "Int64Attribute" || !a.FieldByName("Optional").Bool() && !a.FieldByName("Required").Bool() {
				continue
			}
			whole := reflect.New(a.Type()).Elem()
			whole.Set(a)
			whole.FieldByName("CustomType").Set(reflect.ValueOf(WholeNumberType{}))
			attrs.SetMapIndex(name, whole)
		}
	}
	if blocks.Kind() == reflect.Map {
		for _, name := range blocks.MapKeys() {
			b := blocks.MapIndex(name).Elem()
			if nested := b.FieldByName("NestedObject"); nested.IsValid() {
				b = nested
			}
			markWholeValues(b.FieldByName("Attributes"), b.FieldByName("Blocks"))
		}
	}
}

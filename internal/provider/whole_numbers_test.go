package provider

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/attr/xattr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
)

// Whole numbers (and null, unknown) read as the framework's own Int64 values, so models and
// state do not change; anything else reads as a value whose validation names the attribute.
func TestWholeNumberType(t *testing.T) {
	ctx := context.Background()
	at := path.Root("disk").AtListIndex(0).AtName("size")
	number := func(s string) tftypes.Value {
		f, _, err := big.ParseFloat(s, 10, 512, big.ToNearestEven)
		if err != nil {
			t.Fatal(err)
		}
		return tftypes.NewValue(tftypes.Number, f)
	}
	for _, tc := range []struct {
		in   tftypes.Value
		want attr.Value
	}{
		{number("32"), types.Int64Value(32)},
		{number("-7"), types.Int64Value(-7)},
		{number("9223372036854775807"), types.Int64Value(1<<63 - 1)},
		{tftypes.NewValue(tftypes.Number, nil), types.Int64Null()},
		{tftypes.NewValue(tftypes.Number, tftypes.UnknownValue), types.Int64Unknown()},
	} {
		got, err := kit.WholeNumberType{}.ValueFromTerraform(ctx, tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %#v, %v; want %#v", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, summary, detail string }{
		{"2.5", "Not a whole number", "disk[0].size = 2.5: must be a whole number, e.g. 2 or 3."},
		{"1024.25", "Not a whole number", "disk[0].size = 1024.25: must be a whole number, e.g. 1024 or 1025."},
		{"-0.5", "Not a whole number", "disk[0].size = -0.5: must be a whole number, e.g. -1 or 0."},
		{"-3.5", "Not a whole number", "disk[0].size = -3.5: must be a whole number, e.g. -4 or -3."},
		{"9223372036854775808", "Number out of range", "disk[0].size = 9.223372036854775808e+18 does not fit a 64-bit integer"},
	} {
		v, err := kit.WholeNumberType{}.ValueFromTerraform(ctx, number(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if !(kit.WholeNumberType{}).Equal(v.Type(ctx)) {
			t.Errorf("%s: value of type %s, which objects of the type would refuse", tc.in, v.Type(ctx))
		}
		back, err := v.ToTerraformValue(ctx)
		if err != nil || !back.Equal(number(tc.in)) {
			t.Errorf("%s: reads back as %s, %v", tc.in, back, err)
		}
		va, ok := v.(xattr.ValidateableAttribute)
		if !ok {
			t.Fatalf("%s: %T is not validated", tc.in, v)
		}
		var resp xattr.ValidateAttributeResponse
		va.ValidateAttribute(ctx, xattr.ValidateAttributeRequest{Path: at}, &resp)
		errs := resp.Diagnostics.Errors()
		if len(errs) != 1 || errs[0].Summary() != tc.summary || !strings.HasPrefix(errs[0].Detail(), tc.detail) {
			t.Errorf("%s: %v, want %q: %q", tc.in, resp.Diagnostics, tc.summary, tc.detail)
		}
	}
	if _, err := (kit.WholeNumberType{}).ValueFromTerraform(ctx, tftypes.NewValue(tftypes.String, "2")); err == nil {
		t.Error("a string read as a number")
	}
}

// Every integer attribute a user can set, in the provider's, every resource's and every data
// source's schema, at any depth of blocks, has the whole-number type.
func TestEverySettableIntegerIsWhole(t *testing.T) {
	ctx := context.Background()
	p := New("test")()
	var checked int
	check := func(schema string, typ tftypes.Type, at func(path.Path) (attr.Type, bool)) {
		walkNumbers(typ, path.Empty(), func(p path.Path, collection bool) {
			typ, settable := at(p)
			if collection && settable {
				t.Errorf("%s: %s is a settable collection of numbers: give its elements the whole-number type", schema, p)
			}
			if _, isInt := typ.(basetypes.Int64Typable); isInt && settable {
				checked++
				if _, whole := typ.(kit.WholeNumberType); !whole {
					t.Errorf("%s: %s is a settable integer of type %s, not wholeNumberType", schema, p, typ)
				}
			}
		})
	}
	var ps provider.SchemaResponse
	p.Schema(ctx, provider.SchemaRequest{}, &ps)
	check("provider", ps.Schema.Type().TerraformType(ctx), attrAt(t, "provider", ps.Schema.AttributeAtPath))
	for _, newResource := range p.Resources(ctx) {
		r := newResource()
		var meta resource.MetadataResponse
		r.Metadata(ctx, resource.MetadataRequest{ProviderTypeName: "qemuscheduler"}, &meta)
		var rs resource.SchemaResponse
		r.Schema(ctx, resource.SchemaRequest{}, &rs)
		check(meta.TypeName, rs.Schema.Type().TerraformType(ctx), attrAt(t, meta.TypeName, rs.Schema.AttributeAtPath))
	}
	for _, newDataSource := range p.DataSources(ctx) {
		ds := newDataSource()
		var meta datasource.MetadataResponse
		ds.Metadata(ctx, datasource.MetadataRequest{ProviderTypeName: "qemuscheduler"}, &meta)
		var dss datasource.SchemaResponse
		ds.Schema(ctx, datasource.SchemaRequest{}, &dss)
		check(meta.TypeName, dss.Schema.Type().TerraformType(ctx), attrAt(t, meta.TypeName, dss.Schema.AttributeAtPath))
	}
	// cores, sockets, memory, balloon, vmid, disk size, ... of the resource alone.
	if checked < 20 {
		t.Errorf("only %d settable integers found: the walk misses some", checked)
	}
}

// attrAt looks attributes up in one schema (its AttributeAtPath, whatever the schema
// package): their type, and whether a user sets them.
func attrAt[A interface {
	GetType() attr.Type
	IsOptional() bool
	IsRequired() bool
}](t *testing.T, schema string, lookup func(context.Context, path.Path) (A, diag.Diagnostics)) func(path.Path) (attr.Type, bool) {
	return func(p path.Path) (attr.Type, bool) {
		a, d := lookup(context.Background(), p)
		if d.HasError() {
			t.Fatalf("%s %s: %v", schema, p, d)
		}
		return a.GetType(), a.IsOptional() || a.IsRequired()
	}
}

// walkNumbers calls visit with the path of every number in typ, the first element of a list
// of objects standing for all; a collection of numbers is visited as a whole (of ints is
// true when its elements are numbers), for it is the attribute.
func walkNumbers(typ tftypes.Type, p path.Path, visit func(p path.Path, ofInts bool)) {
	var elem tftypes.Type
	switch typ := typ.(type) {
	case tftypes.Object:
		for name, at := range typ.AttributeTypes {
			walkNumbers(at, p.AtName(name), visit)
		}
		return
	case tftypes.List:
		if _, objects := typ.ElementType.(tftypes.Object); objects {
			walkNumbers(typ.ElementType, p.AtListIndex(0), visit)
			return
		}
		elem = typ.ElementType
	case tftypes.Map:
		elem = typ.ElementType
	case tftypes.Set:
		elem = typ.ElementType
	}
	switch {
	case elem != nil && elem.Is(tftypes.Number):
		visit(p, true)
	case typ.Is(tftypes.Number):
		visit(p, false)
	}
}

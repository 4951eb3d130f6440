package scheduling

import (
	"maps"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	dsschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// ListSpec, stringSpec and int64Spec are the settings of an attribute of a policy block,
// whichever schema package builds it.
type ListSpec struct {
	Required    bool
	Description string
	Validators  []validator.List
}

type StringSpec struct {
	Required    bool
	Description string
	Validators  []validator.String
	// def, when set, is the value a resource plans for the attribute left out (resourceKit), so
	// that a configuration writing it out and one leaving it out plan the same state: the one an
	// import gives.
	def string
}

type Int64Spec struct {
	Description string
	Validators  []validator.Int64
	def         int64 // as stringSpec's
}

// SchemaKit builds the attributes and blocks of one schema package: the data source's and the
// resource's attribute types differ, their settings do not.
type SchemaKit[A, B any] struct {
	List   func(ListSpec) A
	String func(StringSpec) A
	Int64  func(Int64Spec) A
	// StringMap is an optional map of strings; emptyDefault makes a resource plan {} for it left
	// out, as stringSpec's def.
	StringMap func(description string, emptyDefault bool) A
	// Bool is an optional bool.
	Bool func(description string) A
	// Block is a repeatable block of attrs and nested blocks (nil for none).
	Block func(description string, attrs map[string]A, blocks map[string]B) B
	// Single is a block, at most one, of nested blocks.
	Single func(description string, blocks map[string]B) B
}

var dataSourceKit = SchemaKit[dsschema.Attribute, dsschema.Block]{
	List: func(s ListSpec) dsschema.Attribute {
		return dsschema.ListAttribute{ElementType: types.StringType, Required: s.Required, Optional: !s.Required, Description: s.Description, Validators: s.Validators}
	},
	String: func(s StringSpec) dsschema.Attribute {
		return dsschema.StringAttribute{Required: s.Required, Optional: !s.Required, Description: s.Description, Validators: s.Validators}
	},
	Int64: func(s Int64Spec) dsschema.Attribute {
		return dsschema.Int64Attribute{Optional: true, Description: s.Description, Validators: s.Validators}
	},
	StringMap: func(description string, _ bool) dsschema.Attribute {
		return dsschema.MapAttribute{Optional: true, ElementType: types.StringType, Description: description}
	},
	Bool: func(description string) dsschema.Attribute {
		return dsschema.BoolAttribute{Optional: true, Description: description}
	},
	Block: func(description string, attrs map[string]dsschema.Attribute, blocks map[string]dsschema.Block) dsschema.Block {
		return dsschema.ListNestedBlock{Description: description, NestedObject: dsschema.NestedBlockObject{Attributes: attrs, Blocks: blocks}}
	},
	Single: func(description string, blocks map[string]dsschema.Block) dsschema.Block {
		return dsschema.SingleNestedBlock{Description: description, Blocks: blocks}
	},
}

var resourceKit = SchemaKit[rschema.Attribute, rschema.Block]{
	List: func(s ListSpec) rschema.Attribute {
		return rschema.ListAttribute{ElementType: types.StringType, Required: s.Required, Optional: !s.Required, Description: s.Description, Validators: s.Validators}
	},
	String: func(s StringSpec) rschema.Attribute {
		a := rschema.StringAttribute{Required: s.Required, Optional: !s.Required, Description: s.Description, Validators: s.Validators}
		if s.def != "" {
			a.Computed, a.Default = true, stringdefault.StaticString(s.def)
		}
		return a
	},
	Int64: func(s Int64Spec) rschema.Attribute {
		a := rschema.Int64Attribute{Optional: true, Description: s.Description, Validators: s.Validators}
		if s.def != 0 {
			a.Computed, a.Default = true, int64default.StaticInt64(s.def)
		}
		return a
	},
	StringMap: func(description string, emptyDefault bool) rschema.Attribute {
		a := rschema.MapAttribute{Optional: true, ElementType: types.StringType, Description: description}
		if emptyDefault {
			a.Computed, a.Default = true, mapdefault.StaticValue(types.MapValueMust(types.StringType, map[string]attr.Value{}))
		}
		return a
	},
	Bool: func(description string) rschema.Attribute {
		return rschema.BoolAttribute{Optional: true, Description: description}
	},
	Block: func(description string, attrs map[string]rschema.Attribute, blocks map[string]rschema.Block) rschema.Block {
		return rschema.ListNestedBlock{Description: description, NestedObject: rschema.NestedBlockObject{Attributes: attrs, Blocks: blocks}}
	},
	Single: func(description string, blocks map[string]rschema.Block) rschema.Block {
		return rschema.SingleNestedBlock{Description: description, Blocks: blocks}
	},
}

// addScheduling adds to a schema's attributes and blocks what the data sources and the
// resource share: profile, annotations, plugin configuration, node selector and the policy
// blocks.
func addScheduling[A, B any](k SchemaKit[A, B], attrs map[string]A, blocks *map[string]B) {
	attrs["profile"] = k.String(StringSpec{Description: profileAttrDescription, Validators: profileValidators(), def: DefaultProfile})
	attrs["annotations"] = k.StringMap(annotationsDescription(), true)
	attrs["plugin_config_yaml"] = k.String(StringSpec{Description: PluginConfigYAMLDescription})
	attrs["node_selector"] = k.StringMap(nodeSelectorDescription, true)
	if *blocks == nil {
		*blocks = map[string]B{}
	}
	maps.Copy(*blocks, policyBlocks(k))
	(*blocks)["plugin_config"] = PluginConfigBlock(k)
}

// policyBlocks are the repeatable policy blocks of the data sources and the resource.
func policyBlocks[A, B any](k SchemaKit[A, B]) map[string]B {
	return map[string]B{
		"node_affinity":    k.Block(nodeAffinityDescription, nodeAffinityAttributes(k), nodeAffinityBlocks(k)),
		"toleration":       k.Block(tolerationDescription, TolerationAttributes(k), nil),
		"vm_affinity":      k.Block(vmAffinityDescription, groupTermAttributes(k), nil),
		"vm_anti_affinity": k.Block(vmAntiAffinityDescription, groupTermAttributes(k), nil),
		"topology_spread":  k.Block(topologySpreadDescription, SpreadAttributes(k), nil),
	}
}

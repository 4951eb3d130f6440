package provider

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

// listSpec, stringSpec and int64Spec are the settings of an attribute of a policy block,
// whichever schema package builds it.
type listSpec struct {
	required    bool
	description string
	validators  []validator.List
}

type stringSpec struct {
	required    bool
	description string
	validators  []validator.String
	// def, when set, is the value a resource plans for the attribute left out (resourceKit), so
	// that a configuration writing it out and one leaving it out plan the same state: the one an
	// import gives.
	def string
}

type int64Spec struct {
	description string
	validators  []validator.Int64
	def         int64 // as stringSpec's
}

// schemaKit builds the attributes and blocks of one schema package: the data source's and the
// resource's attribute types differ, their settings do not.
type schemaKit[A, B any] struct {
	list func(listSpec) A
	str  func(stringSpec) A
	i64  func(int64Spec) A
	// strMap is an optional map of strings; emptyDefault makes a resource plan {} for it left
	// out, as stringSpec's def.
	strMap func(description string, emptyDefault bool) A
	// boolean is an optional bool.
	boolean func(description string) A
	// block is a repeatable block of attrs and nested blocks (nil for none).
	block func(description string, attrs map[string]A, blocks map[string]B) B
	// single is a block, at most one, of nested blocks.
	single func(description string, blocks map[string]B) B
}

var dataSourceKit = schemaKit[dsschema.Attribute, dsschema.Block]{
	list: func(s listSpec) dsschema.Attribute {
		return dsschema.ListAttribute{ElementType: types.StringType, Required: s.required, Optional: !s.required, Description: s.description, Validators: s.validators}
	},
	str: func(s stringSpec) dsschema.Attribute {
		return dsschema.StringAttribute{Required: s.required, Optional: !s.required, Description: s.description, Validators: s.validators}
	},
	i64: func(s int64Spec) dsschema.Attribute {
		return dsschema.Int64Attribute{Optional: true, Description: s.description, Validators: s.validators}
	},
	strMap: func(description string, _ bool) dsschema.Attribute {
		return dsschema.MapAttribute{Optional: true, ElementType: types.StringType, Description: description}
	},
	boolean: func(description string) dsschema.Attribute {
		return dsschema.BoolAttribute{Optional: true, Description: description}
	},
	block: func(description string, attrs map[string]dsschema.Attribute, blocks map[string]dsschema.Block) dsschema.Block {
		return dsschema.ListNestedBlock{Description: description, NestedObject: dsschema.NestedBlockObject{Attributes: attrs, Blocks: blocks}}
	},
	single: func(description string, blocks map[string]dsschema.Block) dsschema.Block {
		return dsschema.SingleNestedBlock{Description: description, Blocks: blocks}
	},
}

var resourceKit = schemaKit[rschema.Attribute, rschema.Block]{
	list: func(s listSpec) rschema.Attribute {
		return rschema.ListAttribute{ElementType: types.StringType, Required: s.required, Optional: !s.required, Description: s.description, Validators: s.validators}
	},
	str: func(s stringSpec) rschema.Attribute {
		a := rschema.StringAttribute{Required: s.required, Optional: !s.required, Description: s.description, Validators: s.validators}
		if s.def != "" {
			a.Computed, a.Default = true, stringdefault.StaticString(s.def)
		}
		return a
	},
	i64: func(s int64Spec) rschema.Attribute {
		a := rschema.Int64Attribute{Optional: true, Description: s.description, Validators: s.validators}
		if s.def != 0 {
			a.Computed, a.Default = true, int64default.StaticInt64(s.def)
		}
		return a
	},
	strMap: func(description string, emptyDefault bool) rschema.Attribute {
		a := rschema.MapAttribute{Optional: true, ElementType: types.StringType, Description: description}
		if emptyDefault {
			a.Computed, a.Default = true, mapdefault.StaticValue(types.MapValueMust(types.StringType, map[string]attr.Value{}))
		}
		return a
	},
	boolean: func(description string) rschema.Attribute {
		return rschema.BoolAttribute{Optional: true, Description: description}
	},
	block: func(description string, attrs map[string]rschema.Attribute, blocks map[string]rschema.Block) rschema.Block {
		return rschema.ListNestedBlock{Description: description, NestedObject: rschema.NestedBlockObject{Attributes: attrs, Blocks: blocks}}
	},
	single: func(description string, blocks map[string]rschema.Block) rschema.Block {
		return rschema.SingleNestedBlock{Description: description, Blocks: blocks}
	},
}

// addScheduling adds to a schema's attributes and blocks what the data sources and the
// resource share: profile, annotations, plugin configuration, node selector and the policy
// blocks.
func addScheduling[A, B any](k schemaKit[A, B], attrs map[string]A, blocks *map[string]B) {
	attrs["profile"] = k.str(stringSpec{description: profileAttrDescription, validators: profileValidators(), def: defaultProfile})
	attrs["annotations"] = k.strMap(annotationsDescription(), true)
	attrs["plugin_config_yaml"] = k.str(stringSpec{description: pluginConfigYAMLDescription})
	attrs["node_selector"] = k.strMap(nodeSelectorDescription, true)
	if *blocks == nil {
		*blocks = map[string]B{}
	}
	maps.Copy(*blocks, policyBlocks(k))
	(*blocks)["plugin_config"] = pluginConfigBlock(k)
}

// policyBlocks are the repeatable policy blocks of the data sources and the resource.
func policyBlocks[A, B any](k schemaKit[A, B]) map[string]B {
	return map[string]B{
		"node_affinity":    k.block(nodeAffinityDescription, nodeAffinityAttributes(k), nodeAffinityBlocks(k)),
		"toleration":       k.block(tolerationDescription, tolerationAttributes(k), nil),
		"vm_affinity":      k.block(vmAffinityDescription, groupTermAttributes(k), nil),
		"vm_anti_affinity": k.block(vmAntiAffinityDescription, groupTermAttributes(k), nil),
		"topology_spread":  k.block(topologySpreadDescription, spreadAttributes(k), nil),
	}
}

package provider

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// placeholder matches descriptions that were never written.
var placeholder = regexp.MustCompile(`(?i)\b(todo|fixme|tbd|xxx)\b`)

// TestSchemaDescriptions checks that every attribute and block of the provider, its data
// sources and its resource has a description, since docs/ is generated from them: an empty
// one renders as a bare name in the attribute reference.
func TestSchemaDescriptions(t *testing.T) {
	server, err := providerserver.NewProtocol6WithError(New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := server.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range resp.Diagnostics {
		t.Errorf("schema: %s: %s", d.Summary, d.Detail)
	}
	var missing []string
	check := func(path, description string) {
		if strings.TrimSpace(description) == "" || placeholder.MatchString(description) {
			missing = append(missing, path)
		}
	}
	var walkAttributes func(path string, attrs []*tfprotov6.SchemaAttribute)
	walkAttributes = func(path string, attrs []*tfprotov6.SchemaAttribute) {
		for _, a := range attrs {
			check(path+"."+a.Name, a.Description)
			if a.NestedType != nil {
				walkAttributes(path+"."+a.Name, a.NestedType.Attributes)
			}
		}
	}
	var walk func(path string, b *tfprotov6.SchemaBlock)
	walk = func(path string, b *tfprotov6.SchemaBlock) {
		walkAttributes(path, b.Attributes)
		for _, nb := range b.BlockTypes {
			check(path+"."+nb.TypeName, nb.Block.Description)
			walk(path+"."+nb.TypeName, nb.Block)
		}
	}
	check("provider", resp.Provider.Block.Description)
	walk("provider", resp.Provider.Block)
	for name, s := range resp.DataSourceSchemas {
		check("data."+name, s.Block.Description)
		walk("data."+name, s.Block)
	}
	for name, s := range resp.ResourceSchemas {
		check(name, s.Block.Description)
		walk(name, s.Block)
	}
	if len(missing) > 0 {
		t.Errorf("without a description (or with a placeholder) in docs/: %s", strings.Join(missing, ", "))
	}
}

package provider

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// layers are the provider's packages, bottom first, as doc.go lists them: each may import only
// packages before it, so that a newcomer can tell which file may use which.
var layers = []string{
	"internal/changeset",
	"internal/provider/kit",
	"internal/provider/scheduling",
	"internal/provider/config",
	"internal/provider/vmresource/firmware",
	"internal/provider/vmresource/network",
	"internal/provider/vmresource/disk",
	"internal/provider/vmresource/cloudinit",
	"internal/provider/vmresource",
	"internal/provider/datasources",
	"internal/provider",
}

const module = "github.com/qemuscheduler/terraform-provider-qemuscheduler/"

// Imports go one way (tests included), every package under internal/provider is in layers,
// and no package there exceeds 4,000 source lines nor a source file 700.
func TestPackagesImportOneWay(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(filepath.Join(root, "internal", "provider"), func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if matches, _ := filepath.Glob(filepath.Join(path, "*.go")); len(matches) > 0 && !slices.Contains(layers, filepath.ToSlash(rel)) {
			t.Errorf("%s is not in layers (and doc.go's list): place it", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, pkg := range layers {
		files, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(pkg), "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s has no Go files (%v)", pkg, err)
		}
		lines := 0
		for _, file := range files {
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, spec := range f.Imports {
				imported, _ := strconv.Unquote(spec.Path.Value)
				j := slices.Index(layers, strings.TrimPrefix(imported, module))
				if j >= i {
					t.Errorf("%s imports %s, which is not below it in layers", file, imported)
				}
			}
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			n := bytes.Count(src, []byte("\n"))
			if n > 700 {
				t.Errorf("%s has %d lines, more than 700: split it", file, n)
			}
			lines += n
		}
		if lines > 4000 {
			t.Errorf("%s has %d source lines, more than 4,000: split it", pkg, lines)
		}
	}
}

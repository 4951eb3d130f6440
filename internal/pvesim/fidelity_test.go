package pvesim_test

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// recordedBodies extracts the JSON bodies of go-proxmox's recorded PVE responses (its gock
// mocks, Go string literals) keyed by the GET path pattern, skipping mocks that match on
// query parameters.
func recordedBodies(t *testing.T, version string) map[string]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/luthermonson/go-proxmox").Output()
	dir := filepath.Join(strings.TrimSpace(string(out)), "tests", "mocks", version)
	if err != nil || !isDir(dir) {
		t.Skipf("go-proxmox recorded responses not found (%v); run `go mod download`", err)
	}
	bodies := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range files {
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "JSON" {
				return true
			}
			path, params := chain(sel.X)
			if body, ok := literal(call.Args[0]); ok && path != "" && !params {
				if _, seen := bodies[path]; !seen {
					bodies[path] = body
				}
			}
			return false
		})
	}
	return bodies
}

// chain walks gock.New(..).Get("path").MatchParams(..).Reply(200) back to the Get path.
func chain(e ast.Expr) (path string, params bool) {
	for {
		call, ok := e.(*ast.CallExpr)
		if !ok {
			return path, params
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return path, params
		}
		switch sel.Sel.Name {
		case "MatchParams", "MatchParam":
			params = true
		case "Get":
			if len(call.Args) == 1 {
				path, _ = literal(call.Args[0])
			}
		}
		e = sel.X
	}
}

func literal(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// rows flattens a {"data": ...} body into objects, grouped by their "type" field when they
// have one (cluster resources mix nodes, guests and storages).
func rows(t *testing.T, body []byte) map[string][]map[string]any {
	t.Helper()
	var env struct {
		Data any `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	out := map[string][]map[string]any{}
	add := func(v any) {
		if m, ok := v.(map[string]any); ok {
			typ, _ := m["type"].(string)
			out[typ] = append(out[typ], m)
		}
	}
	if list, ok := env.Data.([]any); ok {
		for _, v := range list {
			add(v)
		}
	} else {
		add(env.Data)
		if s, ok := env.Data.(string); ok {
			out["scalar"] = []map[string]any{{"data": s}}
		}
	}
	return out
}

func kind(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return "null"
}

// TestFidelityWithRecordedPVE compares the simulator's answers with PVE 7, 8 and 9 responses
// recorded in go-proxmox: every field both send must have the same JSON type, and the recorded
// fields the simulator leaves out are listed.
func TestFidelityWithRecordedPVE(t *testing.T) {
	endpoints := []struct{ recorded, sim string }{
		{"^/version$", "/version"},
		{"^/cluster/resources$", "/cluster/resources"},
		{"/cluster/nextid$", "/cluster/nextid"},
		{"^/nodes$", "/nodes"},
		{"^/nodes/node1/status$", "/nodes/pve1/status"},
		{"^/nodes/node1/storage$", "/nodes/pve1/storage"},
		{"^/nodes/node1/qemu$", "/nodes/pve1/qemu"},
		{"^/nodes/node1/qemu/101/status/current$", "/nodes/pve1/qemu/100/status/current"},
		{"^/nodes/node1/qemu/100/config$", "/nodes/pve1/qemu/9000/config"},
		{"^/pools$", "/pools"},
	}
	s := newLabServer(t)
	for _, version := range []string{"pve7x", "pve8x", "pve9x"} {
		recorded := recordedBodies(t, version)
		compared := 0
		for _, ep := range endpoints {
			body, ok := recorded[ep.recorded]
			if !ok {
				continue
			}
			compared++
			want := rows(t, []byte(body))
			got := rows(t, simGet(t, s.url, s.token, ep.sim))
			for typ, simRows := range got {
				recRows := want[typ]
				if len(recRows) == 0 {
					continue
				}
				recTypes, simTypes := fieldKinds(recRows), fieldKinds(simRows)
				var missing []string
				for field, rk := range recTypes {
					sk, present := simTypes[field]
					switch {
					case !present:
						missing = append(missing, field)
					case rk != sk && rk != "null" && sk != "null" && knownDivergence[field] == "":
						t.Errorf("%s %s (type %q): field %q is a %s in the simulator, a %s in recorded PVE", version, ep.sim, typ, field, sk, rk)
					}
				}
				sort.Strings(missing)
				if len(missing) > 0 {
					t.Logf("%s %s (type %q): recorded fields the simulator omits: %s", version, ep.sim, typ, strings.Join(missing, ", "))
				}
			}
		}
		if compared < 5 {
			t.Errorf("%s: only %d endpoints found in the recorded responses", version, compared)
		}
	}
}

// knownDivergence lists fields where the recorded mocks (partly hand-written) differ from
// what current PVE sends, and why the simulator follows PVE.
var knownDivergence = map[string]string{
	"memory": "qemu-server 8.0.8 made memory a property string, so config GETs return \"2048\"; the mocks predate it",
}

func fieldKinds(rows []map[string]any) map[string]string {
	out := map[string]string{}
	for _, r := range rows {
		for k, v := range r {
			if cur, ok := out[k]; !ok || cur == "null" {
				out[k] = kind(v)
			}
		}
	}
	return out
}

type labServer struct{ url, token string }

func newLabServer(t *testing.T) labServer {
	s := pvesimServer(t)
	return labServer{url: s.URL(), token: s.APIToken()}
}

func simGet(t *testing.T, base, token, path string) []byte {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, base+"/api2/json"+path, nil)
	req.Header.Set("Authorization", "PVEAPIToken="+token)
	res, err := insecureClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %s", path, res.Status)
	}
	return body
}

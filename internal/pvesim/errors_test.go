package pvesim_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// Errors come back in PVE's shapes: the message in the status line (which is all go-proxmox
// reports for 500 and 501) and in the body, 400 with an errors map, 401 and 595 with an empty
// body.
func TestErrorShapes(t *testing.T) {
	s, a := lab(t)
	noAuth := newAPI(t, s)
	noAuth.header = http.Header{}
	badToken := newAPI(t, s)
	badToken.header = http.Header{"Authorization": {"PVEAPIToken=root@pam!sim=wrong"}}

	tests := []struct {
		name       string
		call       func() reply
		wantStatus string
		wantErrors map[string]string // 400 only
		emptyBody  bool
	}{
		{"unknown path", func() reply { return a.get("/nodes/pve1/hardware/pci") },
			"501 Method 'GET /nodes/pve1/hardware/pci' not implemented", nil, false},
		{"unknown method", func() reply { return a.form(http.MethodPatch, "/version", nil) },
			"501 Method 'PATCH /version' not implemented", nil, false},
		{"outside /api2/json", func() reply {
			req, _ := http.NewRequest(http.MethodGet, s.URL()+"/api2/xml/version", nil)
			return a.do(req)
		}, "501 no such uri", nil, false},
		{"GET with a body", func() reply { return a.json(http.MethodGet, "/version", map[string]any{"x": 1}) },
			"501 Unexpected content for method 'GET'", nil, false},
		{"missing VM", func() reply { return a.get("/nodes/pve1/qemu/999/config") },
			"500 Configuration file 'nodes/pve1/qemu-server/999.conf' does not exist", nil, false},
		{"VM on another node", func() reply { return a.get("/nodes/pve2/qemu/100/status/current") },
			"500 Configuration file 'nodes/pve2/qemu-server/100.conf' does not exist", nil, false},
		{"unknown node", func() reply { return a.get("/nodes/nope/status") },
			"500 hostname lookup 'nope' failed - failed to get address info for: nope: Name or service not known", nil, false},
		{"offline node", func() reply { return a.get("/nodes/pve4/qemu") },
			"595 Errors during connection establishment, proxy handler: No route to host", nil, true},
		{"nextid taken", func() reply { return a.get("/cluster/nextid?vmid=100") },
			"400 Parameter verification failed.", map[string]string{"vmid": "VM 100 already exists"}, false},
		{"nextid invalid", func() reply { return a.get("/cluster/nextid?vmid=99") },
			"400 Parameter verification failed.", map[string]string{"vmid": "invalid format - value does not look like a valid VM ID"}, false},
		{"resources type", func() reply { return a.get("/cluster/resources?type=qemu") },
			"400 Parameter verification failed.", map[string]string{"type": "value 'qemu' does not have a value in the enumeration 'vm, storage, node, sdn'"}, false},
		{"create without vmid", func() reply { return a.form(http.MethodPost, "/nodes/pve1/qemu", url.Values{"name": {"x"}}) },
			"400 Parameter verification failed.", map[string]string{"vmid": "property is missing and it is not optional"}, false},
		{"conflicting path parameter", func() reply {
			return a.form(http.MethodPost, "/nodes/pve2/qemu/102/config", url.Values{"vmid": {"103"}, "cores": {"2"}})
		}, "400 Parameter verification failed.", map[string]string{"vmid": "duplicate parameter (already defined in URI) with conflicting values!"}, false},
		{"pool missing", func() reply {
			return a.form(http.MethodPost, "/nodes/pve1/qemu", url.Values{"vmid": {"150"}, "pool": {"nope"}})
		}, "403 Permission check failed (pool 'nope' does not exist)", nil, false},
		{"no credentials", func() reply { return noAuth.get("/version") }, "401 No ticket", nil, true},
		{"wrong token", func() reply { return badToken.get("/version") }, "401 authentication failure", nil, true},
		{"create on a taken id", func() reply { return a.form(http.MethodPost, "/nodes/pve2/qemu", url.Values{"vmid": {"100"}}) },
			"500 unable to create VM 100 - VM 100 already exists on node 'pve1'", nil, false},
		{"destroy a running VM", func() reply { return a.form(http.MethodDelete, "/nodes/pve1/qemu/100", nil) },
			"500 VM 100 is running - destroy failed", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.call()
			if r.status != tt.wantStatus {
				t.Fatalf("status %q, want %q", r.status, tt.wantStatus)
			}
			if tt.emptyBody {
				if len(r.body) != 0 {
					t.Fatalf("body %q, want none", r.body)
				}
				return
			}
			var env map[string]json.RawMessage
			_ = json.Unmarshal(r.body, &env)
			if string(env["data"]) != "null" {
				t.Errorf("body %s: want data null", r.body)
			}
			if tt.wantErrors != nil {
				for k, v := range tt.wantErrors {
					if r.env.Errors[k] != v {
						t.Errorf("errors %v, want %s: %q", r.env.Errors, k, v)
					}
				}
				return
			}
			var msg string
			_ = json.Unmarshal(env["message"], &msg)
			_, reason, _ := strings.Cut(tt.wantStatus, " ")
			if msg != reason+"\n" {
				t.Errorf("body message %q, want %q", msg, reason+"\n")
			}
		})
	}
}

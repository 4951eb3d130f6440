package pvesim_test

import (
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// A write without parameters: PVE 7+ takes a JSON body of null as none, PVE 6 and strict
// proxies refuse it, and every version refuses an empty body announced as JSON. No body at
// all is fine everywhere.
func TestJSONBodiesOfWritesWithoutParameters(t *testing.T) {
	const start = "/nodes/pve3/qemu/103/status/start"
	send := func(a *api, body string, contentType string) reply {
		t.Helper()
		var req *http.Request
		var err error
		if body == "" && contentType == "" {
			req, err = http.NewRequest(http.MethodPost, a.s.URL()+"/api2/json"+start, nil)
		} else {
			req, err = http.NewRequest(http.MethodPost, a.s.URL()+"/api2/json"+start, strings.NewReader(body))
		}
		if err != nil {
			t.Fatal(err)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		return a.do(req)
	}
	stop := func(a *api) { a.task(a.form(http.MethodPost, "/nodes/pve3/qemu/103/status/stop", nil)) }

	_, tolerant := lab(t)
	if exit := tolerant.task(send(tolerant, "null", "application/json")); exit != "OK" {
		t.Fatalf("PVE 7+: start with a null body: %s", exit)
	}
	stop(tolerant)
	if r := send(tolerant, "", "application/json"); r.code != http.StatusInternalServerError || !strings.Contains(r.status, "malformed JSON string") {
		t.Fatalf("empty JSON body: %s", r.status)
	}

	_, strict := lab(t, pvesim.WithStrictJSON())
	if r := send(strict, "null", "application/json"); r.code != http.StatusInternalServerError || !strings.Contains(r.status, "JSON text must be an object or array") {
		t.Fatalf("PVE 6: start with a null body: %s", r.status)
	}
	if exit := strict.task(send(strict, "", "")); exit != "OK" {
		t.Fatalf("PVE 6: start without a body: %s", exit)
	}
	stop(strict)
	if exit := strict.task(send(strict, `{}`, "application/json")); exit != "OK" {
		t.Fatalf("PVE 6: start with an object body: %s", exit)
	}
}

// proxmox-go, the client of CAPPX's qemu-scheduler, sends every request as application/json,
// GET and DELETE without a body. pve-http-server decodes a body only for PUT and POST
// (extract_params), so those are plain requests, and a body it is not told the length of
// (chunked) is never read for them either; one with a Content-Length is refused before that
// (TestErrorShapes, "GET with a body").
func TestGETAndDELETEBodiesAreNoParameters(t *testing.T) {
	s, a := lab(t)
	send := func(method, path string, body io.Reader) reply {
		t.Helper()
		req, err := http.NewRequest(method, s.URL()+"/api2/json"+path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		return a.do(req)
	}
	// A reader whose length net/http cannot know goes out chunked, without Content-Length.
	chunked := func(body string) io.Reader { return io.MultiReader(strings.NewReader(body)) }
	hasNodeRows := func(r reply) bool {
		return slices.ContainsFunc(a.ok(r).list(), func(row map[string]any) bool { return row["type"] == "node" })
	}

	if r := send(http.MethodGet, "/cluster/resources", nil); !hasNodeRows(r) {
		t.Errorf("GET as proxmox-go sends it: %s %s", r.status, r.body)
	}
	if r := send(http.MethodGet, "/cluster/resources", chunked(`{"type":"vm"}`)); !hasNodeRows(r) {
		t.Errorf("GET with a chunked JSON body: the body's type filter was applied: %s", r.body)
	}
	if exit := a.task(send(http.MethodDelete, "/nodes/pve3/qemu/103", nil)); exit != "OK" {
		t.Errorf("DELETE as proxmox-go sends it: %s", exit)
	}
	if _, found := s.Guest(103); found {
		t.Error("VM 103 is still there after its DELETE")
	}
	a.ok(a.form(http.MethodPost, "/cluster/ha/groups", url.Values{"group": {"g1"}, "nodes": {"pve1"}}))
	// Group deletion takes no parameter: a decoded body would be refused with a 400.
	a.ok(send(http.MethodDelete, "/cluster/ha/groups/g1", chunked(`{"bogus":1}`)))
	if r := a.get("/cluster/ha/groups/g1"); r.code != http.StatusInternalServerError {
		t.Errorf("group g1 after its DELETE: %s", r.status)
	}
}

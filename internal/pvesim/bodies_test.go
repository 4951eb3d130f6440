package pvesim_test

import (
	"net/http"
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

package pvesim_test

import (
	"net/http"
	"net/url"
	"testing"
)

func TestZZProbe(t *testing.T) {
	_, a := lab(t)
	for _, c := range []struct {
		m, p string
		v    url.Values
	}{
		{"POST", "/cluster/ha/resources", url.Values{"sid": {"vm:100"}, "type": {"vm"}, "state": {"started"}, "max_restart": {"1"}, "max_relocate": {"1"}, "comment": {"x"}}},
		{"GET", "/cluster/ha/resources/vm:100", nil},
		{"PUT", "/cluster/ha/resources/vm:100", url.Values{"state": {"stopped"}, "delete": {"comment"}}},
		{"GET", "/cluster/ha/resources?type=vm", nil},
		{"DELETE", "/cluster/ha/resources/vm:100", nil},
		{"POST", "/nodes/pve1/qemu/100/status/start", url.Values{"timeout": {"300"}}},
		{"POST", "/nodes/pve1/qemu/100/status/reboot", url.Values{"timeout": {"300"}}},
		{"POST", "/nodes/pve1/qemu/100/status/shutdown", url.Values{"forceStop": {"1"}, "timeout": {"300"}}},
		{"POST", "/nodes/pve1/qemu/100/status/stop", nil},
		{"GET", "/cluster/resources?type=vm", nil},
		{"GET", "/cluster/nextid", nil},
		{"GET", "/nodes/pve1/qemu", nil},
		{"GET", "/nodes/pve1/qemu/100/status/current", nil},
		{"PUT", "/nodes/pve1/qemu/100/cloudinit", nil},
		{"GET", "/nodes/pve1/qemu/100/agent/network-get-interfaces", nil},
		{"GET", "/nodes/pve1/storage/ceph/status", nil},
		{"GET", "/nodes/pve1/storage", url.Values{"content": {"images"}}},
		{"GET", "/nodes/pve1/storage/local/content", url.Values{"content": {"iso"}}},
		{"GET", "/storage", nil},
		{"GET", "/nodes", nil},
		{"GET", "/nodes/pve1/network", nil},
		{"GET", "/nodes/pve1/hardware/pci", nil},
		{"GET", "/cluster/mapping/pci", nil},
		{"GET", "/pools", nil},
		{"GET", "/nodes/pve1/qemu/100/pending", nil},
		{"GET", "/nodes/pve1/qemu/100/firewall/options", nil},
		{"GET", "/access/permissions", nil},
		{"GET", "/nodes/pve1/capabilities/qemu/cpu", nil},
		{"GET", "/nodes/pve1/capabilities/qemu/machines", nil},
	} {
		var r reply
		switch c.m {
		case "GET":
			r = a.form(http.MethodGet, c.p, c.v)
		default:
			r = a.form(c.m, c.p, c.v)
		}
		body := string(r.body)
		if len(body) > 200 {
			body = body[:200]
		}
		t.Logf("%s %s %v -> %s %s", c.m, c.p, c.v, r.status, body)
	}
}

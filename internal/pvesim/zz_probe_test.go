package pvesim_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

func TestZZProbe(t *testing.T) {
	s := pvesim.NewTestServer(t, pvesim.LoadTestCluster(t, "../../examples/lab/cluster.yaml"))
	a := newAPI(t, s)
	t.Log(a.task(a.form(http.MethodPost, "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"300"}, "full": {"1"}, "storage": {"local-lvm"}})))
	t.Log(s.MustGuest(t, 300).Config)
	r := a.form(http.MethodPost, "/nodes/pve1/qemu/300/migrate", url.Values{"target": {"pve2"}, "with-local-disks": {"1"}, "targetstorage": {"local-lvm"}})
	t.Log(r.status, string(r.body))
	if r.code == 200 {
		t.Log(a.task(r))
	}
	g := s.MustGuest(t, 300)
	t.Log(g.Node, g.Config)
	t.Log(a.volumes("pve2", "local-lvm"))
}

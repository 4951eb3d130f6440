package proxmox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

var sentinels = []error{ErrNotFound, ErrAlreadyExists, ErrUnauthorized, ErrForbidden, ErrNodeOffline, ErrTransient, ErrTaskFailed}

// assertKind checks that err matches want (nil: no sentinel) and no other sentinel.
func assertKind(t *testing.T, name string, err, want error) {
	t.Helper()
	for _, s := range sentinels {
		if got := errors.Is(err, s); got != (s == want) {
			t.Errorf("%s: errors.Is(%v, %v) = %v", name, err, s, got)
		}
	}
}

func TestClassify(t *testing.T) {
	netErr := &url.Error{Op: "Post", URL: "https://pve:8006/api2/json/nodes/pve1/qemu", Err: io.ErrUnexpectedEOF}
	badRequest := errors.New(`bad request: 400 Parameter verification failed. - {"foo":"property is not defined in schema and the schema does not allow additional properties","cores":"type check ('integer') failed - got 'x'"}`)
	tests := []struct {
		name    string
		status  int
		reason  string
		err     error
		want    error
		message string
	}{
		{"bad credentials", 401, "authentication failure", errors.New("not authorized to access endpoint"), ErrUnauthorized, "authentication failure: check api_token, or username and password"},
		{"missing permission", 403, "Permission check failed (/vms/150, VM.Allocate)", errors.New("not authorized"), ErrForbidden, "Permission check failed (/vms/150, VM.Allocate)"},
		{"offline node", 595, "Errors during connection establishment, proxy handler: No route to host", errors.New("unexpected end of JSON input"), ErrNodeOffline, "node is offline or unreachable (Errors during connection establishment, proxy handler: No route to host)"},
		{"no config", 500, "Configuration file 'nodes/pve1/qemu-server/100.conf' does not exist", errors.New("500 Configuration file..."), ErrNotFound, "Configuration file 'nodes/pve1/qemu-server/100.conf' does not exist"},
		{"404", 404, "Not Found", nil, ErrNotFound, "Not Found"},
		{"vmid taken", 500, "unable to create VM 100 - VM 100 already exists on node 'pve1'", errors.New("500 ..."), ErrAlreadyExists, "VM 100 already exists on node 'pve1'"},
		{"clone target taken", 500, "unable to create VM 101: config file already exists", errors.New("500 ..."), ErrAlreadyExists, "config file already exists"},
		{"proxy 502", 502, "Bad Gateway", nil, ErrTransient, "Bad Gateway"},
		{"busy 503", 503, "Service Unavailable", errors.New("unexpected end of JSON input"), ErrTransient, "Service Unavailable"},
		{"gateway timeout", 504, "Gateway Timeout", nil, ErrTransient, "Gateway Timeout"},
		{"rate limited", 429, "Too Many Requests", nil, ErrTransient, "Too Many Requests"},
		{"lock timeout", 500, "unable to create VM 100 - can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout", errors.New("500 ..."), ErrTransient, "can't lock file"},
		{"cfs lock", 500, "cfs-lock 'file-replication_cfg' error: got lock request timeout", errors.New("500 ..."), ErrTransient, "cfs-lock"},
		{"lost answer", 0, "", netErr, ErrTransient, "unexpected EOF"},
		{"cancelled", 0, "", &url.Error{Op: "Get", URL: "https://pve", Err: context.Canceled}, nil, "context canceled"},
		{"running VM", 500, "VM 100 is running - destroy failed", errors.New("500 ..."), nil, "VM 100 is running - destroy failed"},
		{"bad parameters", 400, "Parameter verification failed.", badRequest, nil,
			"Parameter verification failed: cores: type check ('integer') failed - got 'x'; foo: property is not defined in schema"},
		{"2xx body not JSON", 200, "OK", errors.New("invalid character '<' looking for beginning of value"), nil, "invalid character '<'"},
	}
	for _, tt := range tests {
		err := classify("do it", tt.status, tt.reason, tt.err)
		assertKind(t, tt.name, err, tt.want)
		if !strings.Contains(err.Error(), tt.message) || !strings.HasPrefix(err.Error(), "do it: ") {
			t.Errorf("%s: message %q, want it to start with the operation and hold %q", tt.name, err, tt.message)
		}
		var apiErr *APIError
		if !errors.As(err, &apiErr) || apiErr.Status != tt.status {
			t.Errorf("%s: %#v is not an *APIError with status %d", tt.name, err, tt.status)
		}
	}
	// The transport error stays reachable, e.g. to tell a timeout.
	if err := classify("x", 0, "", netErr); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cause lost: %v", err)
	}
}

func TestTaskResult(t *testing.T) {
	tests := []struct {
		status, exit string
		done         bool
		want         error
		text         string
	}{
		{"running", "", false, nil, ""},
		{"stopped", "OK", true, nil, ""},
		{"stopped", "WARNINGS: 2", true, nil, ""},
		{"stopped", "VM 100 already running", true, ErrTaskFailed, "VM 100 already running"},
		{"stopped", "clone failed: storage 'ceph' is not available on node 'pve3'", true, ErrTaskFailed, "storage 'ceph' is not available"},
		{"stopped", "unable to create VM 100 - VM 100 already exists on node 'pve2'", true, ErrAlreadyExists, "already exists on node 'pve2'"},
		{"stopped", "VM quit/powerdown failed - got timeout", true, ErrTransient, "got timeout"},
		{"stopped", "unexpected status", true, ErrTaskFailed, "unexpected status"},
		{"stopped", "", true, ErrTaskFailed, "no exit status"},
	}
	for _, tt := range tests {
		done, err := taskResult("start VM 100", taskStatus{Status: tt.status, ExitStatus: tt.exit})
		name := tt.status + "/" + tt.exit
		if done != tt.done {
			t.Errorf("%s: done = %v", name, done)
		}
		if tt.want == nil && err != nil {
			t.Errorf("%s: err = %v, want success", name, err)
		}
		if tt.want != nil {
			assertKind(t, name, err, tt.want)
			if err == nil || !strings.Contains(err.Error(), tt.text) {
				t.Errorf("%s: err = %v, want text %q", name, err, tt.text)
			}
		}
	}
}

func TestUPIDNode(t *testing.T) {
	tests := []struct {
		upid, node string
	}{
		{"UPID:pve2:0002C3A4:0A1B2C3D:66AABBCC:qmclone:100:root@pam!tf:", "pve2"},
		{"UPID:pve1:00000005:00000005:00000005:qmstart:100:root@pam:", "pve1"},
		{"", ""},
		{"UPID:pve1:00000005:qmstart:100:root@pam", ""},
		{"TASK:pve1:0002C3A4:0A1B2C3D:66AABBCC:qmclone:100:root@pam:", ""},
	}
	for _, tt := range tests {
		node, err := upidNode(tt.upid)
		if node != tt.node || (err != nil) != (tt.node == "") {
			t.Errorf("upidNode(%q) = %q, %v; want %q", tt.upid, node, err, tt.node)
		}
	}
}

func TestRetryPolicy(t *testing.T) {
	p := retryPolicy{attempts: 4, base: time.Microsecond, cap: 4 * time.Microsecond}
	transient := &APIError{Op: "read", Message: "Service Unavailable", Status: 503, kind: ErrTransient}
	permanent := &APIError{Op: "read", Message: "no such VM", Status: 500, kind: ErrNotFound}
	tests := []struct {
		name      string
		failures  int
		err       error
		wantCalls int
		wantErr   error
	}{
		{"success at once", 0, transient, 1, nil},
		{"recovers", 3, transient, 4, nil},
		{"gives up", 10, transient, 4, ErrTransient},
		{"permanent not retried", 10, permanent, 1, ErrNotFound},
	}
	for _, tt := range tests {
		calls := 0
		err := p.do(context.Background(), func() error {
			calls++
			if calls <= tt.failures {
				return tt.err
			}
			return nil
		})
		if calls != tt.wantCalls || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
			t.Errorf("%s: %d calls, err %v; want %d calls, %v", tt.name, calls, err, tt.wantCalls, tt.wantErr)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	slow := retryPolicy{attempts: 5, base: time.Hour, cap: time.Hour}
	if err := slow.do(ctx, func() error { calls++; return transient }); calls != 1 || !errors.Is(err, ErrTransient) || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %d calls, %v", calls, err)
	}
}

func TestBackoffIsCappedAndJittered(t *testing.T) {
	p := retryPolicy{attempts: 40, base: 100 * time.Millisecond, cap: 5 * time.Second}
	for attempt := 0; attempt < 40; attempt++ {
		limit := min(p.base<<min(attempt, 20), p.cap)
		seen := map[time.Duration]bool{}
		for i := 0; i < 50; i++ {
			d := p.backoff(attempt)
			if d <= 0 || d > limit {
				t.Fatalf("backoff(%d) = %v, want in (0, %v]", attempt, d, limit)
			}
			seen[d] = true
		}
		if len(seen) < 2 {
			t.Fatalf("backoff(%d) has no jitter: %v", attempt, seen)
		}
	}
}

func TestNormalizeEndpoint(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{"https://pve.example.com:8006", "https://pve.example.com:8006/api2/json", ""},
		{"https://pve.example.com:8006/", "https://pve.example.com:8006/api2/json", ""},
		{"https://pve.example.com:8006/api2/json", "https://pve.example.com:8006/api2/json", ""},
		{" https://10.0.0.1:8006/api2/json/ ", "https://10.0.0.1:8006/api2/json", ""},
		{"http://127.0.0.1:8006", "http://127.0.0.1:8006/api2/json", ""},
		{"https://[fd00::1]:8006", "https://[fd00::1]:8006/api2/json", ""},
		{"pve.example.com:8006", "", "is not a URL like https://pve.example.com:8006"},
		{"ftp://pve", "", "is not a URL"},
		{"https://", "", "is not a URL"},
		{"https://pve:8006/api2/extjs", "", `unexpected path "/api2/extjs"`},
		{"https://root:secret@pve:8006", "", `"https://root:xxxxx@pve:8006" must not hold credentials`},
		{"https://pve:8006?x=1", "", "a query"},
		{"root:secret@pve:8006", "", "(not shown: it may hold a password)"},
	}
	for _, tt := range tests {
		got, err := NormalizeEndpoint(tt.in)
		if got != tt.want || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("NormalizeEndpoint(%q) = %q, %v; want %q, %q", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestParseAPIToken(t *testing.T) {
	tests := []struct {
		in, id, secret string
	}{
		{"terraform@pve!provider=1234abcd-5678", "terraform@pve!provider", "1234abcd-5678"},
		{"root@pam!ci=aaaa-bbbb", "root@pam!ci", "aaaa-bbbb"},
		{"root@pam=secret", "", ""},
		{"root!tf=secret", "", ""},
		{"root@pam!tf=", "", ""},
		{"root@pam!tf", "", ""},
	}
	for _, tt := range tests {
		id, secret, err := ParseAPIToken(tt.in)
		if tt.id == "" {
			if err == nil {
				t.Errorf("ParseAPIToken(%q) accepted", tt.in)
			}
			continue
		}
		if err != nil || id != tt.id || secret != tt.secret {
			t.Errorf("ParseAPIToken(%q) = %q, %q, %v", tt.in, id, secret, err)
		}
	}
}

func TestStringify(t *testing.T) {
	tests := []struct{ raw, want string }{
		{`"virtio=BC:24:11:2E:C5:4A,bridge=vmbr0"`, "virtio=BC:24:11:2E:C5:4A,bridge=vmbr0"},
		{`"4096"`, "4096"},
		{`4`, "4"},
		{`1e+06`, "1000000"},
		{`2.5E3`, "2500"},
		{`0.5`, "0.5"},
		{`12345678901234567890`, "12345678901234567890"},
		{`-1`, "-1"},
		{`true`, "1"},
		{`false`, "0"},
	}
	for _, tt := range tests {
		if got := stringify(json.RawMessage(tt.raw)); got != tt.want {
			t.Errorf("stringify(%s) = %q, want %q", tt.raw, got, tt.want)
		}
	}
}

func TestParseNextID(t *testing.T) {
	tests := []struct {
		raw          string
		lower, upper int
		err          string
	}{
		{``, 0, 0, ""},
		{`null`, 0, 0, ""},
		{`{"lower":"5000","upper":"6000"}`, 5000, 6000, ""},
		{`{"lower":5000,"upper":1e+06}`, 5000, 1000000, ""},
		{`"lower=5000,upper=6000"`, 5000, 6000, ""},
		{`" lower = 200 , upper = 300 "`, 200, 300, ""},
		{`{"lower":"5000"}`, 5000, 1000000, ""},
		{`"upper=500"`, 100, 500, ""},
		{`{"lower":"five"}`, 0, 0, `lower "five" is not a number`},
		{`{"lower":"6000","upper":"5000"}`, 0, 0, "lower 6000 is not below upper 5000"},
		{`[1,2]`, 0, 0, "unexpected value"},
	}
	for _, tt := range tests {
		b, err := parseNextID(json.RawMessage(tt.raw))
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parseNextID(%s) err = %v, want %q", tt.raw, err, tt.err)
			}
		case err != nil:
			t.Errorf("parseNextID(%s): %v", tt.raw, err)
		case tt.lower == 0 && b != nil:
			t.Errorf("parseNextID(%s) = %+v, want no bounds", tt.raw, *b)
		case tt.lower != 0 && (b == nil || b.lower != tt.lower || b.upper != tt.upper):
			t.Errorf("parseNextID(%s) = %+v, want [%d, %d)", tt.raw, b, tt.lower, tt.upper)
		}
	}
}

func TestFlexInt(t *testing.T) {
	var rows []listRow
	if err := json.Unmarshal([]byte(`[{"vmid":101},{"vmid":"102"}]`), &rows); err != nil || rows[0].VMID != 101 || rows[1].VMID != 102 {
		t.Fatalf("rows = %+v, %v", rows, err)
	}
	if err := json.Unmarshal([]byte(`[{"vmid":"abc"}]`), &rows); err == nil {
		t.Fatal("a non-numeric vmid was accepted")
	}
}

// TestBuildSnapshot decodes a /cluster/resources answer shaped like PVE 8's (pool and sdn rows,
// an offline node without live figures, a container with fractional maxcpu, a guest created
// since the last stats broadcast) exactly as the client does.
func TestBuildSnapshot(t *testing.T) {
	data, err := os.ReadFile("testdata/cluster_resources.json")
	if err != nil {
		t.Fatal(err)
	}
	b := newSnapshotBuilder(len(data))
	if err := decodeResources(data, b.add); err != nil {
		t.Fatal(err)
	}
	snap, unsized := b.build(&nextIDBounds{lower: 5000, upper: 6000})

	wantNodes := []scheduler.Node{
		{Name: "alpha", Online: true, MaxCPU: 32, MaxMem: 128 << 30, CPU: 0.125, Mem: 32 << 30, Storages: []scheduler.Storage{
			{Name: "local-lvm", Content: []string{"rootdir", "images"}, Active: true, Total: 5000, Used: 1000},
			{Name: "ceph", Content: []string{"images"}, Active: true, Shared: true, Total: 90000, Used: 2000},
		}},
		{Name: "beta", Online: true, MaxCPU: 16, MaxMem: 64 << 30, CPU: 0.5, Mem: 48 << 30},
		{Name: "gamma", MaxCPU: 8, MaxMem: 32 << 30, Storages: []scheduler.Storage{{Name: "ceph", Content: []string{"images"}, Shared: true}}},
	}
	if !reflect.DeepEqual(snap.Nodes, wantNodes) {
		t.Errorf("nodes:\n got %+v\nwant %+v", snap.Nodes, wantNodes)
	}
	wantGuests := []scheduler.Guest{
		{VMID: 101, Node: "alpha", Name: "api-1", Type: scheduler.GuestQEMU, Status: "running", CPUs: 4, MaxMem: 8 << 30, Tags: []string{"prod", "web"}, Pool: "web"},
		{VMID: 9000, Node: "alpha", Name: "debian-12", Type: scheduler.GuestQEMU, Status: "stopped", CPUs: 2, MaxMem: 2 << 30, Template: true},
		{VMID: 205, Node: "beta", Type: scheduler.GuestQEMU, Status: "unknown", Tags: []string{"fresh"}, Lock: "create", Pending: true},
		{VMID: 300, Node: "beta", Name: "dns", Type: scheduler.GuestLXC, Status: "running", CPUs: 0.5, MaxMem: 512 << 20},
		{VMID: 410, Node: "gamma", Type: scheduler.GuestQEMU, Status: "unknown"},
	}
	if !reflect.DeepEqual(snap.Guests, wantGuests) {
		t.Errorf("guests:\n got %+v\nwant %+v", snap.Guests, wantGuests)
	}
	// Only the stats-less guest on an online node can be sized; gamma is unreachable.
	if !reflect.DeepEqual(unsized, []int{2}) {
		t.Errorf("unsized = %v, want [2]", unsized)
	}
	if snap.NextIDBounds == nil || *snap.NextIDBounds != (scheduler.IDBounds{Lower: 5000, Upper: 6000}) {
		t.Errorf("bounds = %+v", snap.NextIDBounds)
	}
}

func TestSplitList(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"k8s;prod", []string{"k8s", "prod"}},
		{"a, b;c\td  e", []string{"a", "b", "c", "d", "e"}},
		{";;", nil},
	}
	for _, tt := range tests {
		if got := splitList(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("splitList(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAPIErrorText(t *testing.T) {
	withStatus := &APIError{Op: "read VM 100 on pve1", Status: 500, Message: "boom"}
	noStatus := &APIError{Op: "start VM 100", Message: "QEMU exited with code 1"}
	for err, want := range map[error]string{
		withStatus: "read VM 100 on pve1: boom (HTTP 500)",
		noStatus:   "start VM 100: QEMU exited with code 1",
	} {
		if got := fmt.Sprint(err); got != want {
			t.Errorf("Error() = %q, want %q", got, want)
		}
	}
}

func TestPendingGuests(t *testing.T) {
	for _, tc := range []struct {
		lock string
		tags []string
		want bool
	}{
		{"", nil, false},
		{"create", nil, true},
		{"clone", []string{"web"}, true},
		{"migrate", nil, false},
		{"backup", []string{"web"}, false},
		{"", []string{"web", ClaimTag}, true},
		{"", []string{PendingTag}, true},
		{"", []string{"qemuscheduler"}, false},
	} {
		if got := Pending(tc.lock, tc.tags); got != tc.want {
			t.Errorf("Pending(%q, %v) = %v, want %v", tc.lock, tc.tags, got, tc.want)
		}
	}
	if !IsMark(PendingTag) || !IsMark(ClaimTag) || IsMark("web") {
		t.Error("IsMark tells the provider's tags wrongly")
	}
}

// The main disk storage holds most of the disk bytes; CD-ROMs (a cloud-init drive among them),
// EFI vars and TPM state do not count, and a VM without disks has none.
func TestMainDiskStorage(t *testing.T) {
	for _, tc := range []struct {
		config map[string]string
		want   string
	}{
		{map[string]string{"scsi0": "tank:vm-100-disk-0,size=32G", "scsi1": "local-lvm:vm-100-disk-1,size=8G"}, "tank"},
		{map[string]string{"virtio0": "a:vm-1-disk-0,size=1T", "sata0": "b:vm-1-disk-1,size=1000G", "sata1": "b:vm-1-disk-2,size=25G"}, "b"}, // 1025 GiB over 1 TiB,
		{map[string]string{"scsi0": "b:vm-1-disk-0,size=512M", "scsi1": "a:vm-1-disk-1,size=524288K"}, "a"},                                  // a tie: the first name
		{map[string]string{"ide2": "ceph:vm-9000-cloudinit,media=cdrom", "efidisk0": "ceph:vm-1-disk-9,size=4M", "scsi0": "local:vm-1-disk-0,size=2G"}, "local"},
		{map[string]string{"ide2": "none,media=cdrom", "net0": "virtio=BC:24:11:00:90:00,bridge=vmbr0"}, ""},
	} {
		if got := mainDiskStorage(tc.config); got != tc.want {
			t.Errorf("mainDiskStorage(%v) = %q, want %q", tc.config, got, tc.want)
		}
	}
}

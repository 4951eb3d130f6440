package kit

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"golang.org/x/crypto/ssh"
)

func TestFormatChecks(t *testing.T) {
	const edKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl admin@example.com"
	tests := []struct {
		name    string
		check   func(string) error
		value   string
		wantErr string // "" = valid
	}{
		{"dhcp", checkIPConfig, "ip=dhcp", ""},
		{"static v4 with gateway", checkIPConfig, "ip=10.0.0.5/24,gw=10.0.0.1", ""},
		{"dual stack", checkIPConfig, "ip=dhcp,ip6=auto", ""},
		{"static v6", checkIPConfig, "ip6=fd00::5/64,gw6=fd00::1", ""},
		{"address without prefix", checkIPConfig, "ip=10.0.0.5", `ip: "10.0.0.5" is not an IPv4 address in CIDR notation`},
		{"v6 in ip", checkIPConfig, "ip=fd00::5/64", `is not an IPv4 address`},
		{"v4 gateway in gw6", checkIPConfig, "ip6=auto,gw6=10.0.0.1", `gw6: "10.0.0.1" is not an IPv6 address`},
		{"auto is v6 only", checkIPConfig, "ip=auto", `or dhcp`},
		{"unknown key", checkIPConfig, "ip=dhcp,dns=1.1.1.1", `unknown key "dns"`},
		{"not key=value", checkIPConfig, "dhcp", `"dhcp" is not key=value`},
		{"key twice", checkIPConfig, "ip=dhcp,ip=10.0.0.5/24", "ip is given twice"},
		{"one server", checkNameservers, "10.0.0.53", ""},
		{"servers, mixed separators", checkNameservers, "10.0.0.53 1.1.1.1,fd00::53", ""},
		{"server by name", checkNameservers, "dns.example.com", `"dns.example.com" is not an IP address`},
		{"no server", checkNameservers, " ", "no address given"},
		{"domains", checkSearchdomains, "example.com lab.example.com", ""},
		{"bad domain", checkSearchdomains, "exa_mple.com", `"exa_mple.com" is not a DNS name: '_' is not allowed`},
		{"domain with an empty label", checkSearchdomains, "lab..example.com", `label 2 is empty`},
		// VM names: PVE's dns-name format (pve-common pve_verify_dns_name), no length limit.
		{"name", checkDNSName, "web-1", ""},
		{"fully qualified name", checkDNSName, "web-1.lab.example.com", ""},
		{"one letter", checkDNSName, "a", ""},
		{"digits only", checkDNSName, "1.2", ""},
		{"63-letter label", checkDNSName, strings.Repeat("a", 63) + ".example.com", ""},
		{"64-letter label", checkDNSName, "web." + strings.Repeat("a", 64), "label 2 has 64 characters: a DNS label has at most 63"},
		{"empty", checkDNSName, "", "empty"},
		{"doubled dot", checkDNSName, "a..b", "label 2 is empty: a DNS name has no leading, trailing or doubled dots"},
		{"leading dot", checkDNSName, ".web", "label 1 is empty"},
		{"trailing dot", checkDNSName, "web.", "label 2 is empty"},
		{"underscore", checkDNSName, "web_1", `'_' is not allowed: a DNS name has letters, digits, '-' and '.'`},
		{"space", checkDNSName, "web 1", `' ' is not allowed`},
		{"non-ASCII letter", checkDNSName, "wéb", `'é' is not allowed`},
		{"leading hyphen", checkDNSName, "-web", `label "-web" starts or ends with '-'`},
		{"trailing hyphen in a label", checkDNSName, "web-.lab", `label "web-" starts or ends with '-'`},
		{"leading hyphen in a label", checkDNSName, "web.-lab", `label "-lab" starts or ends with '-'`},
		{"ed25519 key", checkSSHKey, edKey, ""},
		{"key without comment", checkSSHKey, strings.TrimSuffix(edKey, " admin@example.com"), ""},
		{"certificate", checkSSHKey, sshCertificate(t), ""},
		// ssh-keygen -l refuses it, and PVE with it the apply ("SSH public key validation error").
		{"truncated key", checkSSHKey, "ssh-rsa AAAAB3NzaC1yc2E=", "is not a readable ssh-rsa public key"},
		{"two keys in one element", checkSSHKey, edKey + "\n" + edKey, "give each key as its own list element"},
		{"a key file's last newline", checkSSHKey, edKey + "\n", "trimspace(file("},
		{"private key pasted", checkSSHKey, "-----BEGIN OPENSSH PRIVATE KEY-----", "private key"},
		{"type only", checkSSHKey, "ssh-ed25519", "want \"<type> <base64 key> [comment]\""},
		{"unknown type", checkSSHKey, "ssh-foo AAAA", `unknown key type "ssh-foo"`},
		{"key not base64", checkSSHKey, "ssh-ed25519 AAAA... admin@example.com", "not base64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.check(tt.value)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("%q rejected: %v", tt.value, err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("%q accepted, want an error containing %q", tt.value, tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("error %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

// The attribute's path and the value appear in the diagnostic, so the user knows which line
// of which block to fix.
func TestStringCheckNamesAttributeAndValue(t *testing.T) {
	p := path.Root("cloud_init").AtName("ip_config").AtListIndex(1)
	var resp validator.StringResponse
	IPConfigCheck.ValidateString(context.Background(), validator.StringRequest{Path: p, ConfigValue: types.StringValue("ip=dhcpp")}, &resp)
	if !resp.Diagnostics.HasError() {
		t.Fatal("no error for ip=dhcpp")
	}
	detail := resp.Diagnostics.Errors()[0].Detail()
	for _, want := range []string{"cloud_init.ip_config[1]", `"ip=dhcpp"`} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail %q does not name %s", detail, want)
		}
	}
	for _, v := range []types.String{types.StringNull(), types.StringUnknown()} {
		var resp validator.StringResponse
		IPConfigCheck.ValidateString(context.Background(), validator.StringRequest{Path: p, ConfigValue: v}, &resp)
		if resp.Diagnostics.HasError() {
			t.Errorf("%v: %v (null and unknown values are not checked)", v, resp.Diagnostics)
		}
	}
}

func TestIdentifierFormats(t *testing.T) {
	tests := []struct {
		name  string
		check interface{ MatchString(string) bool }
		good  []string
		bad   []string
	}{
		{"disk slot", DiskFormat, []string{"scsi0", "scsi30", "virtio15", "sata5", "ide3"}, []string{"scsi31", "virtio16", "sata6", "ide4", "nvme0", "scsi"}},
		{"net slot", NetFormat, []string{"net0", "net31"}, []string{"net32", "eth0", "net"}},
		{"storage", storageID, []string{"local-lvm", "ceph", "nfs.backup"}, []string{"Local", "1st", "ceph-", "ceph pool"}},
		{"bridge", BridgeName, []string{"vmbr0", "vnet10", "bond0.20"}, []string{"", "vmbr0 ", "averyveryverylongbridge"}},
		{"node", NodeName, []string{"pve1", "node-a"}, []string{"pve1.example.com", "-pve", "pve_1"}},
		{"tag", TagFormat, []string{"web", "k8s-worker", "team+ops"}, []string{"Web", "-web", "a b"}},
	}
	for _, tt := range tests {
		for _, v := range tt.good {
			if !tt.check.MatchString(v) {
				t.Errorf("%s %q rejected", tt.name, v)
			}
		}
		for _, v := range tt.bad {
			if tt.check.MatchString(v) {
				t.Errorf("%s %q accepted", tt.name, v)
			}
		}
	}
}

func TestCheckVCPUs(t *testing.T) {
	for _, tc := range []struct {
		cores, sockets int64
		wantError      bool
	}{
		{1, 1, false},
		{64, 64, false}, // 4096: QEMU's limit
		{64, 65, true},
		{4096, 2, true},
		{5000, 1, false}, // the attribute's own bound reports it
	} {
		var diags diag.Diagnostics
		CheckVCPUs(types.Int64Value(tc.cores), types.Int64Value(tc.sockets), &diags)
		if diags.HasError() != tc.wantError {
			t.Errorf("checkVCPUs(%d, %d) = %v, want error %v", tc.cores, tc.sockets, diags, tc.wantError)
		}
	}
	var diags diag.Diagnostics
	CheckVCPUs(types.Int64Unknown(), types.Int64Value(8192), &diags)
	if diags.HasError() {
		t.Errorf("an unknown count is checked: %v", diags)
	}
}

// Memory is in MiB: a value meant in GiB warns, one given in bytes fails saying so.
func TestMemoryMiB(t *testing.T) {
	for _, tt := range []struct {
		mib           int64
		warning, fail string
	}{
		{512, "", ""},
		{64, "", ""},
		{16, "memory = 16 gives the VM 16 MiB, too little for a VM to boot most systems; memory is in MiB: for 16 GiB write 16384.", ""},
		{8, "", "memory = 8: memory is in MiB and must be 16 to 4194304; for 8 GiB write 8192."},
		{4194304, "", ""},
		{8589934592, "", "memory = 8589934592: memory is in MiB and must be 16 to 4194304 (PVE's 4 TiB). 8589934592 looks like bytes: that is 8192 MiB."},
	} {
		resp := &validator.Int64Response{}
		MemoryMiB{}.ValidateInt64(context.Background(), validator.Int64Request{Path: path.Root("memory"), ConfigValue: types.Int64Value(tt.mib)}, resp)
		var warning, fail string
		for _, d := range resp.Diagnostics {
			if d.Severity() == diag.SeverityWarning {
				warning = d.Detail()
			} else {
				fail = d.Detail()
			}
		}
		if warning != tt.warning || fail != tt.fail || len(resp.Diagnostics) > 1 {
			t.Errorf("memory %d: warning %q, error %q; want %q, %q", tt.mib, warning, fail, tt.warning, tt.fail)
		}
	}
}

// The balloon is in MiB too: 0 (no balloon device) and small values pass, bytes fail saying so.
func TestBalloonMiB(t *testing.T) {
	for _, tt := range []struct {
		mib  int64
		fail string
	}{
		{0, ""},
		{16, ""},
		{4194304, ""},
		{-1, "balloon = -1: balloon is in MiB and must be 0 to 4194304 (0: no balloon device)."},
		{8589934592, "balloon = 8589934592: balloon is in MiB and must be 0 to 4194304 (PVE's 4 TiB). 8589934592 looks like bytes: that is 8192 MiB."},
	} {
		resp := &validator.Int64Response{}
		MemoryMiB{Balloon: true}.ValidateInt64(context.Background(), validator.Int64Request{Path: path.Root("balloon"), ConfigValue: types.Int64Value(tt.mib)}, resp)
		var fail string
		for _, d := range resp.Diagnostics {
			fail = d.Detail()
		}
		if fail != tt.fail || len(resp.Diagnostics) > 1 {
			t.Errorf("balloon %d: diagnostics %v; want error %q", tt.mib, resp.Diagnostics, tt.fail)
		}
	}
}

// sshCertificate is an OpenSSH user certificate line for a new ed25519 key, signed by another.
func sshCertificate(t *testing.T) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, caKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(caKey)
	if err != nil {
		t.Fatal(err)
	}
	cert := &ssh.Certificate{Key: key, CertType: ssh.UserCert, ValidPrincipals: []string{"admin"}, ValidBefore: ssh.CertTimeInfinity}
	if err := cert.SignCert(rand.Reader, signer); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(cert)))
}

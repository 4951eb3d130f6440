package pvesim_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// Keys made with ssh-keygen (OpenSSH 9.2).
const (
	edKey  = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAcyr9L4nbOd9V+cAwmeA/XJ/eXrELWwlsmSF4Xc50VY one@host"
	rsaKey = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQDQGlUOrb3hnPS84A9epMeHaW8n44xYuaXqN/LA91k41VUEKLj3kwUUVnWHJIojh9vyE7ymXYnuBmoYtI+e2KnBAvKd+cZox5eAXvjEeFyNKMyLb4dNWp9rukizMohFr7luuSuIKZreVnJCc8TELC0ZdcnXAK1N3nWRX0QLYtJBEQ== two@host"
	dsaKey = "ssh-dss AAAAB3NzaC1kc3MAAACBAOiW91FeT/kY7b9y4LKodHw/SBn3xr5iHMCpS5uL5Xbi25llrc6lAExNNJkVxe7O68oJQMxnVq2va+eidzFwfzk+gy/bx+Lctg56HxHI8VdWhRYyNvuaDKuIxnvoxnHqD6No3WcfHC1ssoxUFv7w4/pg21zPssQlhVVEaTyUcSiRAAAAFQCE/L+qzPAD2xxe5S1Skxn1Vc7rYQAAAIEAgCPU3UNiWP8YECWXtwftH9GOM4MJ9cRI7YS7/Yy98Im+weiccbE+so9dvYCo++OLQebL4dp7l8N2apJZ12oQ6381LavC7fY8HeKAROqHb8dz8TdF7B4thqMLvV4BFdUWt4YfZD6r2B1BqSn8HyUSdkx5rqTePMBQpWblAjVF2t8AAACAe4OsKqBYEnMBNR1hCr1TJxb5Fq+Kvowq5dhKXD8MNLfrs/w6nNcybY1hAfkzcmEUb80QfQTm5ymA5Par+czNEOWgr3X8lHLKThIXoWIQ3bYY7HEJWSGXbRcc9y9ENAMz5LydZ9L1NBUluUeyl+cDkLZF7nF+u10FQOcCYC8gT7Y= old@host"
)

// sshKeys encodes keys as PVE takes sshkeys: url-encoded lines, spaces as %20.
func sshKeys(keys ...string) string {
	return strings.ReplaceAll(url.QueryEscape(strings.Join(keys, "\n")), "+", "%20")
}

// qemu-server validates sshkeys on create and on a config write before anything else of the
// call (PVE::Tools::validate_ssh_public_keys: ssh-keygen -l on every line of the decoded
// value): a line that is no public key fails the call with "SSH public key validation error"
// (a 500, before a config write's qmconfig worker). PVE 9's OpenSSH 10 (Debian trixie) reads
// no DSA key, PVE 8's OpenSSH 9.2 does.
func TestSSHKeysValidated(t *testing.T) {
	const refused = "500 SSH public key validation error"
	for _, pve9 := range []bool{false, true} {
		a, _ := permCluster(t, pve9)
		valid := sshKeys(edKey, rsaKey)
		if exit := a.task(a.form(http.MethodPost, "/nodes/pve1/qemu", url.Values{"vmid": {"150"}, "sshkeys": {valid}})); exit != "OK" {
			t.Fatalf("pve9=%v: create with two keys: %s", pve9, exit)
		}
		if got := a.ok(a.get("/nodes/pve1/qemu/150/config")).obj()["sshkeys"]; got != valid {
			t.Errorf("pve9=%v: sshkeys = %v, want %s", pve9, got, valid)
		}
		fake := sshKeys("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5 user@host")
		for _, tc := range []struct {
			method, path string
			params       url.Values
		}{
			{http.MethodPost, "/nodes/pve1/qemu", url.Values{"vmid": {"151"}, "sshkeys": {fake}}},
			{http.MethodPut, "/nodes/pve1/qemu/150/config", url.Values{"sshkeys": {fake}}},
			{http.MethodPost, "/nodes/pve1/qemu/150/config", url.Values{"sshkeys": {sshKeys(edKey, "not a key")}}},
		} {
			if r := a.form(tc.method, tc.path, tc.params); r.status != refused {
				t.Errorf("pve9=%v: %s %s with an invalid key = %s, want %s", pve9, tc.method, tc.path, r.status, refused)
			}
		}
		r := a.form(http.MethodPut, "/nodes/pve1/qemu/150/config", url.Values{"sshkeys": {sshKeys(dsaKey)}})
		if pve9 && r.status != refused || !pve9 && r.code != 200 {
			t.Errorf("pve9=%v: a DSA key = %s", pve9, r.status)
		}
	}
}

package pvesim

import (
	"net/url"
	"strings"

	"golang.org/x/crypto/ssh"
)

// sshKeysProblem is qemu-server's check of a create's or config write's sshkeys (before
// anything else of the call): PVE::Tools::validate_ssh_public_keys runs ssh-keygen -l on
// every non-blank line of the url-decoded value and dies "SSH public key validation error"
// when one is not a public key. PVE 9 runs OpenSSH 10 (Debian trixie), which no longer reads
// DSA keys; PVE 8's OpenSSH 9.2 still does. "" when the keys are valid.
func sshKeysProblem(encoded string, v versionInfo) string {
	raw, err := url.PathUnescape(encoded) // URI::Escape::uri_unescape: %XX only, + stays
	if err != nil {
		raw = encoded
	}
	for _, line := range strings.Split(raw, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
		if err != nil || v.major >= 9 && key.Type() == "ssh-dss" {
			return "SSH public key validation error"
		}
	}
	return ""
}

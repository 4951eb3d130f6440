package kit

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"golang.org/x/crypto/ssh"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/records"
)

// Formats of PVE identifiers, as its API schema defines them, so that a typo fails the plan
// rather than an apply halfway through.
var (
	NodeName   = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?$`)
	TagFormat  = regexp.MustCompile(`^[a-z0-9_][a-z0-9_\-+.]*$`)
	DiskFormat = regexp.MustCompile(`^(scsi([0-9]|[1-2][0-9]|30)|virtio([0-9]|1[0-5])|sata[0-5]|ide[0-3])$`)
	NetFormat  = regexp.MustCompile(`^net([0-9]|[1-2][0-9]|3[0-1])$`)
	storageID  = regexp.MustCompile(`^[a-z][a-z0-9\-_.]*[a-z0-9]$`)
	PoolID     = regexp.MustCompile(`^[A-Za-z0-9_\-.]+$`)
	BridgeName = regexp.MustCompile(`^[A-Za-z0-9_\-.]{1,15}$`)
	CPUType    = regexp.MustCompile(`^[A-Za-z0-9_\-.+]*$`) // "": PVE's default, as read from a VM without one
	sshKeyType = regexp.MustCompile(`^(ssh-(rsa|dss|ed25519)|ecdsa-sha2-nistp(256|384|521)|sk-(ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)(-cert-v01@openssh\.com)?$`)
)

// MaxDescription is PVE's limit on a VM description, in bytes.
const MaxDescription = 8192

// StringCheck validates a string with check; the error names the attribute and the value.
type StringCheck struct {
	What  string
	Check func(string) error
}

func (v StringCheck) Description(context.Context) string             { return "must be " + v.What }
func (v StringCheck) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v StringCheck) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := v.Check(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid "+v.What,
			fmt.Sprintf("%s: %q: %s.", req.Path, req.ConfigValue.ValueString(), err))
	}
}

var (
	IPConfigCheck     = StringCheck{"cloud-init IP config", checkIPConfig}
	NameserverCheck   = StringCheck{"list of DNS server addresses", checkNameservers}
	SearchdomainCheck = StringCheck{"list of DNS domains", checkSearchdomains}
	SSHKeyCheck       = StringCheck{"SSH public key", checkSSHKey}
	DNSNameCheck      = StringCheck{"DNS name", checkDNSName}
)

// checkDNSName accepts what PVE's dns-name format (pve-common's pve_verify_dns_name) does, the
// format of a VM's name: labels of letters, digits and '-', neither starting nor ending with
// '-', joined by single dots. PVE sets no length limit, so neither does this.
func checkDNSName(s string) error {
	if s == "" {
		return fmt.Errorf("empty; give a name such as web-1")
	}
	for i, label := range strings.Split(s, ".") {
		bad := strings.IndexFunc(label, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-')
		})
		switch {
		case label == "":
			return fmt.Errorf("label %d is empty: a DNS name has no leading, trailing or doubled dots", i+1)
		case bad >= 0:
			return fmt.Errorf("%q is not allowed: a DNS name has letters, digits, '-' and '.'", []rune(label[bad:])[0])
		case label[0] == '-' || label[len(label)-1] == '-':
			return fmt.Errorf("label %q starts or ends with '-'", label)
		case len(label) > 63:
			// PVE stores longer labels, but DNS (RFC 1035) and the guest's host name, which
			// cloud-init sets from the name, cannot carry them.
			return fmt.Errorf("label %d has %d characters: a DNS label has at most 63", i+1, len(label))
		}
	}
	return nil
}

// checkIPConfig accepts PVE's ipconfigN: ip=<IPv4/CIDR|dhcp>, gw=<IPv4>, ip6=<IPv6/CIDR|dhcp|auto>,
// gw6=<IPv6>, comma-separated, each at most once.
func checkIPConfig(s string) error {
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		key, value, ok := strings.Cut(part, "=")
		if !ok {
			return fmt.Errorf("%q is not key=value; write e.g. ip=10.0.0.5/24,gw=10.0.0.1 or ip=dhcp", part)
		}
		if seen[key] {
			return fmt.Errorf("%s is given twice", key)
		}
		seen[key] = true
		var err error
		switch key {
		case "ip":
			err = checkAddress(value, true, false, "dhcp")
		case "ip6":
			err = checkAddress(value, true, true, "dhcp", "auto")
		case "gw":
			err = checkAddress(value, false, false)
		case "gw6":
			err = checkAddress(value, false, true)
		default:
			return fmt.Errorf("unknown key %q; valid keys are ip, gw, ip6 and gw6", key)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	return nil
}

// checkAddress checks an address (prefix: in CIDR notation) of the given family, or one of
// the keywords.
func checkAddress(s string, prefix, v6 bool, keywords ...string) error {
	for _, k := range keywords {
		if s == k {
			return nil
		}
	}
	family, form := "IPv4", "address"
	if v6 {
		family = "IPv6"
	}
	var addr netip.Addr
	if prefix {
		form = "address in CIDR notation (e.g. 10.0.0.5/24)"
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return fmt.Errorf("%q is not an %s %s%s", s, family, form, keywordHint(keywords))
		}
		addr = p.Addr()
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return fmt.Errorf("%q is not an %s %s", s, family, form)
		}
		addr = a
	}
	if addr.Is6() != v6 {
		return fmt.Errorf("%q is not an %s %s", s, family, form)
	}
	return nil
}

func keywordHint(keywords []string) string {
	if len(keywords) == 0 {
		return ""
	}
	return " or " + strings.Join(keywords, " or ")
}

// splitList splits PVE's address and domain lists, which take commas, semicolons or spaces.
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == ' ' })
}

func checkNameservers(s string) error {
	items := splitList(s)
	if len(items) == 0 {
		return fmt.Errorf("no address given")
	}
	for _, a := range items {
		if _, err := netip.ParseAddr(a); err != nil {
			return fmt.Errorf("%q is not an IP address", a)
		}
	}
	return nil
}

func checkSearchdomains(s string) error {
	items := splitList(s)
	if len(items) == 0 {
		return fmt.Errorf("no domain given")
	}
	for _, d := range items {
		if err := checkDNSName(d); err != nil {
			return fmt.Errorf("%q is not a DNS name: %w", d, err)
		}
	}
	return nil
}

// checkSSHKey accepts one OpenSSH public key line: type, base64 key, optional comment.
func checkSSHKey(s string) error {
	if k := strings.TrimRight(s, "\r\n"); k != s && !strings.ContainsAny(k, "\r\n") {
		// file() keeps a key file's last newline.
		return fmt.Errorf(`ends with a line break, as file() reads it from a key file: write trimspace(file("..."))`)
	}
	if strings.ContainsAny(s, "\r\n") {
		return fmt.Errorf("holds a line break; give each key as its own list element")
	}
	if strings.Contains(s, "PRIVATE KEY") {
		return fmt.Errorf("this is a private key; give the public one (the .pub file)")
	}
	fields := strings.Fields(s)
	if len(fields) < 2 {
		return fmt.Errorf("want \"<type> <base64 key> [comment]\", as in an authorized_keys line")
	}
	if !sshKeyType.MatchString(fields[0]) {
		return fmt.Errorf("unknown key type %q (e.g. ssh-ed25519, ssh-rsa, ecdsa-sha2-nistp256)", fields[0])
	}
	if _, err := base64.StdEncoding.DecodeString(fields[1]); err != nil {
		return fmt.Errorf("the key part is not base64")
	}
	// PVE runs ssh-keygen -l on every key and refuses the apply with only "SSH public key
	// validation error" (pve-common validate_ssh_public_keys); say which key at plan time.
	if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(s)); err != nil {
		return fmt.Errorf("is not a readable %s public key (%v): Proxmox VE refuses it; copy the whole line of the .pub file", fields[0], err)
	}
	return nil
}

// ConfigReadable tells whether the config could be read into its model. A number that is not
// whole (1.5 for an integer, see wholeNumberType) fails the read with the error that the
// framework's schema validation reports on its attribute anyway, so the copy is left out
// rather than shown twice.
func ConfigReadable(d diag.Diagnostics) bool { return !d.HasError() }

// CheckVCPUs bounds cores x sockets by what QEMU accepts, which also keeps the product far
// from overflow.
func CheckVCPUs(cores, sockets types.Int64, diags *diag.Diagnostics) {
	if cores.IsNull() || cores.IsUnknown() || sockets.IsNull() || sockets.IsUnknown() {
		return
	}
	if c, s := cores.ValueInt64(), sockets.ValueInt64(); c*s > proxmox.MaxVCPUs && c <= proxmox.MaxVCPUs && s <= proxmox.MaxVCPUs {
		diags.AddAttributeError(path.Root("sockets"), "Too many vCPUs",
			fmt.Sprintf("cores x sockets = %d x %d = %d vCPUs; Proxmox VE (QEMU) accepts at most %d. Lower cores or sockets.", c, s, c*s, proxmox.MaxVCPUs))
	}
}

// UserTagCheck refuses the provider's own marks among a VM's tags: the provider sets and
// removes them, and reads the tags back without them, so a configured mark would make the
// apply's result inconsistent.
type UserTagCheck struct{}

var _ validator.String = UserTagCheck{}

func (UserTagCheck) Description(context.Context) string {
	return "must not be one of the provider's own marks (" + proxmox.RecordTag + ", " + proxmox.ClaimTag + ", " + proxmox.PendingTag + ")"
}

func (v UserTagCheck) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (UserTagCheck) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() || !proxmox.IsMark(req.ConfigValue.ValueString()) {
		return
	}
	resp.Diagnostics.AddAttributeError(req.Path, "Provider mark in tags",
		fmt.Sprintf("tags: %q is a mark the provider sets and removes itself (the placement record's, a create's); remove it from tags.",
			req.ConfigValue.ValueString()))
}

// UserNotesCheck refuses a description holding a placement record header: the provider writes the
// record below the description from the VM's policy and reads the description back without
// it, so the apply would find the description cut short (an inconsistent result).
type UserNotesCheck struct{}

var _ validator.String = UserNotesCheck{}

func (UserNotesCheck) Description(context.Context) string {
	return "must not hold a placement record (a line " + records.Header + ": ...)"
}

func (v UserNotesCheck) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (UserNotesCheck) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	notes := req.ConfigValue.ValueString()
	_, section := records.Split(notes)
	if section == "" {
		return
	}
	header, _, _ := strings.Cut(section, "\n")
	line := strings.Count(notes[:len(notes)-len(section)], "\n") + 1
	resp.Diagnostics.AddAttributeError(req.Path, "Placement record in the description",
		fmt.Sprintf("%s line %d %q starts a placement record, which the provider writes itself below the description, from the VM's "+
			"profile, annotations, node_selector, node_affinity, toleration, vm_affinity, vm_anti_affinity and topology_spread. "+
			"Remove that line and the record lines after it, and set the policy with those attributes.", req.Path, line, strings.TrimSpace(header)))
}

// plausibleMemoryMiB is the least memory a VM plausibly has: below it, a number was most likely
// meant in GiB.
const plausibleMemoryMiB = 64

// MemoryMiB checks a memory attribute, which is in MiB: out of PVE's range is an error that
// says the unit (and that a huge value looks like bytes), under 64 MiB a warning, since
// `memory = 16` meant as 16 GiB would silently create a 16 MiB VM. A balloon may be 0 (no
// balloon device) or small.
type MemoryMiB struct{ Balloon bool }

var _ validator.Int64 = MemoryMiB{}

func (v MemoryMiB) Description(context.Context) string {
	if v.Balloon {
		return fmt.Sprintf("balloon in MiB, 0 to %d", proxmox.MaxMemoryMiB)
	}
	return fmt.Sprintf("memory in MiB, %d to %d; under %d MiB warns", proxmox.MinMemoryMiB, proxmox.MaxMemoryMiB, plausibleMemoryMiB)
}

func (v MemoryMiB) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v MemoryMiB) ValidateInt64(_ context.Context, req validator.Int64Request, resp *validator.Int64Response) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	mib := req.ConfigValue.ValueInt64()
	switch {
	case mib > proxmox.MaxMemoryMiB:
		lowest := int64(proxmox.MinMemoryMiB)
		if v.Balloon {
			lowest = 0
		}
		detail := fmt.Sprintf("%s = %d: %s is in MiB and must be %d to %d (PVE's 4 TiB).", req.Path, mib, req.Path, lowest, proxmox.MaxMemoryMiB)
		if mib >= 1<<20 {
			detail += fmt.Sprintf(" %d looks like bytes: that is %d MiB.", mib, mib>>20)
		}
		resp.Diagnostics.AddAttributeError(req.Path, "Memory out of range", detail)
	case v.Balloon && mib < 0:
		resp.Diagnostics.AddAttributeError(req.Path, "Memory out of range",
			fmt.Sprintf("%s = %d: %s is in MiB and must be 0 to %d (0: no balloon device).", req.Path, mib, req.Path, proxmox.MaxMemoryMiB))
	case v.Balloon:
	case mib < proxmox.MinMemoryMiB:
		resp.Diagnostics.AddAttributeError(req.Path, "Memory out of range",
			fmt.Sprintf("%s = %d: memory is in MiB and must be %d to %d; for %d GiB write %d.", req.Path, mib, proxmox.MinMemoryMiB, proxmox.MaxMemoryMiB, mib, mib*1024))
	case mib < plausibleMemoryMiB:
		resp.Diagnostics.AddAttributeWarning(req.Path, "Memory is in MiB",
			fmt.Sprintf("%s = %d gives the VM %d MiB, too little for a VM to boot most systems; memory is in MiB: for %d GiB write %d.", req.Path, mib, mib, mib, mib*1024))
	}
}

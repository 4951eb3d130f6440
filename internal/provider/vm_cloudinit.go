package provider

// The cloud_init block of qemuscheduler_vm: schema, the cloud-init drive, and the mapping to
// and from PVE's keys (ciuser, cipassword, sshkeys, ipconfigN, nameserver, searchdomain).

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

type cloudInitModel struct {
	User         types.String `tfsdk:"user"`
	Password     types.String `tfsdk:"password"`
	SSHKeys      types.List   `tfsdk:"ssh_keys"`
	IPConfig     types.List   `tfsdk:"ip_config"`
	Nameserver   types.String `tfsdk:"nameserver"`
	Searchdomain types.String `tfsdk:"searchdomain"`
}

func cloudInitBlock() schema.Block {
	return schema.SingleNestedBlock{
		Description: "Cloud-init settings; a cloud-init drive is added when the VM has none.",
		Attributes: map[string]schema.Attribute{
			"user":     schema.StringAttribute{Optional: true, Description: "Default user."},
			"password": schema.StringAttribute{Optional: true, Sensitive: true, Description: "Password of the default user."},
			"ssh_keys": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				Validators:  []validator.List{listvalidator.SizeAtLeast(1), listvalidator.ValueStringsAre(sshKeyCheck)},
				Description: "Public SSH keys, one authorized_keys line each."},
			"ip_config": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				Validators:  []validator.List{listvalidator.SizeAtMost(32), listvalidator.ValueStringsAre(ipConfigCheck)},
				Description: "One entry per NIC, e.g. `ip=dhcp` or `ip=10.0.0.5/24,gw=10.0.0.1`."},
			"nameserver": schema.StringAttribute{Optional: true, Validators: []validator.String{nameserverCheck},
				Description: "DNS server addresses, separated by spaces or commas."},
			"searchdomain": schema.StringAttribute{Optional: true, Validators: []validator.String{searchdomainCheck},
				Description: "DNS search domains, separated by spaces or commas."},
		},
	}
}

// config renders the settings that are set into cfg.
func (ci *cloudInitModel) config(ctx context.Context, cfg map[string]string, diags *diag.Diagnostics) {
	setString(cfg, "ciuser", ci.User)
	setString(cfg, "cipassword", ci.Password)
	setString(cfg, "nameserver", ci.Nameserver)
	setString(cfg, "searchdomain", ci.Searchdomain)
	if !ci.SSHKeys.IsNull() && !ci.SSHKeys.IsUnknown() {
		var keys []string
		diags.Append(ci.SSHKeys.ElementsAs(ctx, &keys, false)...)
		cfg["sshkeys"] = encodeSSHKeys(keys)
	}
	if !ci.IPConfig.IsNull() && !ci.IPConfig.IsUnknown() {
		var ips []string
		diags.Append(ci.IPConfig.ElementsAs(ctx, &ips, false)...)
		for i, ip := range ips {
			cfg[fmt.Sprintf("ipconfig%d", i)] = ip
		}
	}
}

// read refreshes the settings the user manages (those not null) from cfg. PVE masks the
// password, so the planned one is kept.
func (ci *cloudInitModel) read(ctx context.Context, cfg map[string]string, diags *diag.Diagnostics) {
	readOptional := func(v *types.String, key string) {
		if !v.IsNull() {
			*v = types.StringValue(cfg[key])
		}
	}
	readOptional(&ci.User, "ciuser")
	readOptional(&ci.Nameserver, "nameserver")
	readOptional(&ci.Searchdomain, "searchdomain")
	var d diag.Diagnostics
	if !ci.SSHKeys.IsNull() {
		ci.SSHKeys, d = types.ListValueFrom(ctx, types.StringType, nonNil(decodeSSHKeys(cfg["sshkeys"])))
		diags.Append(d...)
	}
	if !ci.IPConfig.IsNull() {
		var ips []string
		for i := 0; ; i++ {
			v, ok := cfg[fmt.Sprintf("ipconfig%d", i)]
			if !ok {
				break
			}
			ips = append(ips, v)
		}
		ci.IPConfig, d = types.ListValueFrom(ctx, types.StringType, nonNil(ips))
		diags.Append(d...)
	}
}

// addCloudInitDrive adds a cloud-init drive to set unless cfg has one: on ide2 as PVE's GUI
// does, else on the first IDE slot that neither cfg nor the planned disks use.
func (m *vmModel) addCloudInitDrive(cfg, set map[string]string, storage string) error {
	if m.CloudInit == nil || hasCloudInitDrive(cfg) {
		return nil
	}
	for _, slot := range []string{"ide2", "ide0", "ide1", "ide3"} {
		if _, used := cfg[slot]; !used && !hasSlot(m.Disks, slot) {
			set[slot] = storage + ":cloudinit"
			return nil
		}
	}
	return errors.New("the cloud-init drive needs a free IDE slot, but ide0 to ide3 are all in use; free one of them")
}

func hasCloudInitDrive(cfg map[string]string) bool {
	for k, v := range cfg {
		if diskSlot.MatchString(k) && strings.Contains(v, "cloudinit") {
			return true
		}
	}
	return false
}

// encodeSSHKeys joins keys with newlines and URL-encodes them the way PVE stores them (%20,
// never +).
func encodeSSHKeys(keys []string) string {
	return strings.ReplaceAll(url.QueryEscape(strings.Join(keys, "\n")), "+", "%20")
}

func decodeSSHKeys(s string) []string {
	decoded, err := url.PathUnescape(s)
	if err != nil {
		decoded = s
	}
	var keys []string
	for _, k := range strings.Split(decoded, "\n") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

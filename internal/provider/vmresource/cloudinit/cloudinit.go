package cloudinit

// The cloud_init block of qemuscheduler_vm: schema, the cloud-init drive, and the mapping to
// and from PVE's keys (ciuser, cipassword, sshkeys, ipconfigN, nameserver, searchdomain,
// cicustom, ciupgrade). Custom snippets are checked at plan against the cluster view.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource/disk"
)

type Model struct {
	User         types.String `tfsdk:"user"`
	Password     types.String `tfsdk:"password"`
	SSHKeys      types.List   `tfsdk:"ssh_keys"`
	IPConfig     types.List   `tfsdk:"ip_config"`
	Nameserver   types.String `tfsdk:"nameserver"`
	Searchdomain types.String `tfsdk:"searchdomain"`
	UserData     types.String `tfsdk:"user_data"`
	NetworkData  types.String `tfsdk:"network_data"`
	VendorData   types.String `tfsdk:"vendor_data"`
	Upgrade      types.Bool   `tfsdk:"upgrade"`
}

// SnippetVolume is a snippet's volume id, STORAGE:snippets/FILE (PVE's storage id, and a file
// name without the comma that would end the cicustom entry).
var SnippetVolume = regexp.MustCompile(`^(?i)([a-z][a-z0-9\-_.]*[a-z0-9]):snippets/([^/,]+)$`)

var SnippetCheck = kit.StringCheck{What: "snippet volume id", Check: func(s string) error {
	if !SnippetVolume.MatchString(s) {
		return errors.New("want STORAGE:snippets/FILE, the volume id of a file in a storage's snippets directory, e.g. local:snippets/user.yaml")
	}
	return nil
}}

// CicustomAttrs maps the snippet attributes to their cicustom keys; the settings PVE ignores
// once the snippet replaces the file it would generate from them are conflicts.
var CicustomAttrs = []struct {
	Attr, key string
	replaces  []string
}{
	{"user_data", "user", []string{"user", "password", "ssh_keys"}},
	{"network_data", "network", []string{"ip_config", "nameserver", "searchdomain"}},
	{"vendor_data", "vendor", nil},
}

// Snippet is the snippet attribute of that name.
func (ci *Model) Snippet(name string) *types.String {
	return map[string]*types.String{"user_data": &ci.UserData, "network_data": &ci.NetworkData, "vendor_data": &ci.VendorData}[name]
}

// setting is the attribute value of a cloud_init setting, by name.
func (ci *Model) setting(name string) attr.Value {
	return map[string]attr.Value{"user": ci.User, "password": ci.Password, "ssh_keys": ci.SSHKeys, "ip_config": ci.IPConfig,
		"nameserver": ci.Nameserver, "searchdomain": ci.Searchdomain}[name]
}

func Block() schema.Block {
	return schema.SingleNestedBlock{
		Description: "Cloud-init settings; a cloud-init drive is added when the VM has none.",
		Attributes: map[string]schema.Attribute{
			"user":     schema.StringAttribute{Optional: true, Description: "Default user."},
			"password": schema.StringAttribute{Optional: true, Sensitive: true, Description: "Password of the default user."},
			"ssh_keys": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				Validators:  []validator.List{listvalidator.SizeAtLeast(1), listvalidator.ValueStringsAre(kit.SSHKeyCheck)},
				Description: "Public SSH keys, one authorized_keys line each, without its line break (`trimspace(file(\"~/.ssh/id_ed25519.pub\"))`)."},
			"ip_config": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				Validators:  []validator.List{listvalidator.SizeAtMost(32), listvalidator.ValueStringsAre(kit.IPConfigCheck)},
				Description: "One entry per NIC, e.g. `ip=dhcp` or `ip=10.0.0.5/24,gw=10.0.0.1`."},
			"nameserver": schema.StringAttribute{Optional: true, Validators: []validator.String{kit.NameserverCheck},
				Description: "DNS server addresses, separated by spaces or commas."},
			"searchdomain": schema.StringAttribute{Optional: true, Validators: []validator.String{kit.SearchdomainCheck},
				Description: "DNS search domains, separated by spaces or commas."},
			"user_data": schema.StringAttribute{Optional: true, Validators: []validator.String{SnippetCheck},
				Description: "Custom user-data: the volume id of an existing snippet, e.g. `local:snippets/user.yaml` (PVE's `cicustom` `user=`). " +
					"It replaces the user-data PVE generates, so it conflicts with `user`, `password` and `ssh_keys`. " + snippetDoc},
			"network_data": schema.StringAttribute{Optional: true, Validators: []validator.String{SnippetCheck},
				Description: "Custom network-config: the volume id of an existing snippet (`cicustom` `network=`). " +
					"It replaces the network config PVE generates, so it conflicts with `ip_config`, `nameserver` and `searchdomain`. " + snippetDoc},
			"vendor_data": schema.StringAttribute{Optional: true, Validators: []validator.String{SnippetCheck},
				Description: "Custom vendor-data: the volume id of an existing snippet (`cicustom` `vendor=`), applied along with the generated user-data. " + snippetDoc},
			"upgrade": schema.BoolAttribute{Optional: true,
				Description: "Upgrade the packages on the first boot (PVE's `ciupgrade`; PVE's default is true)."},
		},
	}
}

// snippetDoc is what every snippet attribute's description ends with.
const snippetDoc = "PVE has no API to upload snippets: copy the file into the snippets directory of a storage with the `snippets` content type " +
	"(on every node the VM may run on, unless the storage is shared). The plan checks the storage and, where it can list it, the file; " +
	"PVE reads the file when it starts the VM."

// Validate reports the settings PVE would ignore because a snippet replaces what it generates
// from them.
func (ci *Model) Validate(diags *diag.Diagnostics) {
	for _, c := range CicustomAttrs {
		if ci.Snippet(c.Attr).IsNull() {
			continue
		}
		for _, name := range c.replaces {
			if !ci.setting(name).IsNull() {
				diags.AddAttributeError(path.Root("cloud_init").AtName(name), "Conflicting cloud-init settings",
					fmt.Sprintf("cloud_init.%s and cloud_init.%s cannot both be set: with a custom %s snippet PVE ignores %s. "+
						"Put the setting into the snippet, or remove %s.", name, c.Attr, c.key, strings.Join(c.replaces, ", "), c.Attr))
			}
		}
	}
}

// Config renders the settings that are set into cfg.
func (ci *Model) Config(ctx context.Context, cfg map[string]string, diags *diag.Diagnostics) {
	kit.SetString(cfg, "ciuser", ci.User)
	kit.SetString(cfg, "cipassword", ci.Password)
	kit.SetString(cfg, "nameserver", ci.Nameserver)
	kit.SetString(cfg, "searchdomain", ci.Searchdomain)
	if !ci.SSHKeys.IsNull() && !ci.SSHKeys.IsUnknown() {
		var keys []string
		diags.Append(ci.SSHKeys.ElementsAs(ctx, &keys, false)...)
		cfg["sshkeys"] = EncodeSSHKeys(keys)
	}
	if !ci.IPConfig.IsNull() && !ci.IPConfig.IsUnknown() {
		var ips []string
		diags.Append(ci.IPConfig.ElementsAs(ctx, &ips, false)...)
		for i, ip := range ips {
			cfg[fmt.Sprintf("ipconfig%d", i)] = ip
		}
	}
	kit.SetBool(cfg, "ciupgrade", ci.Upgrade)
	var files []string
	for _, c := range CicustomAttrs {
		if v := *ci.Snippet(c.Attr); kit.Known(v) {
			files = append(files, c.key+"="+v.ValueString())
		}
	}
	if len(files) > 0 {
		cfg["cicustom"] = strings.Join(files, ",")
	}
}

// Read refreshes the settings the user manages (those not null) from cfg. PVE masks the
// password, so the planned one is kept.
func (ci *Model) Read(ctx context.Context, cfg map[string]string, diags *diag.Diagnostics) {
	readOptional := func(v *types.String, key string) {
		if !v.IsNull() {
			*v = types.StringValue(cfg[key])
		}
	}
	readOptional(&ci.User, "ciuser")
	readOptional(&ci.Nameserver, "nameserver")
	readOptional(&ci.Searchdomain, "searchdomain")
	files := kit.PropertyString(cfg["cicustom"], "")
	for _, c := range CicustomAttrs {
		if v := ci.Snippet(c.Attr); !v.IsNull() {
			*v = types.StringValue(files[c.key])
		}
	}
	if !ci.Upgrade.IsNull() {
		// Absent is PVE's default, on.
		ci.Upgrade = types.BoolValue(cfg["ciupgrade"] != "0")
	}
	var d diag.Diagnostics
	if !ci.SSHKeys.IsNull() {
		ci.SSHKeys, d = types.ListValueFrom(ctx, types.StringType, kit.NonNil(DecodeSSHKeys(cfg["sshkeys"])))
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
		ci.IPConfig, d = types.ListValueFrom(ctx, types.StringType, kit.NonNil(ips))
		diags.Append(d...)
	}
}

func HasDrive(cfg map[string]string) bool {
	for k, v := range cfg {
		if disk.Slot.MatchString(k) && strings.Contains(v, "cloudinit") {
			return true
		}
	}
	return false
}

// EncodeSSHKeys joins keys with newlines and URL-encodes them the way PVE stores them (%20,
// never +).
func EncodeSSHKeys(keys []string) string {
	return strings.ReplaceAll(url.QueryEscape(strings.Join(keys, "\n")), "+", "%20")
}

func DecodeSSHKeys(s string) []string {
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

// Import is the cloud_init block of an imported VM: every setting PVE has, or nil
// when the VM has neither a cloud-init drive nor settings. The password stays null, as PVE
// only shows it masked.
func Import(ctx context.Context, cfg map[string]string, diags *diag.Diagnostics) *Model {
	ci := &Model{SSHKeys: types.ListNull(types.StringType), IPConfig: types.ListNull(types.StringType)}
	found := HasDrive(cfg)
	// Settings PVE has become managed (non-null); read then fills them in.
	present := func(key string) bool {
		_, ok := cfg[key]
		found = found || ok
		return ok
	}
	for key, v := range map[string]*types.String{"ciuser": &ci.User, "nameserver": &ci.Nameserver, "searchdomain": &ci.Searchdomain} {
		if present(key) {
			*v = types.StringValue("")
		}
	}
	empty := types.ListValueMust(types.StringType, nil)
	if present("sshkeys") {
		ci.SSHKeys = empty
	}
	if present("ipconfig0") {
		ci.IPConfig = empty
	}
	if present("ciupgrade") {
		ci.Upgrade = types.BoolValue(true)
	}
	files := kit.PropertyString(cfg["cicustom"], "")
	for _, c := range CicustomAttrs {
		if _, ok := files[c.key]; ok {
			*ci.Snippet(c.Attr) = types.StringValue("")
		}
	}
	found = found || present("cipassword") || present("cicustom")
	if !found {
		return nil
	}
	ci.Read(ctx, cfg, diags)
	return ci
}

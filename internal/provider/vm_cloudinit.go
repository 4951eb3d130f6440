package provider

// The cloud_init block of qemuscheduler_vm: schema, the cloud-init drive, and the mapping to
// and from PVE's keys (ciuser, cipassword, sshkeys, ipconfigN, nameserver, searchdomain,
// cicustom, ciupgrade). Custom snippets are checked at plan against the cluster view.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

type cloudInitModel struct {
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

// snippetVolume is a snippet's volume id, STORAGE:snippets/FILE (PVE's storage id, and a file
// name without the comma that would end the cicustom entry).
var snippetVolume = regexp.MustCompile(`^(?i)([a-z][a-z0-9\-_.]*[a-z0-9]):snippets/([^/,]+)$`)

var snippetCheck = stringCheck{"snippet volume id", func(s string) error {
	if !snippetVolume.MatchString(s) {
		return errors.New("want STORAGE:snippets/FILE, the volume id of a file in a storage's snippets directory, e.g. local:snippets/user.yaml")
	}
	return nil
}}

// cicustomAttrs maps the snippet attributes to their cicustom keys; the settings PVE ignores
// once the snippet replaces the file it would generate from them are conflicts.
var cicustomAttrs = []struct {
	attr, key string
	replaces  []string
}{
	{"user_data", "user", []string{"user", "password", "ssh_keys"}},
	{"network_data", "network", []string{"ip_config", "nameserver", "searchdomain"}},
	{"vendor_data", "vendor", nil},
}

// snippet is the snippet attribute of that name.
func (ci *cloudInitModel) snippet(name string) *types.String {
	return map[string]*types.String{"user_data": &ci.UserData, "network_data": &ci.NetworkData, "vendor_data": &ci.VendorData}[name]
}

// setting is the attribute value of a cloud_init setting, by name.
func (ci *cloudInitModel) setting(name string) attr.Value {
	return map[string]attr.Value{"user": ci.User, "password": ci.Password, "ssh_keys": ci.SSHKeys, "ip_config": ci.IPConfig,
		"nameserver": ci.Nameserver, "searchdomain": ci.Searchdomain}[name]
}

func cloudInitBlock() schema.Block {
	return schema.SingleNestedBlock{
		Description: "Cloud-init settings; a cloud-init drive is added when the VM has none.",
		Attributes: map[string]schema.Attribute{
			"user":     schema.StringAttribute{Optional: true, Description: "Default user."},
			"password": schema.StringAttribute{Optional: true, Sensitive: true, Description: "Password of the default user."},
			"ssh_keys": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				Validators:  []validator.List{listvalidator.SizeAtLeast(1), listvalidator.ValueStringsAre(sshKeyCheck)},
				Description: "Public SSH keys, one authorized_keys line each, without its line break (`trimspace(file(\"~/.ssh/id_ed25519.pub\"))`)."},
			"ip_config": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				Validators:  []validator.List{listvalidator.SizeAtMost(32), listvalidator.ValueStringsAre(ipConfigCheck)},
				Description: "One entry per NIC, e.g. `ip=dhcp` or `ip=10.0.0.5/24,gw=10.0.0.1`."},
			"nameserver": schema.StringAttribute{Optional: true, Validators: []validator.String{nameserverCheck},
				Description: "DNS server addresses, separated by spaces or commas."},
			"searchdomain": schema.StringAttribute{Optional: true, Validators: []validator.String{searchdomainCheck},
				Description: "DNS search domains, separated by spaces or commas."},
			"user_data": schema.StringAttribute{Optional: true, Validators: []validator.String{snippetCheck},
				Description: "Custom user-data: the volume id of an existing snippet, e.g. `local:snippets/user.yaml` (PVE's `cicustom` `user=`). " +
					"It replaces the user-data PVE generates, so it conflicts with `user`, `password` and `ssh_keys`. " + snippetDoc},
			"network_data": schema.StringAttribute{Optional: true, Validators: []validator.String{snippetCheck},
				Description: "Custom network-config: the volume id of an existing snippet (`cicustom` `network=`). " +
					"It replaces the network config PVE generates, so it conflicts with `ip_config`, `nameserver` and `searchdomain`. " + snippetDoc},
			"vendor_data": schema.StringAttribute{Optional: true, Validators: []validator.String{snippetCheck},
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

// validate reports the settings PVE would ignore because a snippet replaces what it generates
// from them.
func (ci *cloudInitModel) validate(diags *diag.Diagnostics) {
	for _, c := range cicustomAttrs {
		if ci.snippet(c.attr).IsNull() {
			continue
		}
		for _, name := range c.replaces {
			if !ci.setting(name).IsNull() {
				diags.AddAttributeError(path.Root("cloud_init").AtName(name), "Conflicting cloud-init settings",
					fmt.Sprintf("cloud_init.%s and cloud_init.%s cannot both be set: with a custom %s snippet PVE ignores %s. "+
						"Put the setting into the snippet, or remove %s.", name, c.attr, c.key, strings.Join(c.replaces, ", "), c.attr))
			}
		}
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
	setBool(cfg, "ciupgrade", ci.Upgrade)
	var files []string
	for _, c := range cicustomAttrs {
		if v := *ci.snippet(c.attr); known(v) {
			files = append(files, c.key+"="+v.ValueString())
		}
	}
	if len(files) > 0 {
		cfg["cicustom"] = strings.Join(files, ",")
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
	files := propertyString(cfg["cicustom"], "")
	for _, c := range cicustomAttrs {
		if v := ci.snippet(c.attr); !v.IsNull() {
			*v = types.StringValue(files[c.key])
		}
	}
	if !ci.Upgrade.IsNull() {
		// Absent is PVE's default, on.
		ci.Upgrade = types.BoolValue(cfg["ciupgrade"] != "0")
	}
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

// completeCloudInit completes the cloud-init settings in set for a VM whose config is cfg
// (nil before it exists): a cicustom meta file set outside Terraform is kept, and a cloud-init
// drive is added unless cfg has one, on ide2 as PVE's GUI does, else on the first IDE slot
// that neither cfg nor the planned disks use.
func (m *vmModel) completeCloudInit(cfg, set map[string]string, storage string) error {
	if m.CloudInit == nil {
		return nil
	}
	if meta := propertyString(cfg["cicustom"], "")["meta"]; meta != "" && set["cicustom"] != "" {
		set["cicustom"] += ",meta=" + meta
	}
	if hasCloudInitDrive(cfg) {
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

// importCloudInit is the cloud_init block of an imported VM: every setting PVE has, or nil
// when the VM has neither a cloud-init drive nor settings. The password stays null, as PVE
// only shows it masked.
func importCloudInit(ctx context.Context, cfg map[string]string, diags *diag.Diagnostics) *cloudInitModel {
	ci := &cloudInitModel{SSHKeys: types.ListNull(types.StringType), IPConfig: types.ListNull(types.StringType)}
	found := hasCloudInitDrive(cfg)
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
	files := propertyString(cfg["cicustom"], "")
	for _, c := range cicustomAttrs {
		if _, ok := files[c.key]; ok {
			*ci.snippet(c.attr) = types.StringValue("")
		}
	}
	found = found || present("cipassword") || present("cicustom")
	if !found {
		return nil
	}
	ci.read(ctx, cfg, diags)
	return ci
}

// checkSnippets checks the snippet volumes a plan sets (all of a new VM's, those that change
// or move to another node for an existing one, state then being its prior state) against the
// cluster view, as PVE would when it starts the VM: the storage must exist and have the
// snippets content type, be available on the VM's node (none while the scheduler has not
// chosen it), and hold the file. The file is looked for where it can be told: on the VM's
// node, or on an online node for a shared storage.
func (r *vmResource) checkSnippets(ctx context.Context, plan, state *vmModel, snap scheduler.Snapshot, diags *diag.Diagnostics) {
	ci, node := plan.CloudInit, plan.Node.ValueString()
	if ci == nil {
		return
	}
	prior := state.CloudInit
	if node != state.Node.ValueString() {
		prior = nil
	}
	for _, c := range cicustomAttrs {
		v := *ci.snippet(c.attr)
		m := snippetVolume.FindStringSubmatch(v.ValueString())
		switch {
		case !known(v) || m == nil:
			continue // unknown until apply, or malformed (the validator says so)
		case prior != nil && prior.snippet(c.attr).Equal(v):
			continue
		}
		volid, storage, at := m[0], m[1], path.Root("cloud_init").AtName(c.attr)
		var found, onNode bool
		var content []string
		lister := ""
		for _, n := range snap.Nodes {
			for _, st := range n.Storages {
				if st.Name != storage {
					continue
				}
				found, content = true, st.Content
				onNode = onNode || n.Name == node
				// Any node lists a shared storage: the first online one, so that VMs share it.
				if st.Shared && n.Online && lister == "" || !st.Shared && n.Name == node {
					lister = n.Name
				}
			}
		}
		switch {
		case !found:
			diags.AddAttributeError(at, "Snippet storage does not exist",
				fmt.Sprintf("cloud_init.%s = %q: the cluster has no storage %q. Use a storage with the snippets content type, e.g. local:snippets/FILE. %s", c.attr, volid, storage, destroyAnyway))
			continue
		case !slices.Contains(content, "snippets"):
			diags.AddAttributeError(at, "Storage holds no snippets",
				fmt.Sprintf("cloud_init.%s = %q: storage %q has no snippets content type (content: %s). Enable snippets on it (Datacenter > Storage > Edit > Content), or use a storage that has it. %s",
					c.attr, volid, storage, strings.Join(content, ", "), destroyAnyway))
			continue
		case node != "" && !onNode:
			diags.AddAttributeError(at, "Snippet storage not on the VM's node",
				fmt.Sprintf("cloud_init.%s = %q: storage %q is not available on node %s, where the VM runs. Use a storage the node has. %s", c.attr, volid, storage, node, destroyAnyway))
			continue
		case lister == "":
			continue // a local storage of a node the scheduler has still to choose
		}
		files, err := r.data.snippetFiles(ctx, lister, storage, false)
		if err == nil && !slices.Contains(files, volid) {
			// The shared listing may predate the file: Terraform plans the VM again at apply right
			// after the resource that uploads it (bpg's proxmox_virtual_environment_file).
			files, err = r.data.snippetFiles(ctx, lister, storage, true)
		}
		if err != nil {
			diags.AddAttributeWarning(at, "Cannot check the snippet", fmt.Sprintf("Listing the snippets of %s on %s failed, so %s is not checked: %s", storage, lister, volid, err))
			continue
		}
		if !slices.Contains(files, volid) {
			diags.AddAttributeError(at, "Snippet not found",
				fmt.Sprintf("cloud_init.%s = %q: storage %s on %s has no such snippet, so PVE would fail to start the VM. Copy the file into the storage's snippets directory, or fix the name (snippets there: %s). %s",
					c.attr, volid, storage, lister, listOrNone(files), destroyAnyway))
		}
	}
}

func listOrNone(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	return strings.Join(items, ", ")
}

// snippetLists caches snippet listings by node and storage for as long as the cluster view is
// shared, so that the plans of many VMs using one snippet list it once.
type snippetLists struct {
	mu    sync.Mutex
	lists map[string]snippetList
}

type snippetList struct {
	readAt time.Time
	files  []string
}

// snippetFiles lists the snippets of storage on node, read at most maxAge ago, or read now
// when fresh.
func (p *providerData) snippetFiles(ctx context.Context, node, storage string, fresh bool) ([]string, error) {
	c := &p.snippets
	c.mu.Lock()
	defer c.mu.Unlock()
	key := node + "/" + storage
	if l, ok := c.lists[key]; ok && !fresh && time.Since(l.readAt) < p.maxAge {
		return l.files, nil
	}
	files, err := p.client.Snippets(ctx, node, storage)
	if err != nil {
		return nil, err
	}
	if c.lists == nil {
		c.lists = map[string]snippetList{}
	}
	c.lists[key] = snippetList{time.Now(), files}
	return files, nil
}

package provider

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/changeset"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/planhints"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/plugins"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/datasources"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/kit"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/scheduling"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/vmresource"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/reservations"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// New returns the provider factory for a version.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &qemuProvider{version: version} }
}

type qemuProvider struct {
	version string
	// snapshotAge replaces defaultSnapshotAge when set: tests that count requests make it
	// longer than any run, so that the counts do not depend on the machine's speed.
	snapshotAge time.Duration
}

type providerModel struct {
	Endpoint         types.String                  `tfsdk:"endpoint"`
	APIToken         types.String                  `tfsdk:"api_token"`
	Username         types.String                  `tfsdk:"username"`
	Password         types.String                  `tfsdk:"password"`
	Insecure         types.Bool                    `tfsdk:"insecure"`
	CACert           types.String                  `tfsdk:"ca_cert"`
	PluginConfigYAML types.String                  `tfsdk:"plugin_config_yaml"`
	PluginConfig     *scheduling.PluginConfigModel `tfsdk:"plugin_config"`
	// Profiles and Nodes are lists of config.ProfileModel and config.NodeBlockModel, unknown
	// where a dynamic block is (decodeBlocks).
	Profiles        types.List `tfsdk:"profile"`
	Nodes           types.List `tfsdk:"node"`
	ReadNodeNotes   types.Bool `tfsdk:"read_node_notes"`
	HonorProxLBTags types.Bool `tfsdk:"honor_proxlb_tags"`
}

func (p *qemuProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "qemuscheduler"
	resp.Version = p.version
}

func (p *qemuProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Decides where a QEMU VM runs in a Proxmox VE cluster and which VMID it gets (filter, score, select, " +
			"as the CAPPX qemu-scheduler), explains every decision, and creates the VM there.",
		Attributes: map[string]schema.Attribute{
			"endpoint": schema.StringAttribute{Optional: true,
				Description: "Proxmox VE API URL, e.g. `https://pve.example.com:8006` (with or without `/api2/json`). Env: `" + config.EnvEndpoint + "`."},
			"api_token": schema.StringAttribute{Optional: true, Sensitive: true,
				Description: "API token `USER@REALM!TOKENID=SECRET`. Env: `" + config.EnvToken + "`. Conflicts with `password`."},
			"username": schema.StringAttribute{Optional: true,
				Description: "User for ticket login, with realm, e.g. `root@pam`. Env: `" + config.EnvUsername + "`."},
			"password": schema.StringAttribute{Optional: true, Sensitive: true,
				Description: "Password for ticket login. Env: `" + config.EnvPassword + "`."},
			"insecure": schema.BoolAttribute{Optional: true,
				Description: "Skip TLS certificate verification. Default false. Env: `" + config.EnvInsecure + "`."},
			"ca_cert": schema.StringAttribute{Optional: true,
				Description: "PEM certificate(s) of the CA that signed the PVE API certificate, for private CAs."},
			"plugin_config_yaml": schema.StringAttribute{Optional: true,
				Description: scheduling.PluginConfigYAMLDescription + " Default for every data source and resource of this provider."},
			"read_node_notes":   schema.BoolAttribute{Optional: true, Description: config.ReadNodeNotesDescription},
			"honor_proxlb_tags": schema.BoolAttribute{Optional: true, Description: scheduling.HonorProxLBDescription},
		},
		Blocks: map[string]schema.Block{"plugin_config": scheduling.PluginConfigBlock(config.ProviderKit), "profile": config.ProviderProfileBlock(), "node": config.ProviderNodeBlock()},
	}
	kit.MarkWholeNumbers(resp.Schema.Attributes, resp.Schema.Blocks)
}

// ValidateConfig checks what is known at plan time, each error on its attribute.
func (p *qemuProvider) ValidateConfig(ctx context.Context, req provider.ValidateConfigRequest, resp *provider.ValidateConfigResponse) {
	var m providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	validateConnection(&resp.Diagnostics, m)
	_, _, diags := scheduling.SchedulingLayers(ctx, path.Empty(), m.PluginConfigYAML, m.PluginConfig)
	resp.Diagnostics.Append(diags...)
	b := decodeBlocks(ctx, m, &resp.Diagnostics)
	_, diags = config.ProfileLayers(ctx, b.profiles)
	resp.Diagnostics.Append(diags...)
	_, diags = config.ProfileDefaults(ctx, b.profiles)
	resp.Diagnostics.Append(diags...)
	_, diags = config.NodeBlocks(ctx, b.nodes)
	resp.Diagnostics.Append(diags...)
}

func validateConnection(diags *diag.Diagnostics, m providerModel) {
	if kit.Known(m.Endpoint) {
		if _, err := proxmox.NormalizeEndpoint(m.Endpoint.ValueString()); err != nil {
			diags.AddAttributeError(path.Root("endpoint"), "Invalid endpoint", err.Error())
		}
	}
	if kit.Known(m.APIToken) {
		if _, _, err := proxmox.ParseAPIToken(m.APIToken.ValueString()); err != nil {
			diags.AddAttributeError(path.Root("api_token"), "Invalid API token", err.Error())
		}
		if kit.Known(m.Password) {
			diags.AddAttributeError(path.Root("password"), "Conflicting credentials",
				"Give either api_token or username and password, not both.")
		}
	}
	if kit.Known(m.CACert) {
		if err := checkPEM(m.CACert.ValueString()); err != nil {
			diags.AddAttributeError(path.Root("ca_cert"), "Invalid CA certificate", err.Error())
		}
	}
}

// checkPEM requires at least one parseable certificate and nothing else.
func checkPEM(text string) error {
	rest := []byte(text)
	count := 0
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if _, err := x509.ParseCertificate(block.Bytes); block.Type != "CERTIFICATE" || err != nil {
			return fmt.Errorf("ca_cert block %d is not a valid certificate: want PEM blocks -----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----", count+1)
		}
		count++
	}
	switch name := strings.TrimSpace(text); {
	case count == 0 && name != "" && !strings.ContainsAny(name, " \t\n") && (strings.ContainsRune(name, '/') || strings.HasSuffix(name, ".pem") || strings.HasSuffix(name, ".crt")):
		// The file's name instead of its content, the usual slip.
		return fmt.Errorf("ca_cert is %q, a file name: write ca_cert = file(%q) to pass the certificate it holds", name, name)
	case count == 0:
		return fmt.Errorf("ca_cert must hold at least one PEM certificate (-----BEGIN CERTIFICATE----- ...)")
	}
	return nil
}

func (p *qemuProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var m providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	for attr, v := range map[string]types.String{"endpoint": m.Endpoint, "api_token": m.APIToken, "username": m.Username, "password": m.Password, "ca_cert": m.CACert} {
		if v.IsUnknown() {
			if req.ClientCapabilities.DeferralAllowed {
				resp.Deferred = &provider.Deferred{Reason: provider.DeferredReasonProviderConfigUnknown}
				return
			}
			resp.Diagnostics.AddAttributeError(path.Root(attr), "Unknown provider configuration",
				"The provider cannot connect before "+attr+" is known. Set it to a value known at plan time, or apply the resource it depends on first ("+changeset.CLI("apply -target=ADDRESS")+").")
			return
		}
	}
	cfg := proxmox.Config{
		Endpoint:  valueOrEnv(m.Endpoint, config.EnvEndpoint),
		APIToken:  valueOrEnv(m.APIToken, config.EnvToken),
		Username:  valueOrEnv(m.Username, config.EnvUsername),
		Password:  valueOrEnv(m.Password, config.EnvPassword),
		CACertPEM: m.CACert.ValueString(),
		UserAgent: "terraform-provider-qemuscheduler/" + p.version,
	}
	// Values from the environment are checked here, naming their variable: ValidateConfig sees
	// only the provider block, which does not hold them.
	for _, e := range []struct {
		attr, env string
		value     types.String
		check     func(string) error
	}{
		{"endpoint", config.EnvEndpoint, m.Endpoint, func(v string) error { _, err := proxmox.NormalizeEndpoint(v); return err }},
		{"api_token", config.EnvToken, m.APIToken, func(v string) error { _, _, err := proxmox.ParseAPIToken(v); return err }},
	} {
		if v := os.Getenv(e.env); e.value.IsNull() && v != "" {
			if err := e.check(v); err != nil {
				resp.Diagnostics.AddAttributeError(path.Root(e.attr), "Invalid "+e.env,
					fmt.Sprintf("%s: %v. Fix the environment variable, or set %s in the provider block.", e.env, err, e.attr))
			}
		}
	}
	if resp.Diagnostics.HasError() {
		return
	}
	cfg.Insecure = m.Insecure.ValueBool()
	if v := os.Getenv(config.EnvInsecure); m.Insecure.IsNull() && v != "" {
		insecure, err := strconv.ParseBool(v)
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("insecure"), "Invalid "+config.EnvInsecure,
				fmt.Sprintf("%s is %q, not a boolean: set it to true or false (or set insecure in the provider block).", config.EnvInsecure, v))
			return
		}
		cfg.Insecure = insecure
	}
	for _, secret := range []string{cfg.APIToken, cfg.Password} {
		if secret != "" { // masking "" would garble every log value
			ctx = tflog.MaskAllFieldValuesStrings(ctx, secret)
		}
	}
	ctx = tflog.MaskFieldValuesWithFieldKeys(ctx, "api_token", "password")
	switch {
	case cfg.Endpoint == "":
		resp.Diagnostics.AddAttributeError(path.Root("endpoint"), "Missing Proxmox VE endpoint",
			"Set endpoint in the provider block or the "+config.EnvEndpoint+" environment variable, e.g. https://pve.example.com:8006.")
		return
	case cfg.APIToken == "" && (cfg.Username == "" || cfg.Password == ""):
		resp.Diagnostics.AddAttributeError(path.Root("api_token"), "Missing Proxmox VE credentials",
			"Set api_token ("+config.EnvToken+"), or username and password ("+config.EnvUsername+", "+config.EnvPassword+").")
		return
	}
	client, err := proxmox.New(cfg)
	if err != nil {
		resp.Diagnostics.AddError("Invalid Proxmox VE connection settings", err.Error())
		return
	}
	yamlCfg, blockCfg, diags := scheduling.SchedulingLayers(ctx, path.Empty(), m.PluginConfigYAML, m.PluginConfig)
	resp.Diagnostics.Append(diags...)
	b := decodeBlocks(ctx, m, &resp.Diagnostics)
	if b.unknown != "" {
		if req.ClientCapabilities.DeferralAllowed {
			resp.Deferred = &provider.Deferred{Reason: provider.DeferredReasonProviderConfigUnknown}
			return
		}
		resp.Diagnostics.AddAttributeError(path.Root(b.unknown), "Unknown provider configuration",
			"The provider cannot place VMs before its "+b.unknown+" blocks are known. Generate them from values known at plan time (variables, locals), "+
				"or apply the resource they depend on first ("+changeset.CLI("apply -target=ADDRESS")+").")
		return
	}
	profiles, diags := config.ProfileLayers(ctx, b.profiles)
	resp.Diagnostics.Append(diags...)
	defaults, diags := config.ProfileDefaults(ctx, b.profiles)
	resp.Diagnostics.Append(diags...)
	blocks, diags := config.NodeBlocks(ctx, b.nodes)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	var notes *proxmox.NotesCache
	if m.ReadNodeNotes.ValueBool() {
		notes = proxmox.NewNotesCache(client)
	}
	tflog.Debug(ctx, "configured Proxmox VE client", map[string]any{"endpoint": cfg.Endpoint, "api_token": cfg.APIToken})
	ledger := reservations.New()
	data := &config.Data{Client: client, Defaults: scheduler.MergePluginConfigs(plugins.ProxLBConfig(!m.HonorProxLBTags.Equal(types.BoolValue(false))), yamlCfg, blockCfg),
		Profiles: profiles, Ledger: ledger, Changes: changeset.New(planhints.New(cfg.Endpoint), ledger), Nodes: config.NewNodePolicy(blocks, notes), MaxAge: p.snapshotAge}
	if data.MaxAge == 0 {
		data.MaxAge = config.DefaultSnapshotAge
	}
	data.Changes.View = data.Snapshot
	data.Changes.Warn = func(ctx context.Context, msg string, err error) {
		tflog.Warn(ctx, msg, map[string]any{"error": err.Error()})
	}
	data.Records = config.NewGuestRecords(client, data.Nodes.Queue)
	data.ProfileDefaults = defaults
	resp.DataSourceData = data
	resp.ResourceData = data
}

func valueOrEnv(v types.String, env string) string {
	if !v.IsNull() {
		return v.ValueString()
	}
	return os.Getenv(env)
}

func (p *qemuProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{vmresource.NewResource}
}

func (p *qemuProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{datasources.NewPlacementDataSource, datasources.NewNodesDataSource, datasources.NewRebalanceDataSource}
}

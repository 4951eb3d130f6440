package provider

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-log/tflogtest"
)

// configFor builds a provider configuration holding the given string attributes (the rest null).
func configFor(t *testing.T, p provider.Provider, attrs map[string]string) tfsdk.Config {
	t.Helper()
	var sresp provider.SchemaResponse
	p.Schema(context.Background(), provider.SchemaRequest{}, &sresp)
	typ := sresp.Schema.Type().TerraformType(context.Background()).(tftypes.Object)
	vals := map[string]tftypes.Value{}
	for name, at := range typ.AttributeTypes {
		vals[name] = tftypes.NewValue(at, nil)
	}
	for name, v := range attrs {
		vals[name] = tftypes.NewValue(tftypes.String, v)
	}
	return tfsdk.Config{Schema: sresp.Schema, Raw: tftypes.NewValue(typ, vals)}
}

// Secrets given to the provider never reach the logs, whatever field they end up in.
func TestConfigureMasksSecrets(t *testing.T) {
	const token, password = "root@pam!ci=0f1e2d3c-token-secret", "pw-Secret-42"
	tests := []struct {
		name   string
		attrs  map[string]string
		secret string
	}{
		{"api token", map[string]string{"endpoint": "https://pve.example.com:8006", "api_token": token}, "0f1e2d3c-token-secret"},
		{"password", map[string]string{"endpoint": "https://pve.example.com:8006", "username": "root@pam", "password": password}, password},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			ctx := tflogtest.RootLogger(context.Background(), &logs)
			p := New("test")()
			var resp provider.ConfigureResponse
			p.Configure(ctx, provider.ConfigureRequest{Config: configFor(t, p, tt.attrs)}, &resp)
			if resp.Diagnostics.HasError() {
				t.Fatalf("Configure: %v", resp.Diagnostics)
			}
			if resp.DataSourceData == nil {
				t.Fatal("Configure handed no data to data sources")
			}
			if !strings.Contains(logs.String(), "pve.example.com") {
				t.Fatalf("the configuration log line is missing, logs: %s", logs.String())
			}
			if strings.Contains(logs.String(), tt.secret) {
				t.Errorf("secret %q logged: %s", tt.secret, logs.String())
			}
		})
	}
}

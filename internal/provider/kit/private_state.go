package kit

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
)

type PrivateState interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

package network

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestNetworkRoundTrip(t *testing.T) {
	tests := []struct {
		n    Model
		want string
	}{
		{Model{Model: types.StringValue("virtio"), Bridge: types.StringValue("vmbr0"), VLAN: types.Int64Null(), Firewall: types.BoolValue(false), MAC: types.StringUnknown()},
			"virtio,bridge=vmbr0"},
		{Model{Model: types.StringValue("e1000"), Bridge: types.StringValue("vmbr1"), VLAN: types.Int64Value(20), Firewall: types.BoolValue(true), MAC: types.StringValue("BC:24:11:00:00:01")},
			"e1000=BC:24:11:00:00:01,bridge=vmbr1,tag=20,firewall=1"},
	}
	for _, tt := range tests {
		if got := tt.n.render(); got != tt.want {
			t.Errorf("render = %q, want %q", got, tt.want)
		}
	}
	back := Parse("net1", "e1000=BC:24:11:00:00:01,bridge=vmbr1,tag=20,firewall=1,queues=2")
	if back.Model.ValueString() != "e1000" || back.MAC.ValueString() != "BC:24:11:00:00:01" || back.Bridge.ValueString() != "vmbr1" ||
		back.VLAN.ValueInt64() != 20 || !back.Firewall.ValueBool() || back.Slot.ValueString() != "net1" {
		t.Errorf("parseNetwork = %+v", back)
	}
}

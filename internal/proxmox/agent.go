package proxmox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrAgentUnavailable means the guest agent cannot answer (yet): the VM is not running, has
// no agent configured, or its agent has not started.
var ErrAgentUnavailable = errors.New("guest agent unavailable")

// Interface is a network interface as the guest agent reports it.
type Interface struct {
	Name, MAC  string
	IPv4, IPv6 []string // addresses without prefix length
}

// AgentInterfaces asks the guest agent for the VM's network interfaces (GET
// .../agent/network-get-interfaces). PVE's 500s for a stopped VM, a VM without agent and an
// agent that is not running are ErrAgentUnavailable.
func (c *Client) AgentInterfaces(ctx context.Context, node string, vmid int) ([]Interface, error) {
	var answer struct {
		Result []struct {
			Name      string `json:"name"`
			MAC       string `json:"hardware-address"`
			Addresses []struct {
				IP   string `json:"ip-address"`
				Type string `json:"ip-address-type"`
			} `json:"ip-addresses"`
		} `json:"result"`
	}
	op := fmt.Sprintf("read the network interfaces of VM %d from its guest agent", vmid)
	err := c.call(ctx, op, func(ctx context.Context) error {
		return c.api.Get(ctx, vmPath(node, vmid)+"/agent/network-get-interfaces", &answer)
	})
	var apiErr *APIError
	if errors.As(err, &apiErr) && agentUnavailable(apiErr.Message) {
		apiErr.kind = ErrAgentUnavailable
	}
	if err != nil {
		return nil, err
	}
	out := make([]Interface, 0, len(answer.Result))
	for _, r := range answer.Result {
		it := Interface{Name: r.Name, MAC: r.MAC}
		for _, a := range r.Addresses {
			switch a.Type {
			case "ipv4":
				it.IPv4 = append(it.IPv4, a.IP)
			case "ipv6":
				it.IPv6 = append(it.IPv6, a.IP)
			}
		}
		out = append(out, it)
	}
	return out, nil
}

func agentUnavailable(msg string) bool {
	for _, s := range []string{"QEMU guest agent is not running", "No QEMU guest agent configured", "is not running"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// WaitAgentInterfaces polls the guest agent until it answers or timeout passes; then it
// returns the last ErrAgentUnavailable error. Other errors end the wait at once.
func (c *Client) WaitAgentInterfaces(ctx context.Context, node string, vmid int, timeout time.Duration) ([]Interface, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		ifaces, err := c.AgentInterfaces(ctx, node, vmid)
		switch {
		case err == nil:
			return ifaces, nil
		case errors.Is(err, ErrAgentUnavailable):
			last = err
		case ctx.Err() == nil || last == nil:
			return nil, err
		}
		if ctx.Err() != nil || !c.sleep(ctx) {
			return nil, fmt.Errorf("%w (waited %s)", last, timeout)
		}
	}
}

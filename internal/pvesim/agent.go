package pvesim

// The QEMU guest agent's network-get-interfaces, as PVE proxies it: refused while the VM is
// stopped, has no agent configured or its agent has not come up yet, then one fake address per
// NIC (the static ipconfigN address, else a DHCP-style one derived from the VMID) besides
// loopback and a link-local IPv6 address from the MAC.

import (
	"fmt"
	"net/http"
	"net/netip"
	"sort"
	"strings"
)

// WithAgentDelay makes a VM's guest agent answer only from the n+1th call after each start
// (default 1: the first call after a start meets "QEMU guest agent is not running").
func WithAgentDelay(n int) Option { return func(s *Server) { s.agentDelay = n } }

// BreakAgent makes the guest agent of vmid never answer, as in an image without the agent
// installed.
func (s *Server) BreakAgent(vmid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.brokenAgents[vmid] = true
}

// boot marks g running: its guest agent starts over.
func (g *guest) boot() {
	g.status = "running"
	g.agentCalls = 0
}

// agentEnabled reads the agent key ("1", "enabled=1,...").
func agentEnabled(value string) bool {
	a, msg := parsePropertyString(agentFormat, value, "")
	return msg == "" && a["enabled"] == "1"
}

func (s *Server) handleAgentInterfaces(w http.ResponseWriter, r *http.Request, g *guest) {
	cfg := g.config // the running VM's, pending changes aside
	switch {
	case g.status != "running":
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("VM %d is not running", g.vmid))
		return
	case !agentEnabled(cfg["agent"]):
		writeError(w, http.StatusInternalServerError, "No QEMU guest agent configured")
		return
	}
	g.agentCalls++
	if s.brokenAgents[g.vmid] || g.agentCalls <= s.agentDelay {
		writeError(w, http.StatusInternalServerError, "QEMU guest agent is not running")
		return
	}
	ifaces := []map[string]any{agentInterface("lo", "00:00:00:00:00:00", []agentAddr{{"127.0.0.1", 8}, {"::1", 128}})}
	var nets []int
	for k := range cfg {
		if m := indexedKey.FindStringSubmatch(k); m != nil && m[1] == "net" {
			nets = append(nets, atoi(m[2]))
		}
	}
	sort.Ints(nets)
	for i, n := range nets {
		nic, msg := parsePropertyString(netFormat, cfg[fmt.Sprintf("net%d", n)], "")
		if msg != "" || nic["link_down"] == "1" {
			continue
		}
		mac := strings.ToLower(nic["macaddr"])
		ipc, _ := parsePropertyString(ipconfigFormat, cfg[fmt.Sprintf("ipconfig%d", n)], "")
		addrs := []agentAddr{guestIPv4(ipc["ip"], g.vmid, n)}
		if ip6 := ipc["ip6"]; validCIDR(ip6, false) {
			addrs = append(addrs, cidrAddr(ip6))
		}
		addrs = append(addrs, linkLocal(mac))
		ifaces = append(ifaces, agentInterface(fmt.Sprintf("eth%d", i), mac, addrs))
	}
	writeData(w, map[string]any{"result": ifaces})
}

type agentAddr struct {
	ip     string
	prefix int
}

func agentInterface(name, mac string, addrs []agentAddr) map[string]any {
	list := make([]map[string]any, len(addrs))
	for i, a := range addrs {
		typ := "ipv4"
		if strings.Contains(a.ip, ":") {
			typ = "ipv6"
		}
		list[i] = map[string]any{"ip-address": a.ip, "ip-address-type": typ, "prefix": a.prefix}
	}
	return map[string]any{"name": name, "hardware-address": mac, "ip-addresses": list,
		"statistics": map[string]any{"rx-bytes": 0, "rx-dropped": 0, "rx-errs": 0, "rx-packets": 0,
			"tx-bytes": 0, "tx-dropped": 0, "tx-errs": 0, "tx-packets": 0}}
}

// guestIPv4 is the address the guest has on NIC n: the static one of its ipconfig, else one
// a DHCP server could have leased, unique per VMID and NIC.
func guestIPv4(ip string, vmid, n int) agentAddr {
	if validCIDR(ip, true) {
		return cidrAddr(ip)
	}
	return agentAddr{fmt.Sprintf("10.%d.%d.%d", 10+n, vmid>>8&0xff, vmid&0xff), 16}
}

func cidrAddr(cidr string) agentAddr {
	p := netip.MustParsePrefix(cidr)
	return agentAddr{p.Addr().String(), p.Bits()}
}

// linkLocal is the EUI-64 link-local address of a MAC.
func linkLocal(mac string) agentAddr {
	var b [6]byte
	if _, err := fmt.Sscanf(mac, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]); err != nil {
		return agentAddr{"fe80::1", 64}
	}
	a := netip.AddrFrom16([16]byte{0xfe, 0x80, 8: b[0] ^ 2, b[1], b[2], 0xff, 0xfe, b[3], b[4], b[5]})
	return agentAddr{a.String(), 64}
}

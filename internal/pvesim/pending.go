package pvesim

import (
	"net/http"
	"strings"
)

// PVE applies a config change to a running VM only if it can be hot-plugged; the rest waits in
// the config's [PENDING] section until the VM next starts. A config GET shows the pending
// values (current=1 shows the running ones), while /cluster/resources, which reports the
// running process, keeps the old sizes.

// fastPlug are keys PVE changes at once even on a running VM.
var fastPlug = map[string]bool{"description": true, "hookscript": true, "name": true, "onboot": true, "protection": true,
	"shares": true, "startup": true, "tags": true, "vmstatestorage": true, "balloon": true, "cpulimit": true, "cpuunits": true}

// hotpluggable reports whether key applies at once to g while it runs, given its hotplug
// setting (default network,disk,usb).
func (g *guest) hotpluggable(key, value string) bool {
	hotplug := g.config["hotplug"]
	switch hotplug {
	case "", "1":
		hotplug = "network,disk,usb"
	case "0":
		hotplug = ""
	}
	can := func(what string) bool { return contains(strings.Split(hotplug, ","), what) }
	switch {
	case fastPlug[key], strings.HasPrefix(key, "unused"):
		return true
	case strings.HasPrefix(key, "net"):
		return can("network")
	case strings.HasPrefix(key, "usb"):
		return can("usb")
	case strings.HasPrefix(key, "ide") && (isCDROM(value) || isCDROM(g.config[key])):
		return true // a cd-rom's medium changes live
	case diskKey.MatchString(key):
		// An existing disk's options change without hotplug, except those QEMU sets at start
		// (vmconfig_update_disk); a new disk needs disk hotplug and a bus that has it.
		if same, cold := diskOptionChange(key, g.config[key], value); same {
			return !cold
		}
		return can("disk") && !strings.HasPrefix(key, "ide") && !strings.HasPrefix(key, "sata")
	case key == "vcpus":
		return can("cpu")
	case key == "memory":
		return can("memory")
	}
	return false
}

// coldDriveOptions are the drive options vmconfig_update_disk leaves pending on a running VM.
var coldDriveOptions = []string{"aio", "discard", "iothread", "queues", "product", "cache", "ssd", "vendor", "ro"}

// diskOptionChange compares the new value of disk key with its old one: whether it keeps the
// volume (of a disk, not a cd-rom), and whether it changes an option that waits for a start.
func diskOptionChange(key, old, value string) (sameVolume, cold bool) {
	if old == "" || isCDROM(old) {
		return false, false
	}
	f := driveFormatOf(key)
	a, _ := parsePropertyString(f, old, key)
	b, _ := parsePropertyString(f, value, key)
	if a == nil || b == nil || a["file"] != b["file"] {
		return false, false
	}
	for _, o := range coldDriveOptions {
		va, seta := a[o]
		vb, setb := b[o]
		if seta != setb || va != vb {
			return true, true
		}
	}
	return true, false
}

// set changes a config key, or queues it while the VM runs and cannot take it live. A value
// equal to the current one cancels the key's pending change instead, as update_vm's
// cleanup_pending (pve-guest-common AbstractConfig.pm) drops pending values that match the
// config.
func (g *guest) set(key, value string) {
	if g.status == "running" && !g.hotpluggable(key, value) {
		if current, has := g.config[key]; has && current == value {
			delete(g.pending, key)
			return
		}
		if g.pending == nil {
			g.pending = map[string]string{}
		}
		g.pending[key] = value
		return
	}
	delete(g.pending, key)
	g.config[key] = value
}

// unset deletes a config key, or queues the deletion like set; cleanup_pending drops the
// pending deletion of a key the config does not have (only a pending value is dropped).
func (g *guest) unset(key string) {
	if g.status == "running" && !g.hotpluggable(key, "") {
		if _, has := g.config[key]; !has {
			delete(g.pending, key)
			return
		}
		if g.pending == nil {
			g.pending = map[string]string{}
		}
		g.pending[key] = deleted
		return
	}
	delete(g.pending, key)
	delete(g.config, key)
}

// deleted marks a pending deletion (no config value contains a NUL).
const deleted = "\x00"

// applyPending moves the pending section into the config, as a start (or a change to a
// stopped VM) does.
func (g *guest) applyPending() {
	for k, v := range g.pending {
		if v == deleted {
			delete(g.config, k)
		} else {
			g.config[k] = v
		}
	}
	g.pending = nil
}

// view is the config with the pending values applied: what a config GET shows.
func (g *guest) view() map[string]string {
	out := make(map[string]string, len(g.config)+len(g.pending))
	for k, v := range g.config {
		out[k] = v
	}
	for k, v := range g.pending {
		if v == deleted {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// handlePending is GET .../qemu/{vmid}/pending: every key with its running value and, when a
// change waits, the pending value or delete=1.
func (s *Server) handlePending(w http.ResponseWriter, r *http.Request, g *guest) {
	live, next := renderConfig(g.config), renderConfig(g.view())
	rows := []map[string]any{}
	for _, k := range sortedKeys(g.view()) {
		row := map[string]any{"key": k}
		if v, ok := live[k]; ok {
			row["value"] = v
		}
		if _, waits := g.pending[k]; waits {
			row["pending"] = next[k]
		}
		rows = append(rows, row)
	}
	for _, k := range sortedKeys(g.pending) {
		if g.pending[k] == deleted {
			rows = append(rows, map[string]any{"key": k, "value": live[k], "delete": 1})
		}
	}
	writeData(w, rows)
}

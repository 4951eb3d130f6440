package pvesim

import (
	"fmt"
	"regexp"
	"strings"
)

// Options only root@pam may set, as qemu-server's API2/Qemu.pm decides: a user other than
// root@pam, which includes root@pam's API tokens ("root@pam!id" is not "root@pam"), needs a
// privilege for each option of $check_vm_modify_config_perm's lists, and may not set (nor
// delete) any other ("only root can set 'arch' config": arch, args, affinity, hookscript,
// hugepages, vmgenid, ...). The simulator's users hold every privilege, so only these refusals
// remain. Serial ports, USB and PCI devices depend on their value: a real device is root's.

// privilegedOptions are the options of $check_vm_modify_config_perm's lists on PVE 9.2
// (qemu-server 9.2): cpu, memory, hardware type, general, power, disk and cloud-init options.
var privilegedOptions = func() map[string]bool {
	set := map[string]bool{}
	for _, k := range strings.Fields(`
		cores cpu runningcpu cpulimit cpuunits numa smp sockets vcpus
		memory balloon shares allow-ksm
		acpi hotplug kvm machine runningmachine scsihw smbios1 tablet vga watchdog audio0 rng0
		agent autostart bios description keyboard localtime migrate_downtime migrate_speed name onboot
		ostype protection reboot startdate startup tdf template
		freeze
		boot bootdisk vmstatestorage
		cicustom cipassword citype ciuser ciupgrade nameserver searchdomain sshkeys
		vmstate tags cdrom running-nets-host-mtu`) {
		set[k] = true
	}
	return set
}()

// pve9PrivilegedOptions are the listed options qemu-server 8.2 (PVE 8.2) did not list yet:
// there they are root's.
var pve9PrivilegedOptions = []string{"runningcpu", "allow-ksm", "runningmachine", "rng0", "running-nets-host-mtu"}

// privilegedIndexed are the numbered options a privileged user may set: drives, NUMA nodes,
// NICs and IP configs; and the devices checked by value (serial, usb, hostpci; virtiofs on
// PVE 9 against its directory mapping).
var privilegedIndexed = regexp.MustCompile(`^(?:(?:ide|scsi|virtio|sata|unused|numa|net|ipconfig|serial|usb|hostpci|virtiofs)\d+|efidisk0|tpmstate0)$`)

// rootOnly is the refusal of setting (or deleting) the config keys by user on release v, ""
// when there is none.
func rootOnly(user string, keys []string, v versionInfo) string {
	if user == "root@pam" {
		return ""
	}
	for _, k := range keys {
		pve9Only := contains(pve9PrivilegedOptions, k) || strings.HasPrefix(k, "virtiofs")
		if !privilegedOptions[k] && !privilegedIndexed.MatchString(k) || pve9Only && v.major < 9 {
			return fmt.Sprintf("only root can set '%s' config", k)
		}
	}
	return ""
}

// realDevice is the refusal of a serial port, USB or PCI device value of key for a user
// other than root@pam (check_vm_create_serial_perm, check_usb_perm, check_hostpci_perm):
// a serial port other than a socket, a USB device other than spice by host, a PCI device by
// host (not by mapping). verb is "set", or on a config write "modify" and "delete" for a
// serial port. "" when the value is allowed.
func realDevice(user, key, value, verb string) string {
	if user == "root@pam" || value == "" {
		return ""
	}
	host := deviceHost(value)
	switch {
	case strings.HasPrefix(key, "serial") && value != "socket":
		return fmt.Sprintf("only root can %s '%s' config for real devices", verb, key)
	case strings.HasPrefix(key, "usb") && host != "" && !strings.EqualFold(host, "spice"):
		return fmt.Sprintf("only root can set '%s' config for real devices", key)
	case strings.HasPrefix(key, "hostpci") && host != "":
		return fmt.Sprintf("only root can set '%s' config for non-mapped devices", key)
	}
	return ""
}

// deviceHost is the host of a usbN or hostpciN value: the host property, or the value's
// leading part without a key (host is their default key).
func deviceHost(value string) string {
	for i, part := range strings.Split(value, ",") {
		k, v, hasKey := strings.Cut(part, "=")
		switch {
		case !hasKey && i == 0:
			return k
		case hasKey && k == "host":
			return v
		}
	}
	return ""
}

// deviceChange is the refusal of a config write's serial, USB and PCI device changes for
// user (update_vm_api's pending loop: deletes, then the new values), "" when there is none. A
// serial port may become or stay a socket; USB and PCI devices are checked by their old
// value and their new one.
func deviceChange(user string, cfg, set map[string]string, del []string) string {
	for _, k := range del {
		verb := "set"
		if strings.HasPrefix(k, "serial") {
			verb = "delete"
		}
		if msg := realDevice(user, k, cfg[k], verb); msg != "" {
			return msg
		}
	}
	for _, k := range sortedKeys(set) {
		if strings.HasPrefix(k, "serial") {
			if old := cfg[k]; user != "root@pam" && (old != "" && old != "socket" || set[k] != "socket") {
				return fmt.Sprintf("only root can modify '%s' config for real devices", k)
			}
			continue
		}
		for _, v := range []string{cfg[k], set[k]} {
			if msg := realDevice(user, k, v, "set"); msg != "" {
				return msg
			}
		}
	}
	return ""
}

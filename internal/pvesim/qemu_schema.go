package pvesim

// qemu-server's config schema (POST/PUT /nodes/{node}/qemu/{vmid}/config and the create call),
// as the PVE API description (pve-docs api-viewer) and qemu-server's named formats define it.
// hostpciN and intel-tdx hold passthrough details the simulator does not model: their values
// are taken as plain strings.

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

var (
	volumeIDText = regexp.MustCompile(`^(?i)([a-z][a-z0-9\-_.]*[a-z0-9]):(.+)$`)
	diskSizeText = regexp.MustCompile(`^(\d+(\.\d+)?)([KMGT](?:iB)?)?$`)
	unicastMAC   = regexp.MustCompile(`^(?i)[a-f0-9][02468ace](?::[a-f0-9]{2}){5}$`)
	bridgeID     = regexp.MustCompile(`^[-_.\w]+$`)
	storageIDRe  = regexp.MustCompile(`^(?i)[a-z][a-z0-9\-_.]*[a-z0-9]$`)
	dnsLabel     = `[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?`
	dnsName      = regexp.MustCompile(`^(` + dnsLabel + `\.)*` + dnsLabel + `$`)
	tagText      = regexp.MustCompile(`^(?i)[a-z0-9_][a-z0-9_\-+.]*$`)
	urlEncoded   = regexp.MustCompile(`^[-%a-zA-Z0-9_.!~*'()]*$`)
	cpuSet       = regexp.MustCompile(`^\d+(-\d+)?(,\d+(-\d+)?)*$`)
	startupPart  = regexp.MustCompile(`^((order=)?\d+|up=\d+|down=\d+)$`)
	configID     = regexp.MustCompile(`^(?i)[a-z][a-z0-9_-]+$`)
)

func checkVolumeID(v string) string {
	if !volumeIDText.MatchString(v) {
		return fmt.Sprintf("unable to parse volume ID '%s'", v)
	}
	return ""
}

// checkVolumeOrPath is pve-volume-id-or-qm-path: none, cdrom, an absolute path or a volume.
func checkVolumeOrPath(v string) string {
	if v == "none" || v == "cdrom" || strings.HasPrefix(v, "/") {
		return ""
	}
	return checkVolumeID(v)
}

func checkDiskSize(v string) string {
	if !diskSizeText.MatchString(v) {
		return "value does not look like a valid disk size: " + v
	}
	return ""
}

func checkMAC(v string) string {
	if !unicastMAC.MatchString(v) {
		return "value does not look like a valid unicast MAC address"
	}
	return ""
}

func checkBridge(v string) string {
	if !bridgeID.MatchString(v) {
		return fmt.Sprintf("invalid bridge ID '%s'", v)
	}
	return ""
}

func checkStorageID(v string) string {
	switch {
	case len(v) < 2:
		return fmt.Sprintf("storage ID '%s' cannot be shorter than 2 characters", v)
	case !storageIDRe.MatchString(v):
		return fmt.Sprintf("storage ID '%s' contains illegal characters", v)
	}
	return ""
}

func checkConfigID(v string) string {
	if !configID.MatchString(v) {
		return fmt.Sprintf("invalid configuration ID '%s'", v)
	}
	return ""
}

func parseIP(v string, want4 bool) bool {
	a, err := netip.ParseAddr(v)
	return err == nil && a.Zone() == "" && a.Is4() == want4
}

func checkIPv4(v string) string {
	if !parseIP(v, true) {
		return "value does not look like a valid IPv4 address"
	}
	return ""
}

func checkIPv6(v string) string {
	if !parseIP(v, false) {
		return "value does not look like a valid IPv6 address"
	}
	return ""
}

// validCIDR is pve_verify_cidrv4/v6: an address with a prefix of 8 or more.
func validCIDR(v string, want4 bool) bool {
	addr, bits, ok := strings.Cut(v, "/")
	n, err := strconv.Atoi(bits)
	limit := 128
	if want4 {
		limit = 32
	}
	return ok && err == nil && bits == strconv.Itoa(n) && n > 7 && n <= limit && parseIP(addr, want4)
}

func checkIPv4Config(v string) string {
	if v == "dhcp" || v == "manual" || validCIDR(v, true) {
		return ""
	}
	return "value does not look like a valid ipv4 network configuration"
}

func checkIPv6Config(v string) string {
	if v == "auto" || v == "dhcp" || v == "manual" || validCIDR(v, false) {
		return ""
	}
	return "value does not look like a valid ipv6 network configuration"
}

// splitList is PVE::Tools::split_list: items separated by commas, semicolons or blanks.
func splitList(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\n' })
}

func checkAddressList(v string) string {
	for _, a := range splitList(v) {
		if !parseIP(a, true) && !parseIP(a, false) && !dnsName.MatchString(a) {
			return "value does not look like a valid address: " + a
		}
	}
	return ""
}

func checkDNSName(v string) string {
	if !dnsName.MatchString(v) {
		return "value does not look like a valid DNS name"
	}
	return ""
}

func checkTags(v string) string {
	for _, t := range splitList(v) {
		if !tagText.MatchString(t) {
			return "invalid characters in tag"
		}
	}
	return ""
}

func checkURLEncoded(v string) string {
	if !urlEncoded.MatchString(v) {
		return "invalid urlencoded string: " + v
	}
	return ""
}

func checkCPUSet(v string) string {
	if !cpuSet.MatchString(v) {
		return "unable to parse cpuset option"
	}
	return ""
}

func checkStartup(v string) string {
	for _, p := range strings.Split(v, ",") {
		if strings.TrimSpace(p) != "" && !startupPart.MatchString(p) {
			return "unable to parse startup options"
		}
	}
	return ""
}

func checkHotplug(v string) string {
	if v == "0" || v == "1" {
		return ""
	}
	for _, f := range splitList(v) {
		if !contains([]string{"network", "disk", "cpu", "memory", "usb", "cloudinit"}, f) {
			return fmt.Sprintf("invalid hotplug feature '%s'", f)
		}
	}
	return ""
}

// checkBootDevices is verify_bootdev: a drive (not efidisk0 or tpmstate0), a NIC, a USB or a PCI
// device, each within its bus's limits.
func checkBootDevices(v string) string {
	for _, dev := range splitList(v) {
		m := indexedKey.FindStringSubmatch(dev)
		if m == nil || !contains([]string{"ide", "sata", "scsi", "virtio", "net", "usb", "hostpci"}, m[1]) {
			return fmt.Sprintf("invalid boot device '%s'", dev)
		}
		if _, known := indexedProp(dev); !known {
			return fmt.Sprintf("invalid boot device '%s'", dev)
		}
	}
	return ""
}

func checkBootDisk(v string) string {
	if _, known := indexedProp(v); !known || !diskKey.MatchString(v) {
		return fmt.Sprintf("invalid boot disk '%s'", v)
	}
	return ""
}

// cpuModels are the built-in CPU types of qemu-server (x86_64 and aarch64) and host.
var cpuModels = strings.Fields(`486 pentium pentium2 pentium3 coreduo core2duo Conroe Penryn Nehalem Nehalem-IBRS
	Westmere Westmere-IBRS SandyBridge SandyBridge-IBRS IvyBridge IvyBridge-IBRS Haswell Haswell-IBRS Haswell-noTSX
	Haswell-noTSX-IBRS Broadwell Broadwell-IBRS Broadwell-noTSX Broadwell-noTSX-IBRS Skylake-Client Skylake-Client-IBRS
	Skylake-Client-noTSX-IBRS Skylake-Client-v4 Skylake-Server Skylake-Server-IBRS Skylake-Server-noTSX-IBRS
	Skylake-Server-v4 Skylake-Server-v5 Cascadelake-Server Cascadelake-Server-v2 Cascadelake-Server-noTSX
	Cascadelake-Server-v4 Cascadelake-Server-v5 Cooperlake Cooperlake-v2 KnightsMill Icelake-Client
	Icelake-Client-noTSX Icelake-Server Icelake-Server-noTSX Icelake-Server-v3 Icelake-Server-v4 Icelake-Server-v5
	Icelake-Server-v6 Icelake-Server-v7 SapphireRapids SapphireRapids-v2 SapphireRapids-v3 SapphireRapids-v4
	GraniteRapids GraniteRapids-v2 GraniteRapids-v3 SierraForest SierraForest-v2 SierraForest-v3 ClearwaterForest
	athlon phenom Opteron_G1 Opteron_G2 Opteron_G3 Opteron_G4 Opteron_G5 EPYC EPYC-IBPB EPYC-v3 EPYC-v4 EPYC-v5
	EPYC-Rome EPYC-Rome-v2 EPYC-Rome-v3 EPYC-Rome-v4 EPYC-Rome-v5 EPYC-Milan EPYC-Milan-v2 EPYC-Milan-v3 EPYC-Genoa
	EPYC-Genoa-v2 EPYC-Turin kvm32 kvm64 qemu32 qemu64 max host x86-64-v2 x86-64-v2-AES x86-64-v3 x86-64-v4
	a64fx cortex-a35 cortex-a53 cortex-a55 cortex-a57 cortex-a710 cortex-a72 cortex-a76 neoverse-n1 neoverse-n2 neoverse-v1`)

// vmCPUFlags are the flags a VM's own cpu line may set (custom models may set any).
var vmCPUFlags = []string{"nested-virt", "md-clear", "pcid", "spec-ctrl", "ssbd", "ibpb", "virt-ssbd", "amd-ssbd", "amd-no-ssb",
	"pdpe1gb", "hv-tlbflush", "hv-evmcs", "aes"}

var cpuFlagText = regexp.MustCompile(`^[+-][a-zA-Z0-9\-_.]+$`)

func checkPhysBits(v string) string {
	if n, err := strconv.Atoi(v); v == "host" || err == nil && len(v) <= 2 && n >= 8 && n <= 64 {
		return ""
	}
	return "value must be an integer between 8 and 64 or 'host'"
}

// validateVMCPU is validate_vm_cpu_conf. The simulator has no custom CPU models
// (cpu-models.conf is empty), so every custom- type is unknown.
func validateVMCPU(cpu map[string]string) string {
	typ := cpu["cputype"]
	switch {
	case typ == "":
		return "CPU is missing cputype"
	case strings.HasPrefix(typ, "custom-"):
		return fmt.Sprintf("Custom cputype '%s' not found", strings.TrimPrefix(typ, "custom-"))
	case !contains(cpuModels, typ):
		return fmt.Sprintf("Built-in cputype '%s' is not defined (missing 'custom-' prefix?)", typ)
	}
	if flags := cpu["flags"]; flags != "" {
		for _, f := range strings.Split(flags, ";") {
			if len(f) < 2 || !contains(vmCPUFlags, f[1:]) || (f[0] != '+' && f[0] != '-') {
				return "VM-specific CPU flags must be a subset of: " + strings.Join(vmCPUFlags, ", ")
			}
		}
	}
	if _, set := cpu["reported-model"]; set {
		return "Property 'reported-model' not allowed in VM-specific CPU config."
	}
	return ""
}

func checkCPUFlags(v string) string {
	for _, f := range strings.Split(v, ";") {
		if !cpuFlagText.MatchString(f) {
			return "value does not match the regex pattern"
		}
	}
	return ""
}

var (
	cpuFormat = &propFormat{props: map[string]prop{
		"cputype": strProp().dflt(), "reported-model": strProp(), "hidden": boolProp(),
		"hv-vendor-id": patternProp(`[a-zA-Z0-9]{1,12}`), "flags": checkedProp(checkCPUFlags),
		"guest-phys-bits": intProp().between(32, 64), "phys-bits": checkedProp(checkPhysBits),
		"level": intProp().between(0, 4294967295),
	}, validate: validateVMCPU}

	agentFormat = &propFormat{props: map[string]prop{
		"enabled": boolProp().dflt().req(), "freeze-fs": boolProp(), "freeze-fs-on-backup": aliasOf("freeze-fs"),
		"guest-fsfreeze": aliasOf("freeze-fs"), "fstrim_cloned_disks": boolProp(), "type": enumProp("virtio", "isa"),
	}}

	vgaFormat = &propFormat{props: map[string]prop{
		"type": enumProp("cirrus", "qxl", "qxl2", "qxl3", "qxl4", "none", "serial0", "serial1", "serial2", "serial3",
			"std", "virtio", "virtio-gl", "vmware").dflt(),
		"clipboard": enumProp("vnc"), "memory": intProp().between(4, 512),
	}}

	machineFormat = &propFormat{props: map[string]prop{
		"type":    patternProp(`(pc|pc(-i440fx)?-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?|q35|pc-q35-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?|virt(?:-\d+(\.\d+)+)?(\+pve\d+)?)`).maxLen(40).dflt(),
		"aw-bits": numProp().between(32, 64), "enable-s3": boolProp(), "enable-s4": boolProp(), "viommu": enumProp("intel", "virtio"),
	}}

	bootFormat = &propFormat{props: map[string]prop{
		"legacy": patternProp(`[acdn]{1,4}`).dflt(), "order": checkedProp(checkBootDevices),
	}}

	cicustomFormat = &propFormat{props: map[string]prop{
		"meta": checkedProp(checkVolumeID), "network": checkedProp(checkVolumeID),
		"user": checkedProp(checkVolumeID), "vendor": checkedProp(checkVolumeID),
	}}

	memoryFormat = &propFormat{props: map[string]prop{"current": intProp().atLeast(16).dflt().req()}}

	ipconfigFormat = &propFormat{props: map[string]prop{
		"ip": checkedProp(checkIPv4Config), "gw": checkedProp(checkIPv4).needs("ip"),
		"ip6": checkedProp(checkIPv6Config), "gw6": checkedProp(checkIPv6).needs("ip6"),
	}}

	nicModels = []string{"e1000", "e1000-82540em", "e1000-82544gc", "e1000-82545em", "e1000e", "i82551", "i82557b",
		"i82559er", "ne2k_isa", "ne2k_pci", "pcnet", "rtl8139", "virtio", "vmxnet3"}

	netFormat = func() *propFormat {
		f := &propFormat{props: map[string]prop{
			"model": enumProp(nicModels...).dflt().req(), "macaddr": checkedProp(checkMAC), "bridge": checkedProp(checkBridge),
			"firewall": boolProp(), "link_down": boolProp(), "mtu": intProp().between(1, 65520), "queues": intProp().between(0, 64),
			"rate": numProp().atLeast(0), "tag": intProp().between(1, 4094), "trunks": patternProp(`\d+(?:-\d+)?(?:;\d+(?:-\d+)?)*`),
		}}
		for _, m := range nicModels {
			f.props[m] = prop{alias: "macaddr", keyAlias: "model"}
		}
		return f
	}()

	rngFormat = &propFormat{props: map[string]prop{
		"source": enumProp("/dev/urandom", "/dev/random", "/dev/hwrng").dflt().req(), "max_bytes": intProp(), "period": intProp(),
	}}

	watchdogFormat = &propFormat{props: map[string]prop{
		"model": enumProp("i6300esb", "ib700").dflt(), "action": enumProp("reset", "shutdown", "poweroff", "pause", "debug", "none"),
	}}

	audioFormat = &propFormat{props: map[string]prop{
		"device": enumProp("ich9-intel-hda", "intel-hda", "AC97").req(), "driver": enumProp("spice", "none"),
	}}

	spiceFormat = &propFormat{props: map[string]prop{"foldersharing": boolProp(), "videostreaming": enumProp("off", "all", "filter")}}

	base64Prop    = patternProp(`[A-Za-z0-9+/]+={0,2}`)
	smbios1Format = &propFormat{props: map[string]prop{
		"base64": boolProp(), "family": base64Prop, "manufacturer": base64Prop, "product": base64Prop, "serial": base64Prop,
		"sku": base64Prop, "version": base64Prop, "uuid": patternProp(`[a-fA-F0-9]{8}(?:-[a-fA-F0-9]{4}){3}-[a-fA-F0-9]{12}`),
	}}

	idList     = `\d+(?:-\d+)?(?:;\d+(?:-\d+)?)*`
	numaFormat = &propFormat{props: map[string]prop{
		"cpus": patternProp(idList).req(), "hostnodes": patternProp(idList), "memory": numProp(), "policy": enumProp("preferred", "bind", "interleave"),
	}}

	usbFormat = &propFormat{props: map[string]prop{
		"host":    patternProp(`(?:(?:(0x)?([0-9A-Fa-f]{4}):(0x)?([0-9A-Fa-f]{4}))|(?:(\d+)\-(\d+(\.\d+)*))|[Ss][Pp][Ii][Cc][Ee])`).dflt(),
		"mapping": checkedProp(checkConfigID), "usb3": boolProp(),
	}}

	ivshmemFormat = &propFormat{props: map[string]prop{"size": intProp().atLeast(1).req(), "name": patternProp(`[a-zA-Z0-9\-]+`)}}

	virtiofsFormat = &propFormat{props: map[string]prop{
		"dirid": checkedProp(checkConfigID).dflt().req(), "cache": enumProp("auto", "always", "metadata", "never"),
		"direct-io": boolProp(), "expose-acl": boolProp(), "expose-xattr": boolProp(),
	}}

	sevFormat = &propFormat{props: map[string]prop{
		"type": enumProp("std", "es", "snp").maxLen(3).dflt().req(), "no-debug": boolProp(), "no-key-sharing": boolProp(),
		"allow-smt": boolProp(), "kernel-hashes": boolProp(),
	}}

	imageFormats = []string{"raw", "qcow", "qed", "qcow2", "vmdk", "cloop"}

	efidiskFormat = &propFormat{props: map[string]prop{
		"file": checkedProp(checkVolumeOrPath).dflt().req(), "volume": aliasOf("file"), "format": enumProp(imageFormats...),
		"size": checkedProp(checkDiskSize), "efitype": enumProp("2m", "4m"), "pre-enrolled-keys": boolProp(),
		"ms-cert": enumProp("2011", "2023", "2023w", "2023k"), "import-from": strProp(),
	}}

	tpmFormat = &propFormat{props: map[string]prop{
		"file": checkedProp(checkVolumeOrPath).dflt().req(), "volume": aliasOf("file"), "format": enumProp("raw", "qcow2", "vmdk"),
		"size": checkedProp(checkDiskSize), "version": enumProp("v1.2", "v2.0"), "import-from": strProp(),
	}}

	unusedFormat = &propFormat{props: map[string]prop{"file": checkedProp(checkVolumeID).dflt().req(), "volume": aliasOf("file")}}

	driveFormats = map[string]*propFormat{"ide": driveFormat("ide"), "sata": driveFormat("sata"), "scsi": driveFormat("scsi"), "virtio": driveFormat("virtio")}
)

// driveFormat is the disk format of one bus: what all buses share plus each bus's own keys.
func driveFormat(bus string) *propFormat {
	seconds := intProp().atLeast(1)
	p := map[string]prop{
		"file": checkedProp(checkVolumeOrPath).dflt().req(), "volume": aliasOf("file"),
		"aio": enumProp("native", "threads", "io_uring"), "backup": boolProp(),
		"bps": intProp(), "bps_rd": intProp(), "bps_wr": intProp(),
		"bps_max_length": seconds, "bps_rd_max_length": seconds, "bps_wr_max_length": seconds,
		"bps_rd_length": aliasOf("bps_rd_max_length"), "bps_wr_length": aliasOf("bps_wr_max_length"),
		"cache":         enumProp("none", "writethrough", "writeback", "unsafe", "directsync"),
		"detect_zeroes": boolProp(), "discard": enumProp("ignore", "on"), "format": enumProp(imageFormats...),
		"import-from": strProp(),
		"iops":        intProp(), "iops_max": intProp(), "iops_rd": intProp(), "iops_rd_max": intProp(), "iops_wr": intProp(), "iops_wr_max": intProp(),
		"iops_max_length": seconds, "iops_rd_max_length": seconds, "iops_wr_max_length": seconds,
		"iops_rd_length": aliasOf("iops_rd_max_length"), "iops_wr_length": aliasOf("iops_wr_max_length"),
		"mbps": numProp(), "mbps_max": numProp(), "mbps_rd": numProp(), "mbps_rd_max": numProp(), "mbps_wr": numProp(), "mbps_wr_max": numProp(),
		"media": enumProp("cdrom", "disk"), "replicate": boolProp(), "rerror": enumProp("ignore", "report", "stop"),
		"serial": checkedProp(checkURLEncoded).maxLen(60), "shared": boolProp(), "size": checkedProp(checkDiskSize),
		"snapshot": boolProp(), "werror": enumProp("enospc", "ignore", "report", "stop"),
	}
	wwn := patternProp(`^(0x)[0-9a-fA-F]{16}`)
	switch bus {
	case "scsi":
		p["iothread"], p["ro"], p["scsiblock"], p["ssd"], p["wwn"] = boolProp(), boolProp(), boolProp(), boolProp(), wwn
		p["product"], p["vendor"] = patternProp(`[A-Za-z0-9\-_\s]{0,16}`), patternProp(`[A-Za-z0-9\-_\s]{0,8}`)
		p["queues"] = intProp().atLeast(2)
	case "virtio":
		p["iothread"], p["ro"] = boolProp(), boolProp()
	case "sata":
		p["ssd"], p["wwn"] = boolProp(), wwn
	case "ide":
		p["ssd"], p["wwn"], p["model"] = boolProp(), wwn, checkedProp(checkURLEncoded).maxLen(120)
	}
	return &propFormat{props: p}
}

// qemuProps is the schema of every plain (not numbered) config key.
var qemuProps = map[string]prop{
	"acpi": boolProp(), "affinity": checkedProp(checkCPUSet), "agent": subProp(agentFormat), "allow-ksm": boolProp(),
	"amd-sev": subProp(sevFormat), "arch": enumProp("x86_64", "aarch64"), "args": strProp(), "audio0": subProp(audioFormat),
	"autostart": boolProp(), "balloon": intProp().atLeast(0), "bios": enumProp("seabios", "ovmf"), "boot": subProp(bootFormat),
	"bootdisk": checkedProp(checkBootDisk), "cdrom": checkedProp(checkVolumeOrPath), "cicustom": subProp(cicustomFormat),
	"cipassword": strProp(), "citype": enumProp("configdrive2", "nocloud", "opennebula"), "ciupgrade": boolProp(),
	"ciuser": strProp(), "cores": intProp().atLeast(1), "cpu": subProp(cpuFormat), "cpulimit": numProp().between(0, 128),
	"cpuunits": intProp().between(1, 262144), "description": strProp().maxLen(8192), "efidisk0": subProp(efidiskFormat),
	"freeze": boolProp(), "hookscript": checkedProp(checkVolumeID), "hotplug": checkedProp(checkHotplug),
	"hugepages": enumProp("any", "2", "1024"), "import-working-storage": checkedProp(checkStorageID), "intel-tdx": strProp(),
	"ivshmem": subProp(ivshmemFormat), "keephugepages": boolProp(),
	"keyboard": enumProp("de", "de-ch", "da", "en-gb", "en-us", "es", "fi", "fr", "fr-be", "fr-ca", "fr-ch", "hu", "is", "it",
		"ja", "lt", "mk", "nl", "no", "pl", "pt", "pt-br", "sv", "sl", "tr"),
	"kvm": boolProp(), "localtime": boolProp(),
	"lock":    enumProp("backup", "clone", "create", "migrate", "rollback", "snapshot", "snapshot-delete", "suspending", "suspended"),
	"machine": subProp(machineFormat), "memory": subProp(memoryFormat), "migrate_downtime": numProp().atLeast(0),
	"migrate_speed": intProp().atLeast(0), "name": checkedProp(checkDNSName), "nameserver": checkedProp(checkAddressList),
	"numa": boolProp(), "onboot": boolProp(),
	"ostype":     enumProp("other", "wxp", "w2k", "w2k3", "w2k8", "wvista", "win7", "win8", "win10", "win11", "l24", "l26", "solaris"),
	"protection": boolProp(), "reboot": boolProp(), "rng0": subProp(rngFormat),
	"scsihw":       enumProp("lsi", "lsi53c810", "virtio-scsi-pci", "virtio-scsi-single", "megasas", "pvscsi"),
	"searchdomain": strProp(), "shares": intProp().between(0, 50000), "smbios1": subProp(smbios1Format).maxLen(512),
	"smp": intProp().atLeast(1), "sockets": intProp().atLeast(1), "spice_enhancements": subProp(spiceFormat),
	"sshkeys": checkedProp(checkURLEncoded), "startdate": patternProp(`(now|\d{4}-\d{1,2}-\d{1,2}(T\d{1,2}:\d{1,2}:\d{1,2})?)`),
	"startup": checkedProp(checkStartup), "tablet": boolProp(), "tags": checkedProp(checkTags), "tdf": boolProp(),
	"template": boolProp(), "tpmstate0": subProp(tpmFormat), "vcpus": intProp().atLeast(1), "vga": subProp(vgaFormat),
	"vmgenid":        patternProp(`(?:[a-fA-F0-9]{8}(?:-[a-fA-F0-9]{4}){3}-[a-fA-F0-9]{12}|[01])`),
	"vmstatestorage": checkedProp(checkStorageID), "watchdog": subProp(watchdogFormat),
}

// indexedKey matches the numbered keys (net0, scsi12, ipconfig3, unused0, ...).
var indexedKey = regexp.MustCompile(`^(net|ipconfig|scsi|virtio|sata|ide|unused|serial|usb|hostpci|numa|parallel|virtiofs)(\d+)$`)

// indexed is the schema of each numbered key family and its highest index.
var indexed = map[string]struct {
	p   prop
	max int
}{
	"net": {subProp(netFormat), 31}, "ipconfig": {subProp(ipconfigFormat), 31},
	"scsi": {subProp(driveFormats["scsi"]), 30}, "virtio": {subProp(driveFormats["virtio"]), 15},
	"sata": {subProp(driveFormats["sata"]), 5}, "ide": {subProp(driveFormats["ide"]), 3},
	"unused": {subProp(unusedFormat), 255}, "serial": {patternProp(`/dev/[^,]+|socket`), 3},
	"usb": {subProp(usbFormat), 13}, "hostpci": {strProp(), 15}, "numa": {subProp(numaFormat), 7},
	"parallel": {patternProp(`/dev/parport\d+|/dev/usb/lp\d+`), 2}, "virtiofs": {subProp(virtiofsFormat), 9},
}

// keyProp is a config key's schema; false for a key PVE does not define.
func keyProp(key string) (prop, bool) {
	if p, ok := qemuProps[key]; ok {
		return p, true
	}
	return indexedProp(key)
}

// indexedProp is the schema of a numbered key within its family's limit.
func indexedProp(key string) (prop, bool) {
	m := indexedKey.FindStringSubmatch(key)
	if m == nil {
		return prop{}, false
	}
	fam := indexed[m[1]]
	i, err := strconv.Atoi(m[2])
	return fam.p, err == nil && i <= fam.max && strconv.Itoa(i) == m[2]
}

// driveFormatOf is the property string format of a volume key (disks, efidisk0, tpmstate0,
// unusedN), nil for other keys.
func driveFormatOf(key string) *propFormat {
	if !volumeKey.MatchString(key) {
		return nil
	}
	p, _ := keyProp(key)
	return p.format
}

// checkDrive is parse_drive's checks beyond the schema, which PVE reports as "unable to parse
// drive options": limits without their base, both total and per-direction limits, and a
// cd-rom on virtio or with snapshot or format.
func checkDrive(key string, d map[string]string) bool {
	for _, pair := range [][2]string{{"mbps_max", "mbps"}, {"mbps_rd_max", "mbps_rd"}, {"mbps_wr_max", "mbps_wr"},
		{"bps_max_length", "mbps_max"}, {"bps_rd_max_length", "mbps_rd_max"}, {"bps_wr_max_length", "mbps_wr_max"},
		{"iops_max_length", "iops_max"}, {"iops_rd_max_length", "iops_rd_max"}, {"iops_wr_max_length", "iops_wr_max"}} {
		if d[pair[0]] != "" && d[pair[0]] != "0" && (d[pair[1]] == "" || d[pair[1]] == "0") {
			return false
		}
	}
	for _, pair := range [][2]string{{"mbps_rd", "mbps"}, {"mbps_wr", "mbps"}, {"iops_rd", "iops"}, {"iops_wr", "iops"}} {
		if d[pair[0]] != "" && d[pair[1]] != "" {
			return false
		}
	}
	if d["media"] == "cdrom" && (d["snapshot"] == "1" || d["format"] != "" || strings.HasPrefix(key, "virtio")) {
		return false
	}
	return true
}

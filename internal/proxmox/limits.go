package proxmox

// Sizes Proxmox VE accepts for a VM. Its API schema gives minimums only; these upper bounds
// are where qemu-server and QEMU stop, and they keep every product of sizes far from integer
// overflow (4096 vCPUs, 4 TiB in bytes).
const (
	// MaxVCPUs is QEMU's largest machine type (q35) limit; cores, sockets and their product
	// are bounded by it. PVE refuses to start a VM with more vCPUs than its node has CPUs.
	MaxVCPUs = 4096
	// MinMemoryMiB and MaxMemoryMiB bound memory (and balloon): the schema minimum, and
	// qemu-server's MAX_MEM (4 TiB).
	MinMemoryMiB = 16
	MaxMemoryMiB = 4194304
	// MaxDiskGiB bounds a disk's size: 1 PiB, beyond any storage PVE manages.
	MaxDiskGiB = 1 << 20
)

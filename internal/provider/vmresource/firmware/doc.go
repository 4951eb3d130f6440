// Package firmware holds the machine and firmware settings of qemuscheduler_vm (bios,
// machine, boot_order, scsi_hardware, protection, serial, and the efi_disk, vga and startup
// blocks): schema, model, validation and the mapping to and from the guest's PVE config. Its
// functions take the block's own model, not the VM's.
//
// It may import kit and the pure packages; disk and vmresource import it.
package firmware

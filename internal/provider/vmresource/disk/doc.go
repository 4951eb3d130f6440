// Package disk holds the disk blocks of qemuscheduler_vm: schema, model, validation, their
// options and sizes, how they grow, and how they are created, resized and read back from the
// guest's PVE config. Its functions take the blocks' own model, not the VM's.
//
// It may import kit, firmware (the SCSI controller) and the pure packages; cloudinit and
// vmresource import it.
package disk

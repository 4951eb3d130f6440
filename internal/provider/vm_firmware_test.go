package provider

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

const firmwareHCL = `
  bios          = "ovmf"
  machine       = "q35"
  serial        = ["socket"]
  boot_order    = ["scsi0", "net0"]
  protection    = %s
  efi_disk {
    pre_enrolled_keys = true
  }
  vga {
    type = "serial0"
  }
  startup {
    order = 2
    up    = 30
  }
  disk {
    slot = "scsi0"
    size = 8
  }
  network {
    slot = "net0"
  }`

// A UEFI q35 VM from scratch with an EFI disk and a serial console: PVE gets every key, the
// second plan is empty (PVE 9's added ms-cert and re-printed drives are no drift), a protected
// VM cannot be destroyed, and once unprotected it can.
func TestAccVMFirmwareFromScratch(t *testing.T) {
	c := labCluster()
	c.HARules = []pvesim.HARuleSpec{} // PVE 9, which marks an EFI disk with pre-enrolled keys ms-cert=2023k
	env, sim := simEnv(t, c)
	vm := func(protection string) string {
		return env.config(`resource "qemuscheduler_vm" "web" {
  name = "uefi-1"
  node = "pve2"` + fmt.Sprintf(firmwareHCL, protection) + "\n}")
	}
	var vmid int
	runSteps(t,
		resource.TestStep{Config: vm("true"), Check: resource.ComposeTestCheckFunc(
			resource.TestCheckResourceAttr(vmAddr, "scsi_hardware", "virtio-scsi-single"),
			resource.TestCheckResourceAttrPair(vmAddr, "efi_disk.storage", vmAddr, "storage"),
			func(s *terraform.State) error {
				var err error
				vmid, err = strconv.Atoi(s.RootModule().Resources[vmAddr].Primary.ID)
				return err
			},
			func(s *terraform.State) error {
				return guestExists(sim, vmid, func(g pvesim.GuestState) error {
					want := map[string]string{"bios": "ovmf", "machine": "q35", "serial0": "socket", "vga": "serial0",
						"boot": "order=scsi0;net0", "startup": "order=2,up=30", "protection": "1", "scsihw": "virtio-scsi-single"}
					for k, v := range want {
						if g.Config[k] != v {
							return fmt.Errorf("config %s = %q, want %q", k, g.Config[k], v)
						}
					}
					if !regexp.MustCompile(`^[a-z-]+:vm-\d+-disk-1,efitype=4m,ms-cert=2023k,pre-enrolled-keys=1,size=4M$`).MatchString(g.Config["efidisk0"]) {
						return fmt.Errorf("efidisk0 = %q", g.Config["efidisk0"])
					}
					return nil
				})(s)
			},
		)},
		resource.TestStep{Config: vm("true"), Destroy: true, ExpectError: regexp.MustCompile(`(?s)VM \d+ is protected.*Set protection\s+=\s+false`)},
		resource.TestStep{Config: vm("true"), Check: func(s *terraform.State) error {
			return guestExists(sim, vmid, func(g pvesim.GuestState) error {
				if g.Status != "running" {
					return fmt.Errorf("the refused destroy left the VM %s", g.Status)
				}
				return nil
			})(s)
		}},
		resource.TestStep{Config: vm("false"), Check: resource.TestCheckResourceAttr(vmAddr, "protection", "false")},
	)
}

// A VM made by hand with these settings imports with all of them, and the plan is empty.
func TestAccVMFirmwareImport(t *testing.T) {
	env, _ := simEnv(t, labCluster())
	cfg := env.config(`resource "qemuscheduler_vm" "web" {
  name          = "uefi-legacy"
  scsi_hardware = "virtio-scsi-single"` + fmt.Sprintf(firmwareHCL, "false") + "\n}")
	importPlansEmpty(t, env, map[string]string{"name": "uefi-legacy", "bios": "ovmf", "machine": "q35",
		"serial0": "socket", "boot": "order=scsi0;net0", "protection": "0", "vga": "serial0", "startup": "order=2,up=30",
		"efidisk0": "local-lvm:1,efitype=4m,pre-enrolled-keys=1", "scsihw": "virtio-scsi-single",
		"scsi0": "local-lvm:8", "net0": "virtio,bridge=vmbr0", "start": "1"}, cfg)
}

func TestAccVMFirmwareValidation(t *testing.T) {
	env := newAccEnv(t, labCluster())
	vm := func(body string) string {
		return env.config(`resource "qemuscheduler_vm" "web" {
  name = "web-1"
` + body + "\n}")
	}
	runParallel(t,
		resource.TestStep{Config: vm(`bios = "ovmf"`), PlanOnly: true, ExpectError: regexp.MustCompile(`(?s)UEFI VM without an EFI disk.*efi_disk`)},
		resource.TestStep{Config: vm(`efi_disk {}`), PlanOnly: true, ExpectError: regexp.MustCompile(`(?s)EFI disk without UEFI.*bios = "ovmf"`)},
		resource.TestStep{Config: vm(`machine = "q36"`), PlanOnly: true, ExpectError: regexp.MustCompile(`must be a QEMU machine type`)},
		resource.TestStep{Config: vm(`serial = ["tcp:1"]`), PlanOnly: true, ExpectError: regexp.MustCompile(`must be socket or a host device path`)},
	)
}

package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// bpgISOURL is the ISO the simulated web serves to the download_file resource, bpgImageURL
// the qcow2 image a VM's disk imports (import_from).
const (
	bpgISOURL    = "https://example.org/images/debian-12.iso"
	bpgISOSize   = 629145600
	bpgImageURL  = "https://example.org/images/debian-12-generic.qcow2"
	bpgImageSize = 2 << 30
)

// bpg's file resources against the simulated lab cluster: proxmox_virtual_environment_download_file
// (query-url-metadata, download-url, the content list) of an ISO and of a qcow2 image (content
// import, PVE 9), proxmox_virtual_environment_file uploading a local ISO (multipart upload,
// imgcopy task), and a VM whose disk imports the image (import_from: STORAGE:0,import-from=...
// then a resize to the disk's size), an empty plan, then destroy (volume delete) leaving the
// storages as they were, with no request pvesim does not implement.
func TestAccBpgFileResources(t *testing.T) {
	c := pvesim.LoadTestCluster(t, "../../examples/lab/cluster.yaml")
	c.RemoteFiles = []pvesim.RemoteFileSpec{{URL: bpgISOURL, Size: bpgISOSize}, {URL: bpgImageURL, Size: bpgImageSize}}
	for i := range c.Storages {
		if c.Storages[i].Name == "local" {
			c.Storages[i].Content = append(c.Storages[i].Content, "import")
		}
	}
	env, sim := simEnv(t, c)
	bpgMirror(t)
	iso := filepath.Join(t.TempDir(), "tools.iso")
	if err := os.WriteFile(iso, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	usedBefore := storageUse(t, sim)
	config := env.config(fmt.Sprintf(`
provider "proxmox" {
  endpoint  = %q
  api_token = %q
  insecure  = true
}

resource "proxmox_virtual_environment_download_file" "iso" {
  content_type = "iso"
  datastore_id = "local"
  node_name    = "pve1"
  url          = %q
}

resource "proxmox_virtual_environment_file" "iso" {
  content_type = "iso"
  datastore_id = "local"
  node_name    = "pve2"
  source_file {
    path = %q
  }
}

resource "proxmox_virtual_environment_download_file" "image" {
  content_type = "import"
  datastore_id = "local"
  node_name    = "pve1"
  url          = %q
}

resource "proxmox_virtual_environment_vm" "imported" {
  name      = "bpg-imported"
  node_name = "pve1"
  vm_id     = 2200
  started   = false
  disk {
    datastore_id = "local-lvm"
    interface    = "scsi0"
    import_from  = proxmox_virtual_environment_download_file.image.id
    size         = 8
  }
}
`, sim.URL(), sim.APIToken(), bpgISOURL, iso, bpgImageURL))
	runCase(t, resource.TestCase{
		ExternalProviders: map[string]resource.ExternalProvider{"proxmox": {Source: "bpg/proxmox", VersionConstraint: bpgVersion}},
		Steps: []resource.TestStep{
			{Config: config, Check: resource.ComposeTestCheckFunc(
				resource.TestCheckResourceAttr("proxmox_virtual_environment_download_file.iso", "id", "local:iso/debian-12.iso"),
				resource.TestCheckResourceAttr("proxmox_virtual_environment_download_file.iso", "size", fmt.Sprint(bpgISOSize)),
				resource.TestCheckResourceAttr("proxmox_virtual_environment_file.iso", "id", "local:iso/tools.iso"),
				resource.TestCheckResourceAttr("proxmox_virtual_environment_download_file.image", "id", "local:import/debian-12-generic.qcow2"),
				func(*terraform.State) error {
					// create_disks copied the 2 GiB image into a new volume, which bpg grew to 8 GiB.
					// The config keeps neither import-from nor format.
					scsi0 := sim.MustGuest(t, 2200).Config["scsi0"]
					if !strings.HasPrefix(scsi0, "local-lvm:vm-2200-disk-0,") || !slices.Contains(strings.Split(scsi0, ","), "size=8G") || strings.Contains(scsi0, "import-from") {
						return fmt.Errorf("the imported VM's scsi0 = %q, want local-lvm:vm-2200-disk-0 of 8G without import-from", scsi0)
					}
					return nil
				},
				func(*terraform.State) error {
					if used := storageUse(t, sim); used == usedBefore {
						return fmt.Errorf("storage use unchanged after the download and the upload: %s", used)
					}
					return nil
				},
			)},
			{Config: config, PlanOnly: true},
		},
		CheckDestroy: func(*terraform.State) error {
			if used := storageUse(t, sim); used != usedBefore {
				return fmt.Errorf("storage use after destroy = %s, want the lab's %s: files were left behind", used, usedBefore)
			}
			return nil
		},
	})
	bpgAnswered(t, sim)
}

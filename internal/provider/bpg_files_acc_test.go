package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

// bpgISOURL is the ISO the simulated web serves to the download_file resource.
const (
	bpgISOURL  = "https://example.org/images/debian-12.iso"
	bpgISOSize = 629145600
)

// bpg's file resources against the simulated lab cluster: proxmox_virtual_environment_download_file
// (query-url-metadata, download-url, the content list) and proxmox_virtual_environment_file
// uploading a local ISO (multipart upload, imgcopy task), an empty plan, then destroy (volume
// delete) leaving the storages as they were, with no request pvesim does not implement.
func TestAccBpgFileResources(t *testing.T) {
	c := pvesim.LoadTestCluster(t, "../../examples/lab/cluster.yaml")
	c.RemoteFiles = []pvesim.RemoteFileSpec{{URL: bpgISOURL, Size: bpgISOSize}}
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
`, sim.URL(), sim.APIToken(), bpgISOURL, iso))
	runCase(t, resource.TestCase{
		ExternalProviders: map[string]resource.ExternalProvider{"proxmox": {Source: "bpg/proxmox", VersionConstraint: bpgVersion}},
		Steps: []resource.TestStep{
			{Config: config, Check: resource.ComposeTestCheckFunc(
				resource.TestCheckResourceAttr("proxmox_virtual_environment_download_file.iso", "id", "local:iso/debian-12.iso"),
				resource.TestCheckResourceAttr("proxmox_virtual_environment_download_file.iso", "size", fmt.Sprint(bpgISOSize)),
				resource.TestCheckResourceAttr("proxmox_virtual_environment_file.iso", "id", "local:iso/tools.iso"),
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

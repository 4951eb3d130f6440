package proxmox_test

import (
	"context"
	"testing"
)

// MainDiskStorage reads the VM's config alone: one request per VM, as the placement data
// source promises for each existing VM it names (not GetVM's status read besides).
func TestMainDiskStorageReadsTheConfigOnly(t *testing.T) {
	s, client := labClient(t)
	s.ResetRequests()
	storage, err := client.MainDiskStorage(context.Background(), "pve2", 102)
	if err != nil || storage != "ceph" {
		t.Fatalf("MainDiskStorage(pve2, 102) = %q, %v; want ceph", storage, err)
	}
	if n := s.TotalRequests(); n != 1 {
		t.Errorf("%d requests, want 1: the VM's config", n)
	}
}

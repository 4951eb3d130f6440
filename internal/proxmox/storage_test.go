package proxmox_test

import (
	"context"
	"reflect"
	"testing"
)

func TestSnippets(t *testing.T) {
	s, c := labClient(t)
	if err := s.PutSnippet("pve2", "local", "web.yaml", 100); err != nil {
		t.Fatal(err)
	}
	got, err := c.Snippets(context.Background(), "pve2", "local")
	if want := []string{"local:snippets/k8s-worker-vendor.yaml", "local:snippets/web.yaml"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Snippets(pve2, local) = %v, %v; want %v", got, err, want)
	}
	if got, err := c.Snippets(context.Background(), "pve1", "ceph"); err != nil || len(got) != 0 {
		t.Errorf("a storage without snippets content: %v, %v; want none", got, err)
	}
	if n := s.Requests("GET /nodes/{node}/storage/{storage}/content"); n != 2 {
		t.Errorf("%d content requests, want 2", n)
	}
}

package pvesim

import (
	"encoding/pem"
	"net/http/httptest"
	"testing"
)

// NewTestServer serves a simulated cluster over TLS on loopback until the test ends.
func NewTestServer(t testing.TB, c Cluster, opts ...Option) *Server {
	t.Helper()
	s, err := New(c, opts...)
	if err != nil {
		t.Fatalf("pvesim: %v", err)
	}
	ts := httptest.NewTLSServer(s)
	t.Cleanup(ts.Close)
	s.SetListener(ts.URL, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})))
	return s
}

// LoadTestCluster loads a cluster file (LoadCluster) and fails the test when it cannot.
func LoadTestCluster(t testing.TB, path string) Cluster {
	t.Helper()
	c, err := LoadCluster(path)
	if err != nil {
		t.Fatalf("pvesim: %v", err)
	}
	return c
}

// MustGuest returns guest vmid's state and fails the test when the simulator has no such
// guest, so that a check on a missing guest cannot pass on a zero value.
func (s *Server) MustGuest(t testing.TB, vmid int) GuestState {
	t.Helper()
	g, ok := s.Guest(vmid)
	if !ok {
		t.Fatalf("the simulator has no guest %d", vmid)
	}
	return g
}

// Command pvesim serves a simulated Proxmox VE cluster on loopback, for demos and manual tests.
package main

import (
	"encoding/pem"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/pvesim"
)

func main() {
	clusterFile := flag.String("cluster", "examples/lab/cluster.yaml", "cluster file (YAML or JSON)")
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	caOut := flag.String("ca-out", "", "write the server's CA certificate (PEM) to this file")
	envOut := flag.String("env-out", "", "write PROXMOX_VE_* variables (shell syntax) to this file")
	taskDuration := flag.Duration("task-duration", 0, "how long each task runs")
	flag.Parse()

	cluster, err := pvesim.LoadCluster(*clusterFile)
	if err != nil {
		log.Fatal(err)
	}
	sim, err := pvesim.New(cluster, pvesim.WithTaskDuration(*taskDuration))
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(sim)
	ts.Listener.Close()
	ts.Listener = ln
	ts.Config.ReadHeaderTimeout = 10 * time.Second
	ts.StartTLS()
	defer ts.Close()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	if *caOut != "" {
		if err := os.WriteFile(*caOut, caPEM, 0o600); err != nil {
			log.Fatal(err)
		}
	}
	env := fmt.Sprintf("export PROXMOX_VE_ENDPOINT=%s\nexport PROXMOX_VE_API_TOKEN='%s'\n", ts.URL, sim.APIToken())
	if *envOut != "" {
		if err := os.WriteFile(*envOut, []byte(env), 0o600); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("pvesim: serving %s (%d nodes, %d guests)\n%s", *clusterFile, len(cluster.Nodes), len(cluster.Guests), env)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
}

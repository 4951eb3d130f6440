// Command terraform-provider-qemuscheduler is the qemuscheduler Terraform / OpenTofu provider.
package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider"
)

// version is set by the release build (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	debug := flag.Bool("debug", false, "run with support for debuggers like delve")
	flag.Parse()
	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: "registry.terraform.io/qemuscheduler/qemuscheduler",
		Debug:   *debug,
	})
	if err != nil {
		log.Fatal(err)
	}
}

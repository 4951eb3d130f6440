# terraform-provider-qemuscheduler: the two commands a newcomer needs are `make demo` and
# `make test`.
BINARY  := terraform-provider-qemuscheduler
VERSION ?= dev

.PHONY: build demo test bench docs lint

build:
	go build -ldflags "-X main.version=$(VERSION)" -o bin/$(BINARY) .

## demo: build, start the simulated lab cluster, terraform apply examples/demo, show the placements
demo:
	scripts/demo.sh

## test: unit tests, then acceptance tests against the simulator with Terraform and OpenTofu
test:
	scripts/test.sh

bench:
	go test -run XXX -bench . -benchtime 200x ./internal/plugins/
	go test -run XXX -bench Snapshot -benchtime 10x ./internal/proxmox/

## docs: regenerate docs/ (never edit it by hand) from the schema, templates/ and examples/
docs:
	scripts/docs.sh

lint:
	gofmt -l . | (! grep .)
	go vet ./...

# terraform-provider-qemuscheduler: the two commands a newcomer needs are `make demo` and
# `make test`.
BINARY  := terraform-provider-qemuscheduler
VERSION ?= dev

.PHONY: build demo test bench docs docs-check lint install

build:
	go build -ldflags "-X main.version=$(VERSION)" -o bin/$(BINARY) .

## demo: build, start the simulated lab cluster, terraform apply examples/demo, show the placements
demo:
	scripts/demo.sh

## test: lint and docs-check (fast), unit tests, then acceptance tests against the simulator
## with Terraform and OpenTofu
test: lint docs-check
	scripts/test.sh

bench:
	go test -run XXX -bench . -benchtime 200x ./internal/plugins/
	go test -run XXX -bench Snapshot -benchtime 10x ./internal/proxmox/

## docs: regenerate docs/ (never edit it by hand) from the schema, templates/ and examples/
docs:
	scripts/docs.sh

## docs-check: fail with the diff when docs/ differs from what make docs would generate
docs-check:
	scripts/docs.sh --check

## lint: gofmt, go vet, staticcheck, terraform fmt of examples/, goreleaser check
lint:
	scripts/lint.sh

## install: build and install into ~/.terraform.d/plugins for use against a real cluster
install:
	scripts/install.sh

# terraform-provider-qemuscheduler
BINARY  := terraform-provider-qemuscheduler
VERSION ?= dev

.PHONY: build test unit lint
build:
	go build -ldflags "-X main.version=$(VERSION)" -o bin/$(BINARY) .

unit:
	go test ./...

test: unit

lint:
	gofmt -l . | (! grep .)
	go vet ./...

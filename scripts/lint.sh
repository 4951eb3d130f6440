#!/usr/bin/env bash
# make lint: gofmt, go vet, staticcheck and the formatting of the examples' HCL. Tools run at
# pinned versions with `go run`, so nothing is installed by hand.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "gofmt needed (run gofmt -w on them):" >&2
  echo "$unformatted" >&2
  exit 1
fi

echo "== go vet"
go vet ./...

echo "== staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.6.1 ./...

echo "== terraform fmt"
terraform_bin=${TERRAFORM:-$(command -v terraform || true)}
[ -n "$terraform_bin" ] || { echo "terraform is not on PATH; install Terraform >= 1.5" >&2; exit 1; }
if ! TF_CLI_CONFIG_FILE=/dev/null "$terraform_bin" fmt -check -recursive -diff examples; then
  echo "examples/ needs terraform fmt -recursive examples" >&2
  exit 1
fi

echo "== goreleaser check"
# The first run builds goreleaser (a few minutes); Go's build cache makes later runs quick.
go run github.com/goreleaser/goreleaser/v2@v2.12.0 check

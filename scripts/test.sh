#!/usr/bin/env bash
# make test (after make lint and make docs-check): unit tests, then the acceptance tests
# against the simulator with Terraform and again with OpenTofu.
set -euo pipefail
cd "$(dirname "$0")/.."

# Terraform and OpenTofu read this file; an empty one keeps the user's CLI config out of the
# tests and OpenTofu quiet (it warns on stdout when the file is missing, which breaks
# terraform-plugin-testing's version check).
tfrc=$(mktemp)
trap 'rm -f "$tfrc"' EXIT
export TF_CLI_CONFIG_FILE="$tfrc"

echo "== unit tests"
go test -race -count=1 ./...

terraform_bin=$(command -v terraform || true)
if [ -z "$terraform_bin" ]; then
  echo "terraform is not on PATH; install Terraform >= 1.5 to run the acceptance tests" >&2
  exit 1
fi
echo "== acceptance tests with $("$terraform_bin" version | head -1)"
TF_ACC=1 TF_ACC_TERRAFORM_PATH="$terraform_bin" go test -count=1 -timeout 30m ./internal/provider/

tofu_bin=$(scripts/tofu.sh)
echo "== acceptance tests with $("$tofu_bin" version | head -1)"
TF_ACC=1 TF_ACC_TERRAFORM_PATH="$tofu_bin" TF_ACC_PROVIDER_HOST=registry.opentofu.org \
  go test -count=1 -timeout 30m ./internal/provider/

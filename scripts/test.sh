#!/usr/bin/env bash
# make test (after make lint and make docs-check): unit tests, then the acceptance tests
# against the simulator with Terraform and again with OpenTofu.
set -euo pipefail
cd "$(dirname "$0")/.."

# Terraform and OpenTofu read this file; an empty one keeps the user's CLI config out of the
# tests and OpenTofu quiet (it warns on stdout when the file is missing, which breaks
# terraform-plugin-testing's version check).
tfrc=$(mktemp)
tofu_out=$(mktemp)
bpg_err=$(mktemp)
tofu_pid=""
cleanup() {
  [ -n "$tofu_pid" ] && kill "$tofu_pid" 2>/dev/null || true
  rm -f "$tfrc" "$tofu_out" "$bpg_err"
}
trap cleanup EXIT
export TF_CLI_CONFIG_FILE="$tfrc"

echo "== unit tests"
go test -race -count=1 ./...

terraform_bin=$(command -v terraform || true)
if [ -z "$terraform_bin" ]; then
  echo "terraform is not on PATH; install Terraform >= 1.5 to run the acceptance tests" >&2
  exit 1
fi
# On a new machine OpenTofu is built once (minutes): build it while the Terraform pass runs,
# whose tests mostly wait on the simulator's tasks and the CLI; cached, this returns at once.
scripts/tofu.sh >"$tofu_out" &
tofu_pid=$!
echo "== acceptance tests with $("$terraform_bin" version | head -1)"
TF_ACC=1 TF_ACC_TERRAFORM_PATH="$terraform_bin" go test -count=1 -timeout 30m ./internal/provider/
# The tests that run the bpg provider skip when scripts/bpg.sh cannot download its module, and
# go test prints no skip of a passing package: say it here. Once the tests built it, this
# returns at once.
bpg_status=0
scripts/bpg.sh >/dev/null 2>"$bpg_err" || bpg_status=$?
if [ "$bpg_status" = 2 ]; then
  echo "NOTE: the acceptance tests with the bpg provider were skipped, in both passes: $(cat "$bpg_err")" >&2
fi

if ! wait "$tofu_pid"; then
  tofu_pid=""
  echo "building OpenTofu failed (scripts/tofu.sh; its output is above)" >&2
  exit 1
fi
tofu_pid=""
tofu_bin=$(cat "$tofu_out")
echo "== acceptance tests with $("$tofu_bin" version | head -1)"
TF_ACC=1 TF_ACC_TERRAFORM_PATH="$tofu_bin" TF_ACC_PROVIDER_HOST=registry.opentofu.org \
  go test -count=1 -timeout 30m ./internal/provider/

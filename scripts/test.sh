#!/usr/bin/env bash
# make test (after make lint and make docs-check): unit tests, then the acceptance tests
# against the simulator with Terraform and, at the same time, with OpenTofu.
set -euo pipefail
cd "$(dirname "$0")/.."

# Terraform and OpenTofu read this file; an empty one keeps the user's CLI config out of the
# tests and OpenTofu quiet (it warns on stdout when the file is missing, which breaks
# terraform-plugin-testing's version check).
tfrc=$(mktemp)
bpg_err=$(mktemp)
tofu_pid=""
cleanup() {
  [ -n "$tofu_pid" ] && kill -- "-$tofu_pid" 2>/dev/null || true
  rm -f "$tfrc" "$bpg_err"
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

# The two passes run at the same time: their tests mostly wait on the simulator's tasks and on
# the CLI's processes, so together they take little more than one (benchmarks/make.md). The
# OpenTofu pass first builds OpenTofu once on a new machine (minutes; cached, scripts/tofu.sh
# returns at once). Each line says which pass printed it.
tofu_pass() {
  local tofu_bin
  if ! tofu_bin=$(scripts/tofu.sh); then
    echo "building OpenTofu failed (scripts/tofu.sh; its output is above)" >&2
    return 1
  fi
  echo "== acceptance tests with $("$tofu_bin" version | head -1)"
  TF_ACC=1 TF_ACC_TERRAFORM_PATH="$tofu_bin" TF_ACC_PROVIDER_HOST=registry.opentofu.org \
    go test -count=1 -timeout 40m ./internal/provider/
}
set -m # the OpenTofu pass gets its own process group, so that cleanup stops all of it
(set -o pipefail; tofu_pass 2>&1 | sed -u 's/^/[opentofu] /') &
tofu_pid=$!
set +m

tf_status=0
echo "== acceptance tests with $("$terraform_bin" version | head -1)"
(set -o pipefail
  TF_ACC=1 TF_ACC_TERRAFORM_PATH="$terraform_bin" go test -count=1 -timeout 40m ./internal/provider/ 2>&1 |
    sed -u 's/^/[terraform] /') || tf_status=$?

tofu_status=0
wait "$tofu_pid" || tofu_status=$?
tofu_pid=""

# The tests that run the bpg provider skip when scripts/bpg.sh cannot download its module, and
# go test prints no skip of a passing package: say it here. The tests built it, so this returns
# at once.
bpg_status=0
scripts/bpg.sh >/dev/null 2>"$bpg_err" || bpg_status=$?
if [ "$bpg_status" = 2 ]; then
  echo "NOTE: the acceptance tests with the bpg provider were skipped, in both passes: $(cat "$bpg_err")" >&2
fi

[ "$tf_status" = 0 ] || echo "the acceptance tests with Terraform failed (lines marked [terraform] above)" >&2
[ "$tofu_status" = 0 ] || echo "the acceptance tests with OpenTofu failed (lines marked [opentofu] above)" >&2
[ "$tf_status" = 0 ] && [ "$tofu_status" = 0 ]

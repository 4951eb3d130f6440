#!/usr/bin/env bash
# make docs: regenerate docs/ from the schema, templates/ and examples/ with tfplugindocs.
# make docs-check (scripts/docs.sh --check): render into a temporary directory instead and
# fail with the diff when it differs from docs/, which is left untouched.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=docs
if [ "${1:-}" = --check ]; then
  # tfplugindocs joins --rendered-website-dir to the provider directory, so name the
  # temporary directory relative to it.
  out=$(printf '%s' "$PWD" | sed 's|/[^/]*|../|g')${tmp#/}/docs
fi
TF_CLI_CONFIG_FILE="$tmp/terraformrc" go run github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs@v0.25.0 \
  generate --provider-name qemuscheduler --rendered-website-dir "$out" >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
if [ "$out" = docs ]; then
  echo "docs/ regenerated"
  exit 0
fi
if ! diff -ru docs "$tmp/docs" >"$tmp/diff"; then
  cat "$tmp/diff"
  echo "docs/ differs from what the schema, templates/ and examples/ generate (diff above): run make docs and commit docs/" >&2
  exit 1
fi
echo "docs/ is up to date"

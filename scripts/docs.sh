#!/usr/bin/env bash
# make docs: regenerate docs/ from the schema, templates/ and examples/ with tfplugindocs.
set -euo pipefail
cd "$(dirname "$0")/.."
tfrc=$(mktemp)
trap 'rm -f "$tfrc"' EXIT
TF_CLI_CONFIG_FILE="$tfrc" go run github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs@v0.25.0 generate --provider-name qemuscheduler

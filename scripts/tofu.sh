#!/usr/bin/env bash
# Prints the path of an OpenTofu binary: `tofu` from PATH, or one built from the
# github.com/opentofu/opentofu module (plain `go install` refuses it because of a replace
# directive) and cached under the user's cache directory. The first build takes minutes.
set -euo pipefail
version=v1.12.6
if command -v tofu >/dev/null 2>&1; then
  command -v tofu
  exit 0
fi
cache="${XDG_CACHE_HOME:-$HOME/.cache}/qemuscheduler/tofu-$version"
if [ ! -x "$cache/tofu" ]; then
  echo "building OpenTofu $version into $cache (first run only)..." >&2
  dir=$(go mod download -json "github.com/opentofu/opentofu@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  mkdir -p "$cache"
  (cd "$dir" && go build -o "$cache/tofu.tmp" ./cmd/tofu) >&2
  mv "$cache/tofu.tmp" "$cache/tofu"
fi
echo "$cache/tofu"

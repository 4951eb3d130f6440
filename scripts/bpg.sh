#!/usr/bin/env bash
# Prints the directory holding a terraform-provider-proxmox (bpg) binary built from the
# github.com/bpg/terraform-provider-proxmox module at an explicit version, cached under the
# user's cache directory; the acceptance test that runs bpg against the simulator uses it. The
# first build takes minutes. Exit status 2 (and a message) when the module cannot be
# downloaded, so that the caller can skip with that reason.
set -euo pipefail
version=v0.80.0
cache="${XDG_CACHE_HOME:-$HOME/.cache}/qemuscheduler/bpg-proxmox-$version"
if [ ! -x "$cache/terraform-provider-proxmox" ]; then
  echo "building github.com/bpg/terraform-provider-proxmox@$version into $cache (first run only)..." >&2
  if ! json=$(go mod download -json "github.com/bpg/terraform-provider-proxmox@$version"); then
    echo "cannot download github.com/bpg/terraform-provider-proxmox@$version from the Go module proxy: $json" >&2
    exit 2
  fi
  dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"$json")
  mkdir -p "$cache"
  # The two acceptance passes may build it at the same time: each in its own directory, and
  # the last rename wins with an identical binary.
  tmp=$(mktemp -d "$cache/build.XXXXXX")
  (cd "$dir" && go build -ldflags "-X main.version=${version#v}" -o "$tmp/terraform-provider-proxmox" .) >&2
  mv "$tmp/terraform-provider-proxmox" "$cache/terraform-provider-proxmox"
  rmdir "$tmp"
fi
echo "$cache"

#!/usr/bin/env bash
# make install: build the provider and install it into the user's implied local plugin
# directory, where `terraform init` finds it without a registry, then print the
# required_providers block to use. The version is VERSION, else the newest in CHANGELOG.md.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${VERSION:-$(sed -n 's/^## \([0-9][0-9.]*[0-9A-Za-z.-]*\) .*/\1/p' CHANGELOG.md | head -1)}
if ! [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "VERSION must be a semantic version such as 0.1.0, not \"$version\"" >&2
  exit 1
fi
platform=$(go env GOOS)_$(go env GOARCH)
plugins="$HOME/.terraform.d/plugins"
bin="terraform-provider-qemuscheduler_v$version"
dir="$plugins/registry.terraform.io/qemuscheduler/qemuscheduler/$version/$platform"
mkdir -p "$dir"
# No -trimpath: make demo and the tests build without it, so the build cache they filled serves
# this build too (with it, every package is compiled again: about 45 s).
go build -ldflags "-X main.version=$version" -o "$dir/$bin" .
echo "installed $dir/$bin"
# OpenTofu reads the short source qemuscheduler/qemuscheduler as registry.opentofu.org/...: the
# same binary there lets a configuration name the provider either way under both CLIs.
tofu_dir="$plugins/registry.opentofu.org/qemuscheduler/qemuscheduler/$version/$platform"
mkdir -p "$tofu_dir"
cp "$dir/$bin" "$tofu_dir/$bin"
echo "installed $tofu_dir/$bin"
cat <<EOF2

Use it with this block, then terraform init (or tofu init):

terraform {
  required_providers {
    qemuscheduler = {
      source  = "qemuscheduler/qemuscheduler"
      version = "$version"
    }
  }
}

Terraform and OpenTofu both look in ~/.terraform.d/plugins when the CLI configuration has no
provider_installation block.
EOF2

#!/usr/bin/env bash
# make demo: build the provider, start the simulated lab cluster, apply examples/demo with
# Terraform (or the CLI in $TERRAFORM: TERRAFORM=$(scripts/tofu.sh) for OpenTofu) and show
# where each VM went and why. Everything lives in a temporary directory;
# the user's Terraform configuration is never touched.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
sim_pid=""
cleanup() {
  [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

terraform_bin=${TERRAFORM:-$(command -v terraform || true)}
[ -n "$terraform_bin" ] || { echo "terraform is not on PATH" >&2; exit 1; }
cli=$(basename "$terraform_bin")

echo "== building the provider and the simulator"
go build -o "$work/bin/terraform-provider-qemuscheduler" .
go build -o "$work/pvesim" ./internal/pvesim/cmd/pvesim

echo "== starting the simulated cluster (examples/lab/cluster.yaml)"
"$work/pvesim" --cluster examples/lab/cluster.yaml --ca-out "$work/ca.pem" --env-out "$work/env" --task-duration 200ms >"$work/pvesim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 50); do [ -s "$work/env" ] && break; sleep 0.1; done
[ -s "$work/env" ] || { cat "$work/pvesim.log" >&2; exit 1; }
# shellcheck disable=SC1091
. "$work/env"
head -1 "$work/pvesim.log"

cat >"$work/terraformrc" <<EOF2
provider_installation {
  dev_overrides {
    "registry.terraform.io/qemuscheduler/qemuscheduler" = "$work/bin"
    "registry.opentofu.org/qemuscheduler/qemuscheduler" = "$work/bin"
  }
  direct {}
}
EOF2
export TF_CLI_CONFIG_FILE="$work/terraformrc" TF_IN_AUTOMATION=1 TF_VAR_ca_cert_file="$work/ca.pem"
cp -r examples/demo "$work/demo"

echo "== $cli plan -var web_count=4: one web server too many for three usable nodes"
# The plan places the whole set: it refuses before anything is created, and says why.
if "$terraform_bin" -chdir="$work/demo" plan -input=false -no-color -var web_count=4 >"$work/refused.txt" 2>&1; then
  echo "the plan of four web servers was expected to fail" >&2
  exit 1
fi
# Any other failure (a CLI that finds no provider, say) is not the refusal this step shows.
grep -q '^Error: No placement for' "$work/refused.txt" || { cat "$work/refused.txt" >&2; exit 1; }
# The first error that explains (the other VMs a set refuses point at it), to its per-node lines.
sed -n '/^Error: /,$p' "$work/refused.txt" |
  awk '/^Error: /{n++} {blk[n] = blk[n] $0 "\n"} END {for (i = 1; i <= n; i++) if (blk[i] !~ /another error of this plan/) {printf "%s", blk[i]; exit}}' |
  sed -n '1,/^Per node:/p;/^  pve/p' | head -30

echo "== $cli apply"
"$terraform_bin" -chdir="$work/demo" apply -auto-approve -input=false -compact-warnings

echo "== acting on the running simulator: pvesim load pve2 cpu_load=0.95 (no restart, the VMs stay)"
sim() { "$work/pvesim" --ca-cert "$work/ca.pem" "$@"; }
sim load pve2 cpu_load=0.95
echo "== $cli plan: the database's placement follows the load (outputs only, no VM changes)"
"$terraform_bin" -chdir="$work/demo" plan -input=false -compact-warnings | sed -n '/Changes to Outputs/,/^$/p'

echo "== a node of the HA web tier fails: pvesim recover pve4 (a spare node), then pvesim fail the node of web-1"
# The HA manager recovers web-1 where the HA rules allow: not next to another web server
# (negative resource affinity), not on the GPU node pve5 (node affinity from the node regex),
# although pve5 is the least loaded; that leaves pve4.
sim recover pve4
web1=$("$terraform_bin" -chdir="$work/demo" output -json web_nodes | sed -n 's/.*"web-1":"\([^"]*\)".*/\1/p')
sim fail "$web1"
echo "== $cli plan after the failover: no change to any VM; web-1 runs elsewhere, its rules hold"
"$terraform_bin" -chdir="$work/demo" plan -input=false -no-color -compact-warnings >"$work/failover.txt"
if grep -q '^Plan:' "$work/failover.txt"; then
  grep '^Plan:' "$work/failover.txt"
  echo "the plan after the failover was expected to change no VM" >&2
  exit 1
fi
echo "no VM changes; the outputs show where the web servers run now and the HA rules that hold them:"
"$terraform_bin" -chdir="$work/demo" apply -refresh-only -auto-approve -input=false -compact-warnings >/dev/null
"$terraform_bin" -chdir="$work/demo" output web_nodes
recovered=$("$terraform_bin" -chdir="$work/demo" output -json web_nodes | sed -n 's/.*"web-1":"\([^"]*\)".*/\1/p')
if [ "$recovered" != pve4 ]; then
  echo "web-1 was recovered on ${recovered:-no node}, not on pve4, the one node its HA rules allow" >&2
  exit 1
fi
"$terraform_bin" -chdir="$work/demo" output web_ha_rules

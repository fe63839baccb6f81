#!/usr/bin/env bash
# Installs the host packages DeployBench and its tests need (lists in .ci/apt-packages*.txt),
# and says plainly what cannot be installed from here (Terraform is not a Debian package).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t wanted < <(cat .ci/apt-packages*.txt | sed 's/#.*//' | awk 'NF' | sort -u)
missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "install_host_deps: needs root to install: ${missing[*]}" >&2
    exit 1
  fi
  echo "install_host_deps: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if ! command -v terraform >/dev/null; then
  echo "install_host_deps: terraform not found on PATH: install Terraform >= 1.5 (not a Debian package)" >&2
  exit 1
fi

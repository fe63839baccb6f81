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
# Local machines are systemd-nspawn containers in a user namespace of their own.
if [ "$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)" = 0 ]; then
  echo "install_host_deps: user namespaces are off (user.max_user_namespaces = 0): local machines need them" >&2
  exit 1
fi
if ! systemd-nspawn --version >/dev/null 2>&1; then
  echo "install_host_deps: systemd-nspawn does not run: apt-get install systemd-container" >&2
  exit 1
fi
if ! command -v terraform >/dev/null; then
  echo "install_host_deps: terraform not found on PATH: install Terraform >= 1.5 (not a Debian package)" >&2
  exit 1
fi

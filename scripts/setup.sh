#!/usr/bin/env bash
# Install what corescope needs. `setup.sh` alone: the package (for `corescope doctor`).
# `setup.sh test`: also the test and benchmark tools (Debian packages need root).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

if [ "${1:-}" = "test" ]; then
  pkgs=(sysstat linux-perf prometheus chromium chromium-driver golang-go ethtool prometheus-node-exporter strace time)
  missing=()
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
      echo "setup: missing Debian packages (${missing[*]}); run as root to install them" >&2
    else
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq
      apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
  fi
  # already installed from here as pyproject says, every requirement met: nothing to do
  "$PY" scripts/installed.py test || \
    "$PY" -m pip install -q --disable-pip-version-check -e '.[test]'
else
  "$PY" scripts/installed.py || "$PY" -m pip install -q --disable-pip-version-check -e .
fi

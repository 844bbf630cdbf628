#!/usr/bin/env bash
# Installs every build and test dependency of atl from Debian's archive.
# Idempotent; run as root (or with sudo available) on Debian 12.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config musl-tools
  libcaf-dev libboost-program-options-dev libspdlog-dev libfmt-dev
  nlohmann-json3-dev libsqlite3-dev libssl-dev libgtest-dev libgmock-dev libcpp-httplib-dev
  libjs-chart.js libjs-xterm node-xterm python3 procps iproute2
)
# Test-only extras: a real PyTorch for the DDP test, pytest for the Python package
# (prometheus_client parses /metrics there),
# venv for the Ray tests (they pip-install Ray once into build/ray-venv), OpenMPI
# for the fan-out bench; headless Chromium and Selenium for the dashboard's browser tests.
# zsh: atlctl's completion is tried in it.
if [[ "${1:-}" == "--tests" ]]; then
  packages+=(gdb python3-torch python3-venv python3-pytest python3-prometheus-client openmpi-bin clang-format clang libfuzzer-14-dev shellcheck
    chromium chromium-driver python3-selenium python3-websocket python3-cloudpickle zsh)
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"

#!/usr/bin/env bash
# Installs what ringside needs on Debian 12 (bookworm): build tools, SQLite, GoogleTest,
# Google Benchmark, Gloo, PyTorch (Debian's python3-torch, used by the DDP sample), and the
# GUI/X11 test tools for later. Idempotent and quiet: when every package is already installed
# it touches nothing and returns in well under a second. Needs root (or sudo) only when
# something is missing.
set -euo pipefail

PACKAGES=(
  # build
  build-essential cmake ninja-build pkg-config ccache
  # storage and tests
  libsqlite3-dev sqlite3 libgtest-dev libgmock-dev libbenchmark-dev
  # the library we trace, and the PyTorch the DDP sample runs on
  libgloo-dev python3 python3-torch
  # the viewer (RINGSIDE_GUI) and its headless tests
  libglfw3-dev libimgui-dev zlib1g-dev xvfb xauth mesa-utils libgl1-mesa-dri xdotool
  # `ringside report --format html` screenshot test (tests/e2e_report)
  chromium
  # wall clocks of emulated hosts (tests/e2e_clock: libfaketime)
  faketime
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  # Status "install ok installed" is the only state that counts as present.
  if [[ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)" != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "setup-deps: installing ${missing[*]}"
SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then
    SUDO=(sudo)
  else
    echo "setup-deps: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "${SUDO[@]}" apt-get update -qq >"$log" 2>&1 ||
   ! "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$log" 2>&1; then
  cat "$log" >&2
  echo "setup-deps: apt-get failed" >&2
  exit 1
fi
echo "setup-deps: done"

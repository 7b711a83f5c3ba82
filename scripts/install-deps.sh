#!/usr/bin/env bash
# Install the Debian 12 packages InferDesk needs to build and test. Idempotent; uses sudo when not root.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
PKGS=(build-essential cmake ninja-build pkg-config git ca-certificates
      nlohmann-json3-dev libpcre2-dev libcli11-dev libgtest-dev libsqlite3-dev
      # the OpenAI-compatible server (Boost.Beast/Asio) and the load generator (libcurl)
      libboost-dev libcurl4-openssl-dev
      # the Hub downloader's SHA-256 (OpenSSL's libcrypto)
      libssl-dev
      # the Qt 6 desktop app: Widgets/Test/Concurrent, Charts and the OpenGL module its CMake
      # package needs, the OpenGL headers Qt's CMake files require, the xcb platform plugins, a
      # font, and a virtual X server for running it without a screen; Svg for the dashboard's
      # plot export
      qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev qt6-qpa-plugins libgl-dev fonts-dejavu-core
      # the Hub token in the desktop's secret service (QtKeychain)
      qtkeychain-qt6-dev
      xvfb xauth
      # man pages of the programs, made from their --help
      help2man
      # the server tests' real clients: curl, and the official openai SDK (from npm) under node
      curl
      # tools/lint: clang-format (format.sh) and Universal Ctags for function lengths (size_report.sh)
      clang-format universal-ctags
      # tests/fuzz (scripts/fuzz.sh): clang 14 and its runtimes (libFuzzer, ASan, UBSan)
      clang-14 libclang-rt-14-dev)
# Node.js 18+ with npm: Debian's packages, unless a node and npm are already there (a NodeSource
# nodejs bundles npm and conflicts with Debian's npm package).
if ! { command -v node && command -v npm; } >/dev/null 2>&1; then
  PKGS+=(nodejs npm)
fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

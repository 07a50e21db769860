#!/usr/bin/env bash
# Installs the Debian packages temper needs (idempotent, quiet when all are
# present), then configures and builds into ${BUILD_DIR:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake make gcc pkg-config llvm-19-dev libzstd-dev libcmocka-dev
          libsqlite3-dev sqlite3 libjansson-dev protobuf-c-compiler libprotobuf-c-dev libonnx-dev libxgboost-dev zlib1g-dev libxml2-dev libedit-dev libffi-dev
          libpq-dev postgresql   # the shared database's client, and the server the tests start and stop
          libxml2-utils          # xmllint: the tests check the report's HTML and SVG
          python3-torch python3-torchvision python3-onnx python3-numpy)   # the last four: the PyTorch reference of the ONNX tests
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} ${CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)" 2>&1 | grep -v '^\[' || true
test -x "$BUILD_DIR/temper"

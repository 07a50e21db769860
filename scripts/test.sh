#!/usr/bin/env bash
# Builds with -Werror and runs the suite, then again under ASan + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=build-test CMAKE_ARGS="-DTEMPER_WERROR=ON" BUILD_TYPE=RelWithDebInfo scripts/setup.sh
(cd build-test && ctest --output-on-failure -j2)
BUILD_DIR=build-asan CMAKE_ARGS="-DTEMPER_WERROR=ON -DTEMPER_SANITIZE=ON" BUILD_TYPE=Debug scripts/setup.sh
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j2)

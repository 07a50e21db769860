#!/usr/bin/env bash
# Builds with -Werror and runs the suite, then again under ASan + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=build-test CMAKE_ARGS="-DTEMPER_WERROR=ON" BUILD_TYPE=RelWithDebInfo scripts/setup.sh
(cd build-test && ctest --output-on-failure -j2)
BUILD_DIR=build-asan CMAKE_ARGS="-DTEMPER_WERROR=ON -DTEMPER_SANITIZE=ON" BUILD_TYPE=Debug scripts/setup.sh
# short allocation stacks and a 32 MB quarantine: a quarter less time (LLVM's
# allocations all pass through ASan); a report still names the faulting line,
# rerun the one test with plain ASAN_OPTIONS=detect_leaks=1 for the full stacks
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:malloc_context_size=6:quarantine_size_mb=32 ctest --output-on-failure -j2)

#!/usr/bin/env bash
# Fuzzing campaign: every libFuzzer target of fuzz/ for MINUTES each (default
# 30), one per core at a time, under ASan + UBSan, built with clang into
# build-fuzz/. Corpora grow in build-fuzz/corpus/<target> (seeded from
# tests/fuzz/corpus); a finding is written to build-fuzz/crashes/<target>/ —
# minimise it, fix the reader, and keep it in tests/fuzz/crashers/<target>/,
# which the suite replays.
#   scripts/fuzz.sh [MINUTES] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${1:-30}
shift || true
TARGETS=${*:-text onnx npy log config db}
JOBS=${JOBS:-$(nproc)}
scripts/setup.sh >/dev/null
command -v clang >/dev/null || { echo "fuzz.sh: clang is needed (apt-get install clang)" >&2; exit 1; }
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTEMPER_FUZZ=ON >/dev/null
cmake --build build-fuzz -j"$(nproc)" $(for t in $TARGETS; do echo --target fuzz_$t; done) 2>&1 | grep -E 'error|warning' || true
run() {
  local t=$1 dict=""
  mkdir -p build-fuzz/corpus/$t build-fuzz/crashes/$t
  cp -n tests/fuzz/corpus/$t/* build-fuzz/corpus/$t/ 2>/dev/null || true
  [ -f fuzz/dict/$t.dict ] && dict="-dict=fuzz/dict/$t.dict"
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 build-fuzz/fuzz/fuzz_$t build-fuzz/corpus/$t $dict \
    -max_total_time=$((MINUTES * 60)) -timeout=20 -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix=build-fuzz/crashes/$t/ > build-fuzz/$t.log 2>&1 || true
  local execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' build-fuzz/$t.log | grep -o '[0-9]*$' || echo 0)
  local found=$(ls build-fuzz/crashes/$t | wc -l)
  echo "fuzz_$t: $MINUTES min, $execs executions, corpus $(ls build-fuzz/corpus/$t | wc -l) inputs, $found findings"
}
pids=()
for t in $TARGETS; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do sleep 5; done
  run "$t" &
done
wait

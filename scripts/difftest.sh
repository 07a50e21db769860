#!/usr/bin/env bash
# The differential-testing campaign: N random networks (default 10000), each
# compiled with default, random and mixed-block schedule configs and compared
# with the reference interpreter, split over one process per core.
#   scripts/difftest.sh [N] [FIRST_SEED]      (THREADS=2 runs the kernels on two threads;
#                                             TARGET=x86-64-v3 compiles for AVX2 on an AVX-512 machine)
# Mismatches are written to difftest-out/ with the `temper run` line that
# replays each; the summary lines go to difftest-out/summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10000}
FIRST=${2:-1}
THREADS=${THREADS:-1}
TARGET=${TARGET:-}
JOBS=${JOBS:-$(nproc)}
scripts/setup.sh
OUT=difftest-out
mkdir -p "$OUT"
per=$(( (N + JOBS - 1) / JOBS ))
pids=()
for j in $(seq 0 $((JOBS - 1))); do
  start=$(( FIRST + j * per ))
  count=$(( N - j * per < per ? N - j * per : per ))
  [ "$count" -gt 0 ] || continue
  build/bench/difftest --seed "$start" --count "$count" --threads "$THREADS" ${TARGET:+--target "$TARGET"} --out "$OUT" > "$OUT/part$j.log" 2>&1 &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
grep -h '^difftest: seeds' "$OUT"/part*.log | tee "$OUT/summary.txt"
grep -h -A1 '^seed' "$OUT"/part*.log || true
exit $rc

#!/usr/bin/env bash
# Latency of the text-format ResNets under temper's default schedules, at 1 and
# 2 threads: P processes x R timed runs each; prints the median of the
# per-process medians and their spread.
# usage: bench/resnet_latency.sh [MODEL...]   (defaults: resnet18, resnet50)
set -euo pipefail
cd "$(dirname "$0")/.."
P=${P:-5}; R=${R:-30}
models=("$@"); [ ${#models[@]} -eq 0 ] && models=(examples/resnet18.relay examples/resnet50.relay)
for m in "${models[@]}"; do
  for t in 1 2; do
    meds=()
    for ((p = 0; p < P; p++)); do
      meds+=("$(build/temper run "$m" --threads "$t" --repeat "$R" | sed -n 's/^latency: median \([0-9.]*\) ms.*/\1/p')")
    done
    printf '%s\n' "${meds[@]}" | sort -n | awk -v m="$m" -v t="$t" '{v[NR]=$1} END {
      printf "| %s | %d | %.2f | %.2f–%.2f |\n", m, t, v[int((NR+1)/2)], v[1], v[NR] }'
  done
done

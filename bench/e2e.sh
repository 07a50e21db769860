#!/usr/bin/env bash
# Whole-model latency, side by side in one run: temper's untuned build, its
# tuned build (from a tuning database), and PyTorch (eager and TorchScript
# frozen with optimize_for_inference; Debian's python3-torch), on the same
# torchvision weights and input. Also checks temper's output against
# PyTorch's. Ratios are temper / best PyTorch; medians of R runs in P
# processes.
# usage: bench/e2e.sh [DB] [MODELS...]      (DB default out/tuning.db)
set -euo pipefail
cd "$(dirname "$0")/.."
DB=${1:-out/tuning.db}; shift || true
MODELS=("$@"); [ ${#MODELS[@]} -eq 0 ] && MODELS=(resnet18 resnet50)
R=${R:-30}; P=${P:-3}
work=out/e2e; mkdir -p "$work"
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
lat() { build/temper run "$@" --repeat "$R" | sed -n 's/^latency: median \([0-9.]*\) ms.*/\1/p'; }
echo "| model | threads | temper untuned ms | temper tuned ms | PyTorch eager ms | PyTorch TorchScript ms | tuned / best PyTorch | untuned / tuned | max abs diff vs PyTorch |"
echo "|---|---|---|---|---|---|---|---|---|"
for m in "${MODELS[@]}"; do
  dir=$work/$m
  /usr/bin/python3 scripts/torch_peer.py "$m" "$dir" --threads 1 --repeat 3 > /dev/null
  build/temper build "examples/$m.relay" --params "$dir" -o "$dir/untuned.so" > /dev/null
  if [ -f "$DB" ]; then build/temper build "examples/$m.relay" --params "$dir" --db "$DB" -o "$dir/tuned.so" > "$dir/build.txt"
  else cp "$dir/untuned.so" "$dir/tuned.so"; [ -f "$dir/untuned.params" ] && cp "$dir/untuned.params" "$dir/tuned.params"; fi
  build/temper run "$dir/tuned.so" --input "data=$dir/input.npy" --save-output "$dir/out" --repeat 1 > /dev/null
  diff=$(/usr/bin/python3 -c "import numpy as n; a=n.load('$dir/out/output_0.npy'); b=n.load('$dir/torch_output.npy'); print('%.2e' % abs(a-b).max())")
  for t in 1 2; do
    u=(); tu=(); pe=(); pt=()
    for ((p = 0; p < P; p++)); do
      u+=("$(lat "$dir/untuned.so" --threads $t)")
      tu+=("$(lat "$dir/tuned.so" --threads $t)")
      out=$(/usr/bin/python3 scripts/torch_peer.py "$m" "$dir/peer" --threads $t --repeat "$R")
      pe+=("$(echo "$out" | sed -n 's/^pytorch eager.*median \([0-9.]*\) ms/\1/p')")
      pt+=("$(echo "$out" | sed -n 's/^pytorch torchscript.*median \([0-9.]*\) ms/\1/p')")
    done
    U=$(printf '%s\n' "${u[@]}" | median); TU=$(printf '%s\n' "${tu[@]}" | median)
    PE=$(printf '%s\n' "${pe[@]}" | median); PT=$(printf '%s\n' "${pt[@]}" | median)
    awk -v m="$m" -v t=$t -v u="$U" -v tu="$TU" -v pe="$PE" -v pt="$PT" -v d="$diff" 'BEGIN {
      best = pe < pt ? pe : pt
      printf "| %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %s |\n", m, t, u, tu, pe, pt, tu / best, u / tu, d }'
  done
done

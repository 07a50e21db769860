#!/usr/bin/env bash
# Whole-model latency, side by side in one run, on the very same weights:
# torchvision's ResNets exported to ONNX (scripts/export_models.py), built by
# temper untuned and tuned (from a tuning database), and PyTorch (eager and
# TorchScript frozen with optimize_for_inference; Debian's python3-torch), and
# ONNX Runtime (npm's onnxruntime-node, all graph optimizations) when it is
# installed in out/ort (see bench/ort_peer.js).
# The tuned builds use the database's `temper refine` choices for each model
# and thread count where it has them (run refine first for the best build).
# Neither the untuned nor the tuned build takes the shipped pre-tuned logs
# (--no-pretuned); the column "logs" is an untuned build that does (logs/).
# Checks temper's logits against PyTorch's. Medians of R runs in P processes.
# usage: bench/e2e.sh [DB] [MODELS...]      (DB default out/tuning.db)
set -euo pipefail
cd "$(dirname "$0")/.."
DB=${1:-out/tuning.db}; shift || true
MODELS=("$@"); [ ${#MODELS[@]} -eq 0 ] && MODELS=(resnet18 resnet50)
R=${R:-30}; P=${P:-3}
models=out/models; work=out/e2e; mkdir -p "$work"
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
lat() { build/temper run "$@" --repeat "$R" | sed -n 's/^latency: median \([0-9.]*\) ms.*/\1/p'; }
ort=0; [ -d out/ort/node_modules/onnxruntime-node ] && command -v node > /dev/null && ort=1
echo "| model | threads | temper untuned ms | temper + shipped logs ms | temper tuned ms | PyTorch eager ms | PyTorch TorchScript ms | ONNX Runtime ms | tuned / best peer | untuned / tuned | max abs diff of logits vs PyTorch |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for m in "${MODELS[@]}"; do
  [ -f "$models/$m.onnx" ] || /usr/bin/python3 scripts/export_models.py "$models" "$m" > /dev/null
  dir=$work/$m; mkdir -p "$dir"
  build/temper build "$models/$m.onnx" --no-pretuned -o "$dir/untuned.so" > /dev/null
  # the tuned library is built for the thread count it runs at, as a user
  # would: the records (and so the configs) differ between 1 and 2 threads
  for t in 1 2; do
    if [ -f "$DB" ]; then build/temper build "$models/$m.onnx" --db "$DB" --threads $t --no-pretuned -o "$dir/tuned-t$t.so" > "$dir/build-t$t.txt"
    else build/temper build "$models/$m.onnx" --threads $t --no-pretuned -o "$dir/tuned-t$t.so" > "$dir/build-t$t.txt"; fi
    build/temper build "$models/$m.onnx" --threads $t -o "$dir/logs-t$t.so" > "$dir/logs-t$t.txt"
  done
  build/temper run "$dir/tuned-t1.so" --input "data=$models/$m.input.npy" --save-output "$dir/out" --repeat 1 > /dev/null
  diff=$(/usr/bin/python3 -c "import numpy as n; a=n.load('$dir/out/output_0.npy'); b=n.load('$models/$m.output.npy'); print('%.2e' % abs(a-b).max())")
  for t in 1 2; do
    u=(); lg=(); tu=(); pe=(); pt=(); po=()
    for ((p = 0; p < P; p++)); do
      u+=("$(lat "$dir/untuned.so" --threads $t)")
      lg+=("$(lat "$dir/logs-t$t.so" --threads $t)")
      tu+=("$(lat "$dir/tuned-t$t.so" --threads $t)")
      out=$(/usr/bin/python3 scripts/torch_peer.py "$m" "$dir/peer" --threads $t --repeat "$R")
      pe+=("$(echo "$out" | sed -n 's/^pytorch eager.*median \([0-9.]*\) ms/\1/p')")
      pt+=("$(echo "$out" | sed -n 's/^pytorch torchscript.*median \([0-9.]*\) ms/\1/p')")
      if [ $ort = 1 ]; then
        po+=("$(NODE_PATH=out/ort/node_modules node bench/ort_peer.js "$models/$m.onnx" "$models/$m.input.npy" $t "$R" | sed -n 's/.*median \([0-9.]*\) ms/\1/p')")
      else po+=(0); fi
    done
    U=$(printf '%s\n' "${u[@]}" | median); LG=$(printf '%s\n' "${lg[@]}" | median); TU=$(printf '%s\n' "${tu[@]}" | median)
    PE=$(printf '%s\n' "${pe[@]}" | median); PT=$(printf '%s\n' "${pt[@]}" | median); PO=$(printf '%s\n' "${po[@]}" | median)
    awk -v m="$m" -v t=$t -v u="$U" -v lg="$LG" -v tu="$TU" -v pe="$PE" -v pt="$PT" -v po="$PO" -v d="$diff" 'BEGIN {
      best = pe < pt ? pe : pt; if (po > 0 && po < best) best = po
      ortcol = "-"; if (po > 0) ortcol = sprintf("%.2f", po)
      printf "| %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %s | %.2f | %.2f | %s |\n", m, t, u, lg, tu, pe, pt, ortcol, tu / best, u / tu, d }'
  done
done

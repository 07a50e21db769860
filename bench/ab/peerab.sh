#!/usr/bin/env bash
# usage: [T=1 N=10 R=20] bench/ab/peerab.sh MODEL.onnx INPUT.npy A.so [B.so]
# temper against ONNX Runtime on a noisy machine: one process of ONNX
# Runtime (bench/ort_peer.js, installed in out/ort) and one of each temper
# library, alternating, the order swapped every round; prints, per library,
# the medians and the library / ONNX Runtime ratio per round (its median and
# range), and with B.so also B.so / A.so per round. Ratios of neighbouring
# processes hold where absolute times drift (bench/RESULTS.md).
source "$(dirname "$0")/common.sh"
M=$1; IN=$2; A=$3; B=${4:-}
[ -f "$M" ] && [ -f "$IN" ] && [ -f "$A" ] && { [ -z "$B" ] || [ -f "$B" ]; } ||
  { echo "usage: peerab.sh MODEL.onnx INPUT.npy A.so [B.so]" >&2; exit 2; }
[ -d "$ROOT/out/ort/node_modules/onnxruntime-node" ] || { echo "peerab.sh: ONNX Runtime is not installed in out/ort (bench/ort_peer.js)" >&2; exit 2; }
ort() { NODE_PATH="$ROOT/out/ort/node_modules" node "$ROOT/bench/ort_peer.js" "$M" "$IN" $T $R | sed -n 's/.*median \([0-9.]*\) ms/\1/p'; }
lib() { "$TEMPER" run "$1" --threads $T --repeat $R | latency; }   # latency does not depend on the values
rows=$(for ((i = 0; i < N; i++)); do
  if ((i % 2)); then b=-; [ -n "$B" ] && b=$(lib "$B"); a=$(lib "$A"); o=$(ort)
  else o=$(ort); a=$(lib "$A"); b=-; [ -n "$B" ] && b=$(lib "$B"); fi
  if [ -n "$o" ] && [ -n "$a" ] && [ -n "$b" ]; then echo "$o $a $b"
  else echo "peerab.sh: round $i: a run printed no latency (ONNX Runtime '$o', A '$a', B '$b'); round left out" >&2; fi
done)
[ -n "$rows" ] || { echo "peerab.sh: no round completed" >&2; exit 1; }
echo "A: ONNX Runtime, B: $A"; echo "$rows" | gawk '{print $1, $2}' | summarize
[ -n "$B" ] && { echo "A: ONNX Runtime, B: $B"; echo "$rows" | gawk '{print $1, $3}' | summarize
                 echo "A: $A, B: $B"; echo "$rows" | gawk '{print $2, $3}' | summarize; }
exit 0

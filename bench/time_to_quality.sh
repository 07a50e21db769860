#!/usr/bin/env bash
# Time to quality: the latency of the library built from what one tuning run
# had recorded after M minutes, for M in MINUTES (default 0 1 3 5 10 20),
# next to a build from the shipped pre-tuned logs alone and ONNX Runtime
# (when installed in out/ort, see bench/e2e.sh). The records come from DB,
# the run's first record starting the clock; each minute's build reads only
# the records measured by then (exported, filtered by time, imported into a
# scratch database), without refine choices or pre-tuned logs. All the
# libraries are timed side by side: medians of R runs in P processes each,
# the processes interleaved.
# usage: bench/time_to_quality.sh DB MODEL.onnx THREADS [MINUTES...]
set -euo pipefail
cd "$(dirname "$0")/.."
DB=$1 MODEL=$2 T=$3; shift 3
MINUTES=("$@"); [ ${#MINUTES[@]} -eq 0 ] && MINUTES=(0 1 3 5 10 20)
R=${R:-20}; P=${P:-3}
work=$(mktemp -d /tmp/temper_ttq.XXXXXX); trap 'rm -rf "$work"' EXIT
build/temper db export "$DB" -o "$work/all.jsonl" > /dev/null
libs=(); names=()
for m in "${MINUTES[@]}"; do
  /usr/bin/python3 - "$work/all.jsonl" "$m" "$T" > "$work/m$m.jsonl" <<'EOF'
import json, sys, datetime
path, minutes, threads = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
recs = [json.loads(l) for l in open(path)]
when = lambda r: datetime.datetime.fromisoformat(r["measured_at"].replace("Z", "+00:00"))
mine = [r for r in recs if r["threads"] == threads]
if mine:
    t0 = min(when(r) for r in mine)
    for r in mine:
        if (when(r) - t0).total_seconds() <= minutes * 60:
            print(json.dumps(r))
EOF
  n=$(wc -l < "$work/m$m.jsonl")
  [ "$m" = 0 ] && n=0   # minute 0: the untuned build
  if [ "$n" -gt 0 ]; then
    rm -f "$work/m$m.db"
    build/temper db import "$work/m$m.db" "$work/m$m.jsonl" > /dev/null
    build/temper build "$MODEL" --db "$work/m$m.db" --threads "$T" --no-pretuned -o "$work/m$m.so" > "$work/m$m.txt"
  else
    build/temper build "$MODEL" --threads "$T" --no-pretuned -o "$work/m$m.so" > "$work/m$m.txt"
  fi
  libs+=("$work/m$m.so"); names+=("tuned $m min ($n records)")
done
if [ -d logs ] && ls logs/*.jsonl > /dev/null 2>&1; then
  build/temper build "$MODEL" --threads "$T" --pretuned logs -o "$work/pre.so" > "$work/pre.txt"
  libs+=("$work/pre.so"); names+=("untuned + shipped logs ($(grep -c 'pre-tuned (' "$work/pre.txt") workloads)")
fi
ort=0; [ -d out/ort/node_modules/onnxruntime-node ] && command -v node > /dev/null && [[ $MODEL == *.onnx ]] && ort=1
input=${MODEL%.onnx}.input.npy
declare -A times
for ((p = 0; p < P; p++)); do
  for i in "${!libs[@]}"; do
    v=$(build/temper run "${libs[$i]}" --threads "$T" --repeat "$R" | sed -n 's/^latency: median \([0-9.]*\) ms.*/\1/p')
    times[$i]="${times[$i]:-} $v"
  done
  if [ $ort = 1 ]; then
    v=$(NODE_PATH=out/ort/node_modules node bench/ort_peer.js "$MODEL" "$input" "$T" "$R" | sed -n 's/.*median \([0-9.]*\) ms/\1/p')
    times[ort]="${times[ort]:-} $v"
  fi
done
med() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
spread() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR]=$1} END {printf "%.2f–%.2f", v[1], v[NR]}'; }
last=$(( ${#MINUTES[@]} - 1 ))
ref=$(echo "${times[$last]}" | med)
ortm=0; [ $ort = 1 ] && ortm=$(echo "${times[ort]}" | med)
echo "| $(basename "$MODEL") at $T thread(s) | median ms | process medians | / ${MINUTES[$last]}-min build | / ONNX Runtime |"
echo "|---|---|---|---|---|"
for i in "${!libs[@]}"; do
  m=$(echo "${times[$i]}" | med)
  awk -v n="${names[$i]}" -v m="$m" -v s="$(echo "${times[$i]}" | spread)" -v r="$ref" -v o="$ortm" \
    'BEGIN { printf "| %s | %.2f | %s | %.3f | %s |\n", n, m, s, m / r, (o > 0 ? sprintf("%.3f", m / o) : "-") }'
done
[ $ort = 1 ] && echo "| ONNX Runtime | $ortm | $(echo "${times[ort]}" | spread) | $(awk -v a="$ortm" -v b="$ref" 'BEGIN{printf "%.3f", a/b}') | 1.000 |"
exit 0

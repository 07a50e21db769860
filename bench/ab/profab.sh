#!/usr/bin/env bash
# usage: [T=1 N=6 R=15 OUT=/tmp/prof] bench/ab/profab.sh MODEL VARIANT...
# Per-kernel side by side: rounds of `temper run MODEL --no-pretuned
# --profile`, one per variant, the order rotated every round. A variant is
# environment assignments and/or a config file, e.g. "VAR=1" or
# "cfg=variant.json" (passed as --config-file), a `temper run` option
# ("--no-fuse-depthwise") or "none". Prints each
# round's sum of kernel times in sequence, and each over the first
# variant's; the profiles stay in $OUT-v<j>-<round>.txt for perlayer.sh.
N=${N:-6}; R=${R:-15}; OUT=${OUT:-/tmp/prof}   # before common.sh, whose defaults are for processes
source "$(dirname "$0")/common.sh"
M=$1; shift; V=("$@"); K=${#V[@]}
[ -f "$M" ] && ((K >= 1)) || { echo "usage: profab.sh MODEL VARIANT..." >&2; exit 2; }
total() { sed -n 's/.*sum of kernel medians: \([0-9.]*\) ms in sequence.*/\1/p' "$1"; }
for ((i = 0; i < N; i++)); do
  for ((s = 0; s < K; s++)); do
    j=$(((s + i) % K)); envs=(); opts=()
    for w in ${V[$j]}; do
      case $w in cfg=*) opts+=(--config-file "${w#cfg=}") ;; --*) opts+=("$w") ;; none) ;; *) envs+=("$w") ;; esac
    done
    env "${envs[@]}" "$TEMPER" run "$M" --no-pretuned "${opts[@]}" --profile --repeat $R --threads $T > "$OUT-v$j-$i.txt" 2>&1
  done
  a=$(total "$OUT-v0-$i.txt"); line="round $i:"
  for ((j = 0; j < K; j++)); do
    b=$(total "$OUT-v$j-$i.txt")
    line="$line [${V[$j]}] $b ($(gawk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", (a > 0 ? b / a : 0)}'))"
  done
  echo "$line"
done

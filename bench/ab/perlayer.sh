#!/usr/bin/env bash
# usage: bench/ab/perlayer.sh OUT ROUNDS VARIANTS
# After profab.sh: per kernel of the model, the median time in sequence over
# the rounds for each variant, and its ratio to the first variant's; then
# the sums of those medians.
OUT=$1; N=$2; K=$3
[ -n "$K" ] || { echo "usage: perlayer.sh OUT ROUNDS VARIANTS" >&2; exit 2; }
for ((j = 0; j < K; j++)); do for ((i = 0; i < N; i++)); do
  gawk -v v=$j '$1 ~ /^[0-9]+$/ && $2 ~ /^fused/ {print v, $1, $(NF-4), $2}' "$OUT-v$j-$i.txt"
done; done | gawk -v K=$K '{k=$2; n[$1,k]++; x[$1,k,n[$1,k]]=$3; name[k]=$4} END {
  for (k = 0; k in name; k++) {
    line = sprintf("%3d %-44s", k, substr(name[k], 1, 44))
    for (v = 0; v < K; v++) {
      m = n[v,k]; delete a; for (i = 1; i <= m; i++) a[i] = x[v,k,i]; asort(a); med[v] = a[int((m+1)/2)]; tot[v] += med[v]
      line = line sprintf(" %.3f", med[v]) (v ? sprintf(" (%.3f)", med[0] > 0 ? med[v]/med[0] : 0) : "")
    }
    print line
  }
  line = "sum of medians"; for (v = 0; v < K; v++) line = line sprintf(" %.3f (%.3f)", tot[v], tot[0] > 0 ? tot[v]/tot[0] : 0); print line }'

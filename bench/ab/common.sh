# common.sh: sourced by the side-by-side tools in bench/ab. TEMPER is the
# temper binary (default: this checkout's build/temper), T the threads, N
# the rounds, R the runs per process.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TEMPER=${TEMPER:-$ROOT/build/temper}
T=${T:-1}; N=${N:-10}; R=${R:-20}
# the median latency `temper run` prints, in ms
latency() { sed -n 's/^latency: median \([0-9.]*\) ms.*/\1/p'; }
# pairs "a b" on stdin → medians of a and b, of b/a, its range and how often b was faster
summarize() {
  gawk '{a[NR]=$1; b[NR]=$2; r[NR]=$2/$1; f+=($2<$1)} END {
    n=asort(a); asort(b); asort(r)
    if (!n) { print "no measurements (did temper run fail?)"; exit 1 }
    printf "A median %.3f  B median %.3f  B/A median %.3f (range %.3f-%.3f, n=%d, B faster in %d)\n", a[int((n+1)/2)], b[int((n+1)/2)], r[int((n+1)/2)], r[1], r[n], n, f }'
}
# runs "A" and "B" N times each, alternating, the order swapped every pair
alternate() {
  for ((i = 0; i < N; i++)); do
    if ((i % 2)); then b=$($2); a=$($1); else a=$($1); b=$($2); fi
    echo "$a $b"
  done | summarize
}

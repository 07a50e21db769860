#!/usr/bin/env bash
# team.sh: tuners sharing one database — tasks finished per minute with 1 and
# 2 tuners on one PostgreSQL database (a throwaway server on this machine,
# fsync on), and one tuner on an SQLite file beside them for the database's
# share of the time. Each tuner: ResNet-18's 11 tasks, TRIALS trials each,
# one build job, one thread.
#   bench/team.sh [TRIALS]      (default 16)
set -euo pipefail
cd "$(dirname "$0")/.."
TRIALS=${1:-16}
T=build/temper
M=examples/resnet18.relay
work=$(mktemp -d /tmp/temper-team.XXXXXX)
trap 'rm -rf "$work"' EXIT
args="--trials $TRIALS --build-jobs 1 --threads 1 --top-k 0 --min-repeat-ms 5 --repeat 3"
run() {   # NAME DB N: N tuners at once on DB; prints wall seconds and tasks per minute
  local name=$1 db=$2 n=$3 t0 t1
  t0=$(date +%s.%N)
  for k in $(seq 1 "$n"); do $T tune $M --db "$db" $args --no-refine --seed $k > "$work/$name.$k.log" 2>&1 & done
  wait
  t1=$(date +%s.%N)
  local recs
  recs=$($T db export "$db" | wc -l)
  awk -v n="$n" -v a="$t0" -v b="$t1" -v r="$recs" -v name="$name" \
    'BEGIN { w = b - a; printf "%-22s %d tuner%s  %6.1f s  %5.2f tasks/min  %4d records  %6.1f ms wall per record\n", name, n, (n > 1 ? "s" : " "), w, 11 / w * 60, r, w / r * 1e3 * n }'
  grep -h "^time:" "$work/$name".*.log | sed "s/^/  $name: /"
}
export -f run
export T M args work
TEMPER_PG_FSYNC=1 tests/pg/with_pg.sh bash -c '
  psql -qc "CREATE DATABASE one" -c "CREATE DATABASE two"
  run sqlite "$work/one.db" 1
  run postgresql "${TEMPER_TEST_PG}one" 1
  run postgresql-2-tuners "${TEMPER_TEST_PG}two" 2
'

#!/usr/bin/env bash
# A shipped pre-tuned log (logs/, docs/tuning.md "Pre-tuned logs") from
# tuning databases: their records merged, the best of each class (template,
# channel blocks) per workload, target and thread count (`db export
# --best-only`), then the KEEP fastest classes of each (default 3) — what a
# build chooses among, and a ranking for the tuner's cost model, in a file
# small enough to commit. Lines in the export's order.
# usage: scripts/make_pretuned_log.sh OUT.jsonl DB...
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1; shift
KEEP=${KEEP:-3}
work=$(mktemp -d /tmp/temper_pretuned.XXXXXX); trap 'rm -rf "$work"' EXIT
build/temper db merge "$work/all.db" "$@" > /dev/null
build/temper db export "$work/all.db" --best-only -o "$work/best.jsonl" > /dev/null
/usr/bin/python3 - "$work/best.jsonl" "$KEEP" > "$out" <<'PY'
import json, sys
path, keep = sys.argv[1], int(sys.argv[2])
lines = open(path).read().splitlines()
groups = {}
for i, l in enumerate(lines):
    r = json.loads(l)
    t = r["target"]
    k = (r["workload"]["key"], t["triple"], t["cpu"], t["features"], r["threads"])
    groups.setdefault(k, []).append((r["median_s"], i))
kept = set()
for g in groups.values():
    kept.update(i for _, i in sorted(g)[:keep])
for i, l in enumerate(lines):
    if i in kept:
        print(l)
PY
n=$(/usr/bin/python3 -c 'import json,sys; print(len({json.loads(l)["workload"]["key"] for l in open(sys.argv[1])}))' "$out")
echo "$out: $(wc -l < "$out") records of $n workloads, $(du -h "$out" | cut -f1)"

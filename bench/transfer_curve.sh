#!/usr/bin/env bash
# Whole ResNet-50 with the learned search: how soon its estimated conv2d time
# comes within 10 % of the best known, tuned from an empty database and from
# one that holds a ResNet-18 tuning (imported as a log, as another machine's
# would be). The best known is the best record per workload over both runs.
# usage: bench/transfer_curve.sh [MINUTES_R50] [MINUTES_R18]   (defaults 12, 4)
#   FRESH_DB=FILE reuses an earlier fresh run instead of tuning one.
set -euo pipefail
cd "$(dirname "$0")/.."
M50=${1:-12}; M18=${2:-4}
work=out/transfer; mkdir -p "$work"
models=out/models
for m in resnet18 resnet50; do
  [ -f "$models/$m.onnx" ] || /usr/bin/python3 scripts/export_models.py "$models" "$m" > /dev/null
done
fresh=${FRESH_DB:-$work/fresh.db}
if [ -z "${FRESH_DB:-}" ]; then
  rm -f "$fresh"
  build/temper tune "$models/resnet50.onnx" --db "$fresh" --search xgb --minutes "$M50" --threads 1 --no-refine > "$work/fresh.txt"
fi
rm -f "$work/r18.db" "$work/transfer.db" "$work/r18.jsonl"
build/temper tune "$models/resnet18.onnx" --db "$work/r18.db" --search xgb --minutes "$M18" --threads 1 --no-refine > "$work/r18.txt"
build/temper db export "$work/r18.db" -o "$work/r18.jsonl"
build/temper db import "$work/transfer.db" "$work/r18.jsonl"
build/temper tune "$models/resnet50.onnx" --db "$work/transfer.db" --search xgb --minutes "$M50" --threads 1 --no-refine > "$work/transfer.txt"
# the best known: the best of both databases per workload
ref=$(/usr/bin/python3 - "$fresh" "$work/transfer.db" <<'EOF'
import sqlite3, subprocess, sys
counts = {}
for line in subprocess.run(["build/temper", "space", "out/models/resnet50.onnx"], capture_output=True, text=True, check=True).stdout.splitlines():
    p = line.split()
    if len(p) > 3 and p[1].startswith("conv2d_"):
        counts[p[1]] = int(p[3])
best = {}
for db in sys.argv[1:]:
    for key, med in sqlite3.connect(db).execute(
            "SELECT w.key, min(r.median_s) FROM records r JOIN workloads w ON w.id = r.workload_id"
            " WHERE r.status = 'ok' AND r.threads = 1 GROUP BY w.key"):
        if key in counts:
            best[key] = min(best.get(key, med), med)
print("%.2f" % (sum(counts[k] * best[k] for k in counts) * 1e3))
EOF
)
echo "best known estimated conv2d time (both runs): $ref ms"
echo "fresh:    $(/usr/bin/python3 bench/estimate_curve.py "$fresh" "$models/resnet50.onnx" "$ref")"
echo "transfer: $(/usr/bin/python3 bench/estimate_curve.py "$work/transfer.db" "$models/resnet50.onnx" "$ref")"

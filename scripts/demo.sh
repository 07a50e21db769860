#!/usr/bin/env bash
# The main job: set up, tune the bundled ResNet-18 briefly into an SQLite
# file, refine the choice in context, build a library from the database
# (checked against the reference) and one with the default configs, run
# both, and print the speed-up of the tuned build.
# usage: scripts/demo.sh [MODEL] [MINUTES]
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-examples/resnet18.relay}
MINUTES=${2:-1}
scripts/setup.sh
mkdir -p out
name=$(basename "$MODEL" .relay)
# the tune ends with temper refine: it chooses among the records by timing
# the whole model (stored for this model)
build/temper tune "$MODEL" --db out/tuning.db --minutes "$MINUTES" | grep -E '^estimated|^refin|choices? for'
# the library, checked against the reference interpreter before it is used
build/temper build "$MODEL" --db out/tuning.db -o "out/$name.so" --check
build/temper build "$MODEL" -o "out/$name-untuned.so" > /dev/null
# (the run's output is printed from a variable: a `tee /dev/stderr` reopened a
# redirected log and truncated it)
run=$(build/temper run "out/$name.so" --repeat 30)
echo "$run"
tuned=$(echo "$run" | sed -n 's/^latency: median \([0-9.]*\) ms.*/\1/p')
untuned=$(build/temper run "out/$name-untuned.so" --repeat 30 | sed -n 's/^latency: median \([0-9.]*\) ms.*/\1/p')
awk -v t="$tuned" -v u="$untuned" 'BEGIN { printf "tuned %.2f ms, untuned %.2f ms: speed-up %.2fx\n", t, u, u / t }'

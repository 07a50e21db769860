#!/usr/bin/env bash
# zoo_speed.sh [MODEL...]: untuned temper against ONNX Runtime, side by side,
# on torchvision networks (exported to ZOO_DIR by scripts/export_models.py
# when missing): one default build per model (--no-pretuned, for the thread
# count it runs at), then bench/ab/peerab.sh's alternating rounds (T threads,
# N rounds, R runs per process). One table row per model: the medians and
# the per-round ratio temper / ONNX Runtime (median, range).
set -uo pipefail
cd "$(dirname "$0")/.."
T=${T:-1}; N=${N:-4}; R=${R:-10}; export T N R
out=${ZOO_DIR:-out/zoo}; mkdir -p "$out"
models=${*:-resnet18 resnext50_32x4d wide_resnet50_2 densenet121 googlenet inception_v3 squeezenet1_1
  shufflenet_v2_x1_0 mobilenet_v3_large mnasnet1_0 efficientnet_b0 efficientnet_v2_s regnet_x_1_6gf
  regnet_y_1_6gf convnext_tiny vgg16 alexnet}
echo "| model | threads | temper untuned ms | ONNX Runtime ms | temper / ONNX Runtime (range) |"
echo "|---|---|---|---|---|"
for m in $models; do
  [ -f "$out/$m.onnx" ] || /usr/bin/python3 scripts/export_models.py "$out" "$m" > /dev/null 2>&1 ||
    { echo "| $m | $T | export failed | | |"; continue; }
  build/temper build "$out/$m.onnx" --no-pretuned --threads "$T" -o "$out/$m-t$T.so" > /dev/null 2>&1 ||
    { echo "| $m | $T | build failed | | |"; continue; }
  s=$(bench/ab/peerab.sh "$out/$m.onnx" "$out/$m.input.npy" "$out/$m-t$T.so" 2>/dev/null | sed -n 's/^A median \([0-9.]*\)  B median \([0-9.]*\)  B\/A median \([0-9.]*\) (range \([0-9.-]*\),.*/\2 \1 \3 \4/p')
  [ -n "$s" ] || { echo "| $m | $T | run failed | | |"; continue; }
  set -- $s; echo "| $m | $T | $1 | $2 | $3 ($4) |"
done
